package admin_test

// The console's key pages over HTTP: pause and resume a key (one with
// '/', ':' and '#' in it) and all delivery, a key's live messages paged,
// and cancel with its confirmation; each action needs its CSRF field.

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/internal/enginetest"
)

func TestConsoleKeyPauseResume(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	enqueueN(t, e, odd, 2)
	b := newBrowser(t, e, admin.Options{})
	require.NoError(t, e.PauseKey(odd, timeIn(0)))
	p := b.get("keys").html(t, http.StatusOK, "keys")
	assert.Contains(t, p.body, "<code>"+html.EscapeString(odd)+"</code>")
	assert.Contains(t, p.body, `class="badge paused"`)
	assert.Contains(t, p.body, "until resumed")
	assert.Contains(t, p.body, "messages?key="+url.QueryEscape(odd))
	tok := p.csrf(t)

	b.post("keys/resume", url.Values{"key": {odd}}, nil).html(t, http.StatusForbidden, "no CSRF field")
	require.True(t, enginetest.KeyPaused(e, odd))
	r := b.post("keys/resume", url.Values{"csrf": {tok}, "key": {odd}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	assert.Equal(t, "../keys?done=resumed", r.header.Get("Location"))
	assert.False(t, enginetest.KeyPaused(e, odd))

	b.post("keys/pause", url.Values{"csrf": {tok}, "key": {odd}, "until": {"soon"}}, nil).html(t, http.StatusBadRequest, "a bad until")
	b.post("keys/pause", url.Values{"csrf": {tok}, "until": {"1h"}}, nil).html(t, http.StatusBadRequest, "no key")
	r = b.post("keys/pause", url.Values{"csrf": {tok}, "key": {odd}, "until": {"1h"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	assert.True(t, enginetest.KeyPaused(e, odd))
	p = b.get("keys?done=paused").html(t, http.StatusOK, "after pause")
	assert.Contains(t, p.body, "Paused: the key")
	assert.Regexp(t, `until \d\d:\d\d:\d\d`, p.body, "a timed pause shows its end")
}

func TestConsolePauseAllDelivery(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	b := newBrowser(t, e, admin.Options{})
	p := b.get("").html(t, http.StatusOK, "overview")
	assert.Contains(t, p.body, `id="pause-all"`)
	tok := p.csrf(t)
	r := b.post("pause", url.Values{"csrf": {tok}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	assert.Equal(t, "./?done=paused-all", r.header.Get("Location"))
	assert.True(t, e.Stats().DeliveryPaused)
	p = b.get("?done=paused-all").html(t, http.StatusOK, "paused")
	assert.Contains(t, p.body, `id="resume-all"`)
	assert.Contains(t, p.body, "All delivery is paused")
	b.post("resume", url.Values{}, nil).html(t, http.StatusForbidden, "no CSRF field")
	require.True(t, e.Stats().DeliveryPaused)
	require.Equal(t, http.StatusSeeOther, b.post("resume", url.Values{"csrf": {tok}}, nil).status)
	assert.False(t, e.Stats().DeliveryPaused)
	b.post("pause", url.Values{"csrf": {tok}, "until": {"-5m"}}, nil).html(t, http.StatusBadRequest, "a bad until")
}

func TestConsoleMessagesAndCancel(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	ids := enqueueN(t, e, odd, 60)
	enqueueN(t, e, "other", 2)
	b := newBrowser(t, e, admin.Options{})
	list := "messages?" + url.Values{"key": {odd}}.Encode()
	p := b.get(list).html(t, http.StatusOK, "messages")
	assert.Equal(t, 50, strings.Count(p.body, `<tr data-id=`), "one console page")
	assert.Contains(t, p.body, `id="next"`)
	assert.NotContains(t, p.body, ">other-0<")
	next := fmt.Sprintf("messages?after=%d&amp;key=%s", ids[49], url.QueryEscape(odd))
	assert.Contains(t, p.body, next)
	p = b.get(html.UnescapeString(next)).html(t, http.StatusOK, "second page")
	assert.Equal(t, 10, strings.Count(p.body, `<tr data-id=`))
	assert.Contains(t, p.body, "first page")
	b.get("messages?state=dead").html(t, http.StatusBadRequest, "dead is not live")

	// Cancel: the first POST asks to confirm, the second cancels.
	tok := p.csrf(t)
	action := fmt.Sprintf("messages/%d/cancel", ids[55])
	back := url.Values{"key": {odd}}.Encode()
	b.post(action, url.Values{"back": {back}}, nil).html(t, http.StatusForbidden, "no CSRF field")
	p = b.post(action, url.Values{"csrf": {tok}, "back": {back}}, nil).html(t, http.StatusOK, "confirm")
	assert.Contains(t, p.body, `id="confirm-cancel"`)
	assert.Contains(t, p.body, `name="confirm" value="yes"`)
	_, err := e.Get(ids[55])
	require.NoError(t, err, "not cancelled before the confirmation")
	r := b.post(action, url.Values{"csrf": {tok}, "back": {back}, "confirm": {"yes"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	assert.Equal(t, "../../messages?done=cancelled&key="+url.QueryEscape(odd), r.header.Get("Location"))
	_, err = e.Get(ids[55])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	p = b.get("messages?done=cancelled&key="+url.QueryEscape(odd)).html(t, http.StatusOK, "after cancel")
	assert.Contains(t, p.body, "Cancelled: the message is gone")
	b.post(action, url.Values{"csrf": {tok}, "confirm": {"yes"}}, nil).html(t, http.StatusNotFound, "cancel twice")
}
