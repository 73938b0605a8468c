package consolebrowser_test

// The dead-letter list's bulk actions in a real browser (see
// console_browser_test.go): a selected row redriven behind its
// confirmation, and all matching redriven while another dead letter of
// the same filter arrives between the confirmation and the click, which
// the action leaves alone.

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/enginetest"
)

func TestConsoleBulkRedriveInBrowser(t *testing.T) {
	exe := chromium(t)
	e := enginetest.Open(t, "", ringwal.Options{})
	poison := consoleFixture(t, e)
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{}))
	t.Cleanup(srv.Close)
	base := srv.URL + "/"
	bctx, run := newChrome(t, exe, 50*time.Second, chromedp.WindowSize(1280, 900))
	textOf := pageText(t, bctx)

	// Select one poison row and redrive it: the confirmation states the
	// count, the action redrives that one only.
	box := fmt.Sprintf(`#dead-letters input[name="id"][value="%d"]`, poison[0])
	run("select a row",
		chromedp.Navigate(base+"dead-letters"),
		chromedp.WaitVisible(chromedp.CSS(box)),
		chromedp.Click(chromedp.CSS(box)),
		chromedp.Click(chromedp.CSS(`#redrive-selected`)),
		chromedp.WaitVisible(chromedp.CSS(`#bulk-confirm`)))
	assert.Equal(t, "1", textOf(`#bulk-count`))
	run("confirm", chromedp.Click(chromedp.CSS(`#bulk-confirm`)), chromedp.WaitVisible(chromedp.CSS(`#bulk-done`)))
	assert.Contains(t, textOf(`#bulk-done`), "Redrove 1 dead letter.")
	info, err := e.Get(poison[0])
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
	d, err := e.DeadLetter(poison[1])
	require.NoError(t, err, "the other poison one stays dead")
	assert.Equal(t, poison[1], d.ID)

	// All matching a key: the list says how many, the confirmation
	// counts them; one more of the key dies before the click, and the
	// redrive takes the three counted, not it.
	run("filter by key",
		chromedp.Navigate(base+"dead-letters?key=api.example.com"),
		chromedp.WaitVisible(chromedp.CSS(`#redrive-all`)))
	assert.Contains(t, textOf(`#redrive-all`), "Redrive all 3 matching")
	run("all matching", chromedp.Click(chromedp.CSS(`#redrive-all`)), chromedp.WaitVisible(chromedp.CSS(`#bulk-confirm`)))
	assert.Equal(t, "3", textOf(`#bulk-count`))
	late, err := e.Queue("late").Enqueue(context.Background(), ringwal.Message{Key: "api.example.com"})
	require.NoError(t, err)
	ld, ok := e.Queue("late").TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(ld.Lease, classify.Mark(errors.New("HTTP 422"), classify.Permanent)))

	run("confirm all", chromedp.Click(chromedp.CSS(`#bulk-confirm`)), chromedp.WaitVisible(chromedp.CSS(`#bulk-done`)))
	assert.Contains(t, textOf(`#bulk-done`), "Redrove 3 dead letters.")
	left, err := e.DeadLetters(dlq.Query{Key: "api.example.com"})
	require.NoError(t, err)
	require.Len(t, left, 1)
	assert.Equal(t, late, left[0].ID, "the one that died after the count stays")
}

// TestConsoleSearchInBrowser: the search box finds dead letters by what
// their error says, and "all N matching" redrives exactly the search's
// matches (checked through the Go API). RINGWAL_UPDATE_SCREENSHOT=1 writes
// the result page to docs/console-search.png.
func TestConsoleSearchInBrowser(t *testing.T) {
	exe := chromium(t)
	e := enginetest.Open(t, "", ringwal.Options{})
	consoleFixture(t, e)
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{}))
	t.Cleanup(srv.Close)
	bctx, run := newChrome(t, exe, 50*time.Second, chromedp.WindowSize(1280, 800))

	run("search",
		chromedp.Navigate(srv.URL+"/dead-letters"),
		chromedp.WaitVisible(chromedp.CSS(`#search`)),
		chromedp.SendKeys(chromedp.CSS(`#search`), "CURRENCY missing"),
		chromedp.Submit(chromedp.CSS(`#search`)),
		// The filtered page's own link: the unfiltered one has it too.
		chromedp.WaitVisible(chromedp.CSS(`#redrive-all[href*="text="]`)))
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#dead-letters tbody tr").length`))
	require.NoError(t, err)
	assert.Equal(t, 3, rows, "the three orders whose error says currency missing, without regard to case")
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	if os.Getenv("RINGWAL_UPDATE_SCREENSHOT") != "" {
		out := filepath.Join("..", "..", "..", "docs", "console-search.png")
		require.NoError(t, os.WriteFile(out, png, 0o644))
		t.Logf("wrote %s", out)
	}

	run("all matching", chromedp.Click(chromedp.CSS(`#redrive-all`)), chromedp.WaitVisible(chromedp.CSS(`#bulk-confirm`)))
	assert.Equal(t, "3", pageText(t, bctx)(`#bulk-count`))
	run("confirm", chromedp.Click(chromedp.CSS(`#bulk-confirm`)), chromedp.WaitVisible(chromedp.CSS(`#bulk-done`)))
	left, err := e.DeadLetters(dlq.Query{Text: "currency missing"})
	require.NoError(t, err)
	assert.Empty(t, left, "every match redriven")
	all, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	assert.Len(t, all, 4, "the other dead letters stay")
}
