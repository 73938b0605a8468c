package admin_test

// Tests of the web console over HTTP, without a browser: its pages, its
// forms, and its defences (CSRF token, Origin, admin token and sign-in,
// bounded sizes, HTML error pages). cmd/ringwal/consolebrowser drives it in
// a real browser.

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

// browser is an HTTP client with a cookie jar that does not follow
// redirects, against a console mounted under /admin.
type browser struct {
	t    *testing.T
	base string // the console's root, ending in /
	hc   *http.Client
}

func newBrowser(t *testing.T, e *ringwal.Engine, o admin.Options) browser {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", admin.NewHandler(e, o)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return browser{t: t, base: srv.URL + "/admin/", hc: hc}
}

type page struct {
	status int
	header http.Header
	body   string
}

// get fetches path (relative to the console's root).
func (b browser) get(path string) page {
	b.t.Helper()
	return b.send("GET", path, nil, nil)
}

// post sends form to path, as the console's pages do (same origin).
func (b browser) post(path string, form url.Values, hdr http.Header) page {
	b.t.Helper()
	if hdr == nil {
		hdr = http.Header{"Origin": {strings.TrimSuffix(strings.TrimSuffix(b.base, "/admin/"), "/")}}
	}
	return b.send("POST", path, strings.NewReader(form.Encode()), hdr)
}

