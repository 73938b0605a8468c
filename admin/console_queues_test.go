package admin_test

// The console's queues: the queue list (names escaped, counts, links),
// pause, resume and delete forms behind the CSRF token, and the queue
// filter of the message and dead-letter pages.

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// htmlQueue is a valid queue name that is HTML: the console must show it
// as text.
const htmlQueue = `<b>"q"</b>&x`

func TestConsoleQueues(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	queuesFixture(t, e, fake)
	require.NoError(t, e.DeclareQueue(htmlQueue, ringwal.QueueOptions{Topics: []string{"<i>t</i>"}, MaxMessages: 5}))
	b := newBrowser(t, e, admin.Options{})

	p := b.get("queues").html(t, http.StatusOK, "queues")
	assert.NotContains(t, p.body, htmlQueue, "a queue name is escaped")
	assert.NotContains(t, p.body, "<i>t</i>", "a topic is escaped")
	assert.Contains(t, p.body, html.EscapeString("<i>t</i>"))
	assert.Contains(t, p.body, "messages?queue="+url.QueryEscape(htmlQueue))
	assert.Contains(t, p.body, `data-queue="_default"`)
	assert.Contains(t, p.body, "dead-letters?queue="+url.QueryEscape(slashQueue))
	assert.Contains(t, p.body, "cap 5")
	tok := p.csrf(t)

	// Pause a queue until resumed; a form without the CSRF token, or for
	// an unknown queue, does nothing.
	b.post("queues/pause", url.Values{"queue": {"emails"}}, nil).html(t, http.StatusForbidden, "no CSRF field")
	b.post("queues/pause", url.Values{"csrf": {tok}, "queue": {"typo"}}, nil).html(t, http.StatusNotFound, "unknown")
	b.post("queues/pause", url.Values{"csrf": {tok}}, nil).html(t, http.StatusBadRequest, "no queue")
	b.post("queues/pause", url.Values{"csrf": {tok}, "queue": {"emails"}, "until": {"soon"}}, nil).html(t, http.StatusBadRequest, "bad until")
	_, declared := enginetest.QueueInfo(e, "typo")
	assert.False(t, declared)
	r := b.post("queues/pause", url.Values{"csrf": {tok}, "queue": {"emails"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	assert.Equal(t, "../queues?done=queue-paused", r.header.Get("Location"))
	in, _ := enginetest.QueueInfo(e, "emails")
	assert.True(t, in.Paused)
	p = b.get("queues?done=queue-paused").html(t, http.StatusOK, "paused")
	assert.Contains(t, p.body, "Paused: the queue")
	assert.Contains(t, p.body, `class="badge paused"`)

	// The default queue for a while, by its admin name.
	r = b.post("queues/pause", url.Values{"csrf": {tok}, "queue": {admin.DefaultQueue}, "until": {"1h"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	in, _ = enginetest.QueueInfo(e, "")
	assert.True(t, in.Paused)
	assert.False(t, in.PausedUntil.IsZero())
	assert.Regexp(t, `until \d\d:\d\d:\d\d`, b.get("queues").body, "a timed pause shows its end")
	for _, name := range []string{"emails", admin.DefaultQueue} {
		r = b.post("queues/resume", url.Values{"csrf": {tok}, "queue": {name}}, nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
	}
	in, _ = enginetest.QueueInfo(e, "emails")
	assert.False(t, in.Paused)

	// Delete: a confirmation first; refused with the counts while the
	// queue holds messages; the default queue never.
	p = b.post("queues/delete", url.Values{"csrf": {tok}, "queue": {htmlQueue}}, nil).html(t, http.StatusOK, "confirm")
	assert.Contains(t, p.body, `id="confirm-delete"`)
	assert.NotContains(t, p.body, htmlQueue)
	_, declared = enginetest.QueueInfo(e, htmlQueue)
	assert.True(t, declared, "not deleted before the confirmation")
	r = b.post("queues/delete", url.Values{"csrf": {tok}, "queue": {htmlQueue}, "confirm": {"yes"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	_, declared = enginetest.QueueInfo(e, htmlQueue)
	assert.False(t, declared)
	p = b.post("queues/delete", url.Values{"csrf": {tok}, "queue": {"emails"}, "confirm": {"yes"}}, nil).html(t, http.StatusConflict, "refused")
	assert.Contains(t, p.body, "3 live messages")
	b.post("queues/delete", url.Values{"csrf": {tok}, "queue": {admin.DefaultQueue}, "confirm": {"yes"}}, nil).html(t, http.StatusBadRequest, "default")
	b.post("queues/delete", url.Values{"csrf": {tok}, "queue": {admin.DefaultQueue}}, nil).html(t, http.StatusBadRequest, "no confirmation for the default queue")
	b.get("queues/delete").html(t, http.StatusMethodNotAllowed, "a GET deletes nothing")
	p = b.get("queues").html(t, http.StatusOK, "after")
	assert.NotContains(t, p.body, `value="emails"><button type="submit" class="danger delete"`, "no delete button for a queue with messages")
	assert.Contains(t, p.body, `value="empty"><button type="submit" class="danger delete"`, "a delete button for an empty one")

	// The overview lists the queues and links to the queue page.
	p = b.get("").html(t, http.StatusOK, "overview")
	assert.Contains(t, p.body, `id="all-queues"`)
	assert.Contains(t, p.body, "messages?queue=emails")
}

func TestConsoleQueueFilters(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	queuesFixture(t, e, fake)
	b := newBrowser(t, e, admin.Options{})
	rows := func(body string) int { return len(dataID.FindAllString(body, -1)) }

	p := b.get("messages").html(t, http.StatusOK, "every queue")
	assert.Equal(t, 5, rows(p.body))
	assert.Contains(t, p.body, `<option value="emails">emails</option>`, "the selector lists the queues")
	p = b.get("messages?queue=emails").html(t, http.StatusOK, "one queue")
	assert.Equal(t, 3, rows(p.body))
	assert.Contains(t, p.body, `<option value="emails" selected>`)
	assert.Contains(t, p.body, "in queue <code>emails</code>")
	p = b.get("messages?queue=_default").html(t, http.StatusOK, "the default queue")
	assert.Equal(t, 2, rows(p.body))

	p = b.get("dead-letters?queue="+url.QueryEscape(slashQueue)).html(t, http.StatusOK, "dead letters of a queue")
	assert.Contains(t, p.body, "1 shown")
	assert.Contains(t, p.body, "purge?queue="+url.QueryEscape(slashQueue))
	p = b.get("dead-letters?queue=_default").html(t, http.StatusOK, "the default queue's dead letters")
	assert.Contains(t, p.body, "1 shown")
	assert.NotContains(t, p.body, "purge?", "no purge of the default queue alone")
	b.get("purge?queue=_default").html(t, http.StatusBadRequest, "no purge of the default queue alone")

	// The purge confirmation keeps the queue filter.
	p = b.get("purge?queue="+url.QueryEscape(slashQueue)).html(t, http.StatusOK, "confirm")
	assert.Contains(t, p.body, `name="queue" value="`+html.EscapeString(slashQueue)+`"`)
}

// dataID matches a row of the messages table.
var dataID = regexp.MustCompile(`<tr data-id="\d+">`)

// The queue actions go through the console's defences: another origin,
// a forged or missing CSRF token, no session when a token is set.
func TestConsoleQueueActionsDefended(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	queuesFixture(t, e, fake)
	b := newBrowser(t, e, admin.Options{})
	tok := b.get("queues").html(t, http.StatusOK, "queues").csrf(t)
	for _, action := range []string{"queues/pause", "queues/resume", "queues/delete"} {
		form := url.Values{"csrf": {tok}, "queue": {"empty"}, "confirm": {"yes"}}
		b.post(action, form, http.Header{"Origin": {"https://evil.example"}}).html(t, http.StatusForbidden, action+" cross-origin")
		b.post(action, form, http.Header{"Sec-Fetch-Site": {"cross-site"}}).html(t, http.StatusForbidden, action+" cross-site")
		form.Set("csrf", "forged")
		b.post(action, form, nil).html(t, http.StatusForbidden, action+" forged CSRF")
	}
	in, ok := enginetest.QueueInfo(e, "empty")
	require.True(t, ok, "not deleted")
	assert.False(t, in.Paused, "not paused")

	guarded := newBrowser(t, e, admin.Options{Token: "s3cret-s3cret"})
	guarded.get("queues").html(t, http.StatusUnauthorized, "the sign-in page")
	guarded.post("queues/delete", url.Values{"csrf": {tok}, "queue": {"empty"}, "confirm": {"yes"}}, nil).html(t, http.StatusUnauthorized, "no session")
	_, ok = enginetest.QueueInfo(e, "empty")
	assert.True(t, ok, "not deleted")
}
