package admin_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/wal"
)

// Names an older version logged (new names refuse them), keys and headers
// may hold characters that show as nothing or reverse the text after them.
const (
	oddQueue = "orders\u202ebackwards"
	oddSched = "nightly\u200b"
	oddKey   = "acct\u2066-1\u2069"
)

var oddRunes = []string{"\u202e", "\u200b", "\u2066", "\u2069", "\ufeff"}

// oddEngine opens a data directory whose log declares oddQueue and
// oddSched, with a dead letter of oddKey in oddQueue carrying odd headers
// and error text, and a live message.
func oddEngine(t *testing.T) *ringwal.Engine {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	_, err = l.Replay(func(*wal.Record) error { return nil })
	require.NoError(t, err)
	require.NoError(t, l.RequireFormat(2))
	for _, r := range []wal.Record{
		{Kind: wal.KindQueue, Queue: 1, Key: oddQueue, Time: 1},
		{Kind: wal.KindSchedule, Key: oddSched, Time: 1, Text: `{"spec":"@every 1h","message":{"Queue":"` + oddQueue + `"}}`},
	} {
		require.NoError(t, l.Append(&r))
	}
	require.NoError(t, l.Close())
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	ctx := context.Background()
	_, err = e.Enqueue(ctx, ringwal.Message{Queue: oddQueue, Key: oddKey, Payload: []byte("x"),
		Headers: map[string]string{"h\u200b": "v\u202e\ufeff"}})
	require.NoError(t, err)
	d, err := e.Queue(oddQueue).Dequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("refused by \u202eevil"), classify.Permanent)))
	_, err = e.Enqueue(ctx, ringwal.Message{Queue: oddQueue, Key: oddKey, Payload: []byte("y")})
	require.NoError(t, err)
	require.NoError(t, e.PauseKey(oddKey, time.Time{}))
	return e
}

var tags = regexp.MustCompile(`<[^>]*>`)

// shownText is what a page shows: its text without the tags (attribute
// values, which forms send back exactly, are not shown), references
// decoded.
func shownText(body string) string { return html.UnescapeString(tags.ReplaceAllString(body, " ")) }

// The console shows queue and schedule names, keys, header names and
// values and failure texts with the characters that do not show as
// themselves escaped (\u202e), on every page that names them, so that one
// name cannot pass for another; the forms still send the exact name.
func TestConsoleShowsInvisibleCharactersEscaped(t *testing.T) {
	e := oddEngine(t)
	b := newBrowser(t, e, admin.Options{})
	q := url.Values{"queue": {oddQueue}}.Encode()
	pages := []string{"", "queues", "queue?" + q, "schedules", "dead-letters", "dead-letters/1",
		"dead-letters?" + q, "messages?" + q, "messages?" + url.Values{"key": {oddKey}}.Encode(), "keys"}
	var tok string
	for _, path := range pages {
		p := b.get(path).html(t, http.StatusOK, path)
		if tok == "" {
			tok = p.csrf(t)
		}
		checkShown(t, path, p.body)
	}
	p := b.post("queues/delete", url.Values{"csrf": {tok}, "queue": {oddQueue}}, nil).html(t, http.StatusOK, "confirm")
	checkShown(t, "queues/delete", p.body)
	assert.Contains(t, p.body, `value="`+oddQueue+`"`, "the form sends the name as it is")
	p = b.post("schedules/remove", url.Values{"csrf": {tok}, "schedule": {oddSched}}, nil).html(t, http.StatusOK, "confirm")
	checkShown(t, "schedules/remove", p.body)
	r := b.post("schedules/remove", url.Values{"csrf": {tok}, "schedule": {oddSched}, "confirm": {"yes"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, "the exact name came back: %s", r.body)
	assert.Empty(t, e.Schedules())
}

func checkShown(t *testing.T, path, body string) {
	t.Helper()
	text := shownText(body)
	for _, raw := range oddRunes {
		assert.NotContains(t, text, raw, "%s shows %q raw", path, raw)
	}
	assert.Regexp(t, `\\u(202e|2066|200b)`, text, "%s shows the escape", path)
}

var (
	noteShown = regexp.MustCompile(`(?s)<dd class="note" id="note-text">(.*?)</dd>`)
	noteEdit  = regexp.MustCompile(`(?s)<textarea id="note"[^>]*>(.*?)</textarea>`)
	noteTitle = regexp.MustCompile(`<span class="yes" title="([^"]*)">`)
)

// A review note is operator text shown to other operators: the dead
// letter's page and the list's tooltip show it with the characters that do
// not show as themselves escaped, its lines kept, while the note's editor
// holds it exactly, so that updating a review does not save the escapes.
func TestConsoleShowsReviewNotesEscaped(t *testing.T) {
	e := oddEngine(t)
	const note = "refund \u202eevil\u200b\nsecond line"
	const shown = `refund \u202eevil\u200b` + "\nsecond line"
	require.NoError(t, e.MarkReviewed(1, note))
	b := newBrowser(t, e, admin.Options{})

	p := b.get("dead-letters/1").html(t, http.StatusOK, "dead letter")
	m := noteShown.FindStringSubmatch(p.body)
	require.NotNil(t, m, "no note shown in %s", p.body)
	assert.Equal(t, shown, html.UnescapeString(m[1]), "the note as shown")
	m = noteEdit.FindStringSubmatch(p.body)
	require.NotNil(t, m, "no note editor in %s", p.body)
	assert.Equal(t, note, html.UnescapeString(m[1]), "the editor holds the note as it is")

	p = b.get("dead-letters").html(t, http.StatusOK, "dead letters")
	m = noteTitle.FindStringSubmatch(p.body)
	require.NotNil(t, m, "no reviewed mark in %s", p.body)
	assert.Equal(t, shown, html.UnescapeString(m[1]), "the note as the tooltip shows it")
}
