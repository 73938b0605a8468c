package consolebrowser_test

// The bulk actions added beside redrive and review, in a real browser (see
// console_browser_test.go): a selected dead letter purged, selected live
// messages cancelled, and all live messages matching a key cancelled while
// another of the key is enqueued between the confirmation and the click,
// which the cancel leaves alone.

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/internal/enginetest"
)

func TestConsolePurgeAndCancelInBrowser(t *testing.T) {
	exe := chromium(t)
	e := enginetest.Open(t, "", ringwal.Options{})
	poison := consoleFixture(t, e)
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{}))
	t.Cleanup(srv.Close)
	base := srv.URL + "/"
	bctx, run := newChrome(t, exe, 50*time.Second, chromedp.WindowSize(1280, 900))
	textOf := pageText(t, bctx)
	live := func(f ringwal.Filter) []ringwal.ID {
		var ids []ringwal.ID
		for in := range e.Messages(f) {
			ids = append(ids, in.ID)
		}
		return ids
	}

	// Purge one selected dead letter: the confirmation states the count,
	// the purge deletes that one only.
	box := fmt.Sprintf(`#dead-letters input[name="id"][value="%d"]`, poison[1])
	run("select a dead letter",
		chromedp.Navigate(base+"dead-letters"),
		chromedp.WaitVisible(chromedp.CSS(box)),
		chromedp.Click(chromedp.CSS(box)),
		chromedp.Click(chromedp.CSS(`#purge-selected`)),
		chromedp.WaitVisible(chromedp.CSS(`#bulk-confirm`)))
	assert.Equal(t, "1", textOf(`#bulk-count`))
	run("confirm the purge", chromedp.Click(chromedp.CSS(`#bulk-confirm`)), chromedp.WaitVisible(chromedp.CSS(`#bulk-done`)))
	assert.Contains(t, textOf(`#bulk-done`), "Purged 1 dead letter.")
	_, err := e.DeadLetter(poison[1])
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "purged")
	_, err = e.DeadLetter(poison[0])
	assert.NoError(t, err, "the other poison one stays")

	// Cancel two selected live messages.
	before := live(ringwal.Filter{})
	require.Len(t, before, 7)
	run("select two messages",
		chromedp.Navigate(base+"messages"),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-selected`)),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#messages input[name="id"][value="%d"]`, before[0]))),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#messages input[name="id"][value="%d"]`, before[3]))),
		chromedp.Click(chromedp.CSS(`#cancel-selected`)),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-confirm`)))
	assert.Equal(t, "2", textOf(`#cancel-count`))
	run("confirm the cancel", chromedp.Click(chromedp.CSS(`#cancel-confirm`)), chromedp.WaitVisible(chromedp.CSS(`#cancel-done`)))
	assert.Contains(t, textOf(`#cancel-done`), "Cancelled 2 messages.")
	assert.Equal(t, append(append([]ringwal.ID{}, before[1:3]...), before[4:]...), live(ringwal.Filter{}))

	// All matching a key: the list says how many, the confirmation counts
	// them; one more of the key is enqueued before the click, and the
	// cancel takes the five counted, not it.
	run("filter by key",
		chromedp.Navigate(base+"messages?key=api.example.com"),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-all`)))
	assert.Contains(t, textOf(`#cancel-all`), "Cancel all 5 matching")
	run("all matching", chromedp.Click(chromedp.CSS(`#cancel-all`)), chromedp.WaitVisible(chromedp.CSS(`#cancel-confirm`)))
	assert.Equal(t, "5", textOf(`#cancel-count`))
	late, err := e.Enqueue(context.Background(), ringwal.Message{Key: "api.example.com", Payload: []byte("late")})
	require.NoError(t, err)
	run("confirm all", chromedp.Click(chromedp.CSS(`#cancel-confirm`)), chromedp.WaitVisible(chromedp.CSS(`#cancel-done`)))
	assert.Contains(t, textOf(`#cancel-done`), "Cancelled 5 messages.")
	assert.Equal(t, []ringwal.ID{late}, live(ringwal.Filter{Key: "api.example.com"}), "the one enqueued after the count stays")
}