func (b browser) send(method, path string, body io.Reader, hdr http.Header) page {
	b.t.Helper()
	req, err := http.NewRequest(method, b.base+path, body)
	require.NoError(b.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := b.hc.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return page{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

// html checks the status and that the answer is an HTML page without a
// stack.
func (p page) html(t *testing.T, status int, what string) page {
	t.Helper()
	require.Equal(t, status, p.status, "%s: %s", what, p.body)
	assert.Equal(t, "text/html; charset=utf-8", p.header.Get("Content-Type"), what)
	assert.Contains(t, p.header.Get("Content-Security-Policy"), "default-src 'none'", what)
	assert.NotContains(t, p.body, "goroutine", what)
	return p
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF field of the page's forms.
func (p page) csrf(t *testing.T) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	require.NotNil(t, m, "no CSRF field in %s", p.body)
	return m[1]
}

func TestConsolePages(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	b := newBrowser(t, e, admin.Options{})

	p := b.get("").html(t, http.StatusOK, "overview")
	for _, want := range []string{"Overview", "dead letters", `id="live"`, "Rates, last minute", "static/console.js", "permanent", "poison"} {
		assert.Contains(t, p.body, want)
	}
	assert.Contains(t, b.get("static/console.css").header.Get("Content-Type"), "text/css")
	assert.Contains(t, b.get("static/console.js").header.Get("Content-Type"), "javascript")
	b.get("static/nope.css").html(t, http.StatusNotFound, "unknown asset")

	p = b.get("keys").html(t, http.StatusOK, "keys")
	assert.Regexp(t, `<code>a</code>[\s\S]*?dead-letters\?key=a">3</a>`, p.body)
	assert.Regexp(t, `<code>b</code>[\s\S]*?dead-letters\?key=b">2</a>`, p.body)

	p = b.get("dead-letters?category=poison&key=&since=&reviewed=").html(t, http.StatusOK, "filtered list")
	for _, id := range ids[3:] {
		assert.Contains(t, p.body, fmt.Sprintf(`href="./dead-letters/%d"`, id))
	}
	assert.NotContains(t, p.body, fmt.Sprintf(`href="./dead-letters/%d"`, ids[0]))
	assert.Contains(t, p.body, `value="poison" checked`)

	p = b.get("dead-letters?limit=2").html(t, http.StatusOK, "first page")
	assert.Contains(t, p.body, fmt.Sprintf("dead-letters?after=%d&amp;limit=2", ids[1]))
	p = b.get("dead-letters?since=yesterday").html(t, http.StatusBadRequest, "a bad filter")
	assert.Contains(t, p.body, "neither an RFC 3339 time")

	p = b.get(fmt.Sprintf("dead-letters/%d", ids[3])).html(t, http.StatusOK, "detail")
	for _, want := range []string{"poison", "handler panicked", `id="payload">m3<`, "Failure history", `action="../dead-letters/`} {
		assert.Contains(t, p.body, want)
	}
	b.get("dead-letters/999999").html(t, http.StatusNotFound, "unknown ID")
	b.get("dead-letters/x").html(t, http.StatusBadRequest, "bad ID")
}

func TestConsoleReviewRedrive(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	b := newBrowser(t, e, admin.Options{})
	detail := fmt.Sprintf("dead-letters/%d", ids[0])
	tok := b.get(detail).html(t, http.StatusOK, "detail").csrf(t)

	p := b.post(detail+"/review", url.Values{"csrf": {tok}, "note": {"bad <b>input</b>, told the team"}}, nil)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	assert.Equal(t, "../../"+detail+"?done=reviewed", p.header.Get("Location"), "relative, so it works under a prefix")
	p = b.get(detail+"?done=reviewed").html(t, http.StatusOK, "after review")
	assert.Contains(t, p.body, "Marked reviewed.")
	assert.Contains(t, p.body, "bad &lt;b&gt;input&lt;/b&gt;, told the team", "the note, escaped")
	ds, err := e.DeadLetters(dlq.Query{Key: "a", Limit: 1})
	require.NoError(t, err)
	assert.True(t, ds[0].Reviewed)

	p = b.post(detail+"/redrive", url.Values{"csrf": {tok}}, nil)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	p = b.get(detail+"?done=redriven").html(t, http.StatusOK, "after redrive")
	assert.Contains(t, p.body, "not a dead letter now")
	info, err := e.Get(ids[0])
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
	b.post(detail+"/redrive", url.Values{"csrf": {tok}}, nil).html(t, http.StatusNotFound, "redrive twice")
}

// TestConsoleCSRF: a POST needs the CSRF field that matches its cookie,
// and a same-origin Origin; a GET changes nothing.
func TestConsoleCSRF(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	b := newBrowser(t, e, admin.Options{})
	redrive := fmt.Sprintf("dead-letters/%d/redrive", ids[0])
	tok := b.get(fmt.Sprintf("dead-letters/%d", ids[1])).csrf(t)

	b.post(redrive, url.Values{}, nil).html(t, http.StatusForbidden, "no CSRF field")
	b.post(redrive, url.Values{"csrf": {"forged"}}, nil).html(t, http.StatusForbidden, "a wrong CSRF field")
	b.post(redrive, url.Values{"csrf": {tok}}, http.Header{"Origin": {"https://evil.example"}}).html(t, http.StatusForbidden, "cross-origin")
	b.post(redrive, url.Values{"csrf": {tok}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}).html(t, http.StatusForbidden, "cross-site")
	other := newBrowser(t, e, admin.Options{}) // another session: its own cookie
	other.get(fmt.Sprintf("dead-letters/%d", ids[1]))
	other.post(redrive, url.Values{"csrf": {tok}}, nil).html(t, http.StatusForbidden, "another session's token")
	req := url.Values{"csrf": {tok}}.Encode()
	b.send("POST", redrive, strings.NewReader(req), http.Header{"Content-Type": {"text/plain"}}).html(t, http.StatusUnsupportedMediaType, "not a form")
	b.send("GET", redrive, nil, nil).html(t, http.StatusMethodNotAllowed, "GET an action")
	require.Equal(t, 5, e.Stats().Dead, "nothing redriven")

	require.Equal(t, http.StatusSeeOther, b.post(redrive, url.Values{"csrf": {tok}}, nil).status, "the right token")
	require.Equal(t, 4, e.Stats().Dead)
}

// TestConsoleToken: with a token, every page needs it (a bearer header or
// a session from the sign-in form); the login page and assets do not.
func TestConsoleToken(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	hclock := clock.NewFake(time.Now()) // the handler's: it ends the wrong token's penalty
	b := newBrowser(t, e, admin.Options{Token: "s3cret", Clock: hclock})
	detail := fmt.Sprintf("dead-letters/%d", ids[0])

	p := b.get(detail).html(t, http.StatusUnauthorized, "no session")
	assert.Contains(t, p.body, `type="password"`)
	assert.NotContains(t, p.body, `id="payload"`, "no payload before signing in")
	tok := p.csrf(t)
	b.post(detail+"/redrive", url.Values{"csrf": {tok}}, nil).html(t, http.StatusUnauthorized, "an action without a session")
	b.get("static/console.css")
	assert.Equal(t, http.StatusOK, b.get("static/console.css").status, "assets are public")

	p = b.post("login", url.Values{"csrf": {tok}, "token": {"wrong"}, "next": {"/" + detail}}, nil).html(t, http.StatusUnauthorized, "a wrong token")
	assert.Contains(t, p.body, "Wrong token.")
	p = b.post("login", url.Values{"csrf": {tok}, "token": {"s3cret"}, "next": {"/" + detail}}, nil).html(t, http.StatusTooManyRequests, "right at once after a wrong one")
	assert.Equal(t, "1", p.header.Get("Retry-After"))
	hclock.Advance(100 * time.Millisecond)
	b.post("login", url.Values{"token": {"s3cret"}}, nil).html(t, http.StatusForbidden, "sign-in without the CSRF field")
	p = b.post("login", url.Values{"csrf": {tok}, "token": {"s3cret"}, "next": {"/" + detail}}, nil)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	assert.Equal(t, "./"+detail, p.header.Get("Location"))
	assert.Contains(t, p.header.Get("Set-Cookie"), "HttpOnly")
	assert.Contains(t, p.header.Get("Set-Cookie"), "SameSite=Strict")

	p = b.get(detail).html(t, http.StatusOK, "signed in")
	assert.Contains(t, p.body, `id="payload">m0<`)
	assert.Contains(t, p.body, "Sign out")
	require.Equal(t, http.StatusSeeOther, b.post(detail+"/redrive", url.Values{"csrf": {tok}}, nil).status)

	next := b.post("login", url.Values{"csrf": {tok}, "token": {"s3cret"}, "next": {"//evil.example/x"}}, nil)
	assert.Equal(t, "./", next.header.Get("Location"), "no open redirect")

	require.Equal(t, http.StatusSeeOther, b.post("logout", url.Values{"csrf": {tok}}, nil).status)
	b.get("").html(t, http.StatusUnauthorized, "signed out")

	curl := newBrowser(t, e, admin.Options{Token: "s3cret"})
	curl.send("GET", "", nil, http.Header{"Authorization": {"Bearer s3cret"}}).html(t, http.StatusOK, "a bearer token")
	// The session cookie does not open the JSON API: that takes the bearer
	// token only.
	resp := b.send("GET", "api/stats", nil, nil)
	assert.Equal(t, http.StatusUnauthorized, resp.status)
}

func TestConsoleErrors(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	b := newBrowser(t, e, admin.Options{})
	tok := b.get(fmt.Sprintf("dead-letters/%d", ids[1])).csrf(t)

	b.get("nope").html(t, http.StatusNotFound, "unknown page")
	p := b.send("DELETE", "keys", nil, nil).html(t, http.StatusMethodNotAllowed, "DELETE")
	assert.Contains(t, p.header.Get("Allow"), "GET")
	b.get("dead-letters?key="+strings.Repeat("k", admin.MaxQuery)).html(t, http.StatusRequestURITooLong, "a long query")
	big := url.Values{"csrf": {tok}, "note": {strings.Repeat("n", admin.MaxForm)}}
	b.post(fmt.Sprintf("dead-letters/%d/review", ids[0]), big, nil).html(t, http.StatusRequestEntityTooLarge, "a large form")
	b.get("dead-letters?colour=red").html(t, http.StatusBadRequest, "an unknown parameter")

	require.NoError(t, e.Close())
	b.get("").html(t, http.StatusServiceUnavailable, "closed")
}

func TestConsolePurge(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	fiveDeadLetters(t, e, fake)
	b := newBrowser(t, e, admin.Options{})

	p := b.get("purge?key=a&after=1&limit=1").html(t, http.StatusOK, "confirmation")
	assert.Contains(t, p.body, `<strong id="purge-count">3</strong>`, "after and limit are not filters")
	tok := p.csrf(t)
	form := url.Values{"csrf": {tok}, "key": {"a"}, "expect": {"2"}}
	p = b.post("purge", form, nil).html(t, http.StatusOK, "a stale count")
	assert.Contains(t, p.body, "changed from 2 to 3")
	require.Equal(t, 5, e.Stats().Dead)

	form.Set("expect", "3")
	p = b.post("purge", form, nil).html(t, http.StatusOK, "purged")
	assert.Contains(t, p.body, "Deleted 3 dead letters.")
	require.Equal(t, 2, e.Stats().Dead)

	p = b.get("purge").html(t, http.StatusOK, "every dead letter")
	assert.Contains(t, p.body, "every dead letter")
	b.post("purge", url.Values{"csrf": {tok}, "expect": {"2"}}, nil).html(t, http.StatusBadRequest, "no filter, no all")
	b.post("purge", url.Values{"csrf": {tok}, "expect": {"2"}, "all": {"true"}}, nil).html(t, http.StatusOK, "all")
	require.Equal(t, 0, e.Stats().Dead)
}
