package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
)

// enqueueKeys enqueues one message per key and returns their IDs.
func enqueueKeys(t *testing.T, e *ringwal.Engine, keys ...string) []ringwal.ID {
	t.Helper()
	var ids []ringwal.ID
	for _, k := range keys {
		id, err := e.Enqueue(context.Background(), ringwal.Message{Key: k, Payload: []byte("job " + k)})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

// The live messages list offers per-row selection; the selected rows'
// confirmation states their count and cancels exactly those still live.
func TestConsoleCancelSelected(t *testing.T) {
	e, _, _ := adminEngine(t, ringwal.Options{})
	ids := enqueueKeys(t, e, "a", "a", "b", "b")
	b := newBrowser(t, e, admin.Options{})

	p := b.get("messages").html(t, http.StatusOK, "list")
	assert.Contains(t, p.body, fmt.Sprintf(`name="id" value="%d" form="select"`, ids[0]))
	assert.Contains(t, p.body, `id="cancel-selected"`)
	assert.Contains(t, p.body, "Cancel all 4 matching")

	p = b.get(fmt.Sprintf("cancel-messages?id=%d&id=%d&back=key%%3Da", ids[0], ids[2])).html(t, http.StatusOK, "confirmation")
	assert.Contains(t, p.body, `<strong id="cancel-count">2</strong>`)
	assert.Contains(t, p.body, "cannot be undone")
	form := url.Values{"csrf": {p.csrf(t)}, "id": {fmt.Sprint(ids[0]), fmt.Sprint(ids[2])}, "expect": {"2"}, "back": {"key=a"}}

	b.post("cancel-messages", url.Values{"id": {fmt.Sprint(ids[0])}, "expect": {"1"}}, nil).html(t, http.StatusForbidden, "no CSRF field")

	// One of them went meanwhile: the count changed, nothing is done.
	require.NoError(t, e.Cancel(ids[2]))
	p = b.post("cancel-messages", form, nil).html(t, http.StatusOK, "a stale count")
	assert.Contains(t, p.body, "changed from 2 to 1")
	_, err := e.Get(ids[0])
	require.NoError(t, err, "nothing cancelled on a stale count")

	form.Set("expect", "1")
	p = b.post("cancel-messages", form, nil).html(t, http.StatusOK, "done")
	assert.Contains(t, p.body, "Cancelled 1 message.")
	assert.Contains(t, p.body, `href="./messages?key=a"`, "back to the list it came from")
	_, err = e.Get(ids[0])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	for _, id := range []ringwal.ID{ids[1], ids[3]} {
		_, err := e.Get(id)
		assert.NoError(t, err, "message %d was not selected", id)
	}

	b.get("cancel-messages").html(t, http.StatusBadRequest, "nothing selected")
	b.get(fmt.Sprintf("cancel-messages?id=%d&all=true", ids[1])).html(t, http.StatusBadRequest, "both")
	b.get("cancel-messages?id=x").html(t, http.StatusBadRequest, "not an ID")
}

// All matching: the confirmation counts with the engine's mark, and the
// cancel takes exactly those counted, not one enqueued after.
func TestConsoleCancelAllMatching(t *testing.T) {
	e, _, _ := adminEngine(t, ringwal.Options{})
	enqueueKeys(t, e, "a", "a", "a", "b")
	b := newBrowser(t, e, admin.Options{})

	p := b.get("messages?key=a&limit=2").html(t, http.StatusOK, "a page of the list")
	assert.Contains(t, p.body, "Cancel all 3 matching", "the count is of every page")
	assert.Contains(t, p.body, `href="./cancel-messages?all=true&amp;key=a"`, "without the page's place")

	p = b.get("cancel-messages?all=true&key=a").html(t, http.StatusOK, "confirmation")
	assert.Contains(t, p.body, `<strong id="cancel-count">3</strong>`)
	form := url.Values{"csrf": {p.csrf(t)}, "all": {"true"}, "key": {"a"},
		"expect": {"3"}, "through": {hiddenValue(t, p.body, "through")}}
	later := enqueueKeys(t, e, "a")

	p = b.post("cancel-messages", form, nil).html(t, http.StatusOK, "done")
	assert.Contains(t, p.body, "Cancelled 3 messages.")
	var left []ringwal.ID
	for in := range e.Messages(ringwal.Filter{}) {
		left = append(left, in.ID)
	}
	require.Len(t, left, 2, "the b message and the later a message stay")
	assert.Contains(t, left, later[0], "the one enqueued after the count stays")

	// A stale count confirms again.
	p = b.get("cancel-messages?all=true").html(t, http.StatusOK, "confirmation of every message")
	assert.Contains(t, p.body, "every live message")
	stale := url.Values{"csrf": {p.csrf(t)}, "all": {"true"}, "expect": {"2"}, "through": {hiddenValue(t, p.body, "through")}}
	require.NoError(t, e.Cancel(later[0]))
	p = b.post("cancel-messages", stale, nil).html(t, http.StatusOK, "a stale count")
	assert.Contains(t, p.body, "changed from 2 to 1")
	n, _, err := e.CountMessages(ringwal.Filter{})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "nothing cancelled on a stale count")

	b.get("cancel-messages?all=true&queue=_default").html(t, http.StatusBadRequest, "the default queue alone")
	b.get("cancel-messages?all=true&state=gone").html(t, http.StatusBadRequest, "an unknown state")
	form.Del("through")
	b.post("cancel-messages", form, nil).html(t, http.StatusBadRequest, "no mark")
}
