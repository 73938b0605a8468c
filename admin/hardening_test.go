package admin_test

// Tests of the defences around the token: the Host check that stops DNS
// rebinding, the sign-in URL, sign-out revoking the session on the
// server, and the throttle on wrong tokens.

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/clock"
)

// hostRequest sends method path (relative to the handler's root) to h
// with the given Host and headers, from remote.
func hostRequest(h http.Handler, method, host, path, remote string, hdr http.Header, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
	req.Host = host
	req.RemoteAddr = remote
	for k, v := range hdr {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestNoTokenAnswersOnlyLoopbackHosts: without a token the handler
// answers only requests naming a loopback host or one of AllowedHosts,
// so that a page that rebinds its own name to 127.0.0.1 reads and does
// nothing.
func TestNoTokenAnswersOnlyLoopbackHosts(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	fiveDeadLetters(t, e, fake)
	open := admin.NewHandler(e, admin.Options{})
	listed := admin.NewHandler(e, admin.Options{AllowedHosts: []string{"ringwal-admin.internal", "Ops.Example:8443", "[fd00::7]"}})
	tokened := admin.NewHandler(e, admin.Options{Token: "a-token-of-sixteen+"})
	anyHost := admin.NewHandler(e, admin.Options{AllowedHosts: []string{"*"}})
	for _, tc := range []struct {
		h      http.Handler
		name   string
		host   string
		served bool
	}{
		{open, "rebound name", "evil.example", false},
		{open, "rebound name with the port", "evil.example:9464", false},
		{open, "loopback address", "127.0.0.1:9464", true},
		{open, "loopback address, no port", "127.0.0.1", true},
		{open, "other loopback address", "127.3.2.1:80", true},
		{open, "localhost", "localhost:9464", true},
		{open, "localhost, upper case", "LOCALHOST", true},
		{open, "localhost, trailing dot", "localhost.:9464", true},
		{open, "a subdomain of localhost", "console.localhost:9464", true},
		{open, "IPv6 loopback", "[::1]:9464", true},
		{open, "a name ending in localhost", "evillocalhost", false},
		{open, "localhost as a subdomain", "localhost.evil.example", false},
		{open, "a name that resolves to loopback", "127.0.0.1.nip.io", false},
		{open, "a LAN address", "192.168.1.20:9464", false},
		{open, "unspecified address", "0.0.0.0:9464", false},
		{open, "no Host", "", false},
		{listed, "an allowed name", "ringwal-admin.internal:8080", true},
		{listed, "an allowed name, other case and port", "OPS.example", true},
		{listed, "an allowed IPv6 address", "[FD00::7]:1", true},
		{listed, "loopback still", "127.0.0.1:9464", true},
		{listed, "a name not listed", "evil.example", false},
		{tokened, "any name when a token guards it", "evil.example", true},
		{anyHost, "any name with *", "evil.example", true},
	} {
		hdr := http.Header{"Authorization": {"Bearer a-token-of-sixteen+"}}
		api := hostRequest(tc.h, "GET", tc.host, "/api/dead-letters", "192.0.2.1:1", hdr, "")
		page := hostRequest(tc.h, "GET", tc.host, "/dead-letters", "192.0.2.1:1", hdr, "")
		if tc.served {
			assert.Equal(t, http.StatusOK, api.Code, "%s: %s", tc.name, api.Body)
			assert.Equal(t, http.StatusOK, page.Code, tc.name)
			continue
		}
		assert.Equal(t, http.StatusForbidden, api.Code, tc.name)
		assert.Contains(t, api.Body.String(), "AllowedHosts", "%s: the answer says what to do", tc.name)
		assert.NotContains(t, api.Body.String(), "m0", "%s: no payload", tc.name)
		assert.Equal(t, http.StatusForbidden, page.Code, tc.name)
		assert.Contains(t, page.Body.String(), "DNS rebinding", tc.name)
		assert.Equal(t, "text/html; charset=utf-8", page.Header().Get("Content-Type"), tc.name)
	}
	st, ok := admin.ReadAuthStats(open)
	require.True(t, ok)
	assert.EqualValues(t, 2*8, st.HostsRefused, "each refusal counted")
	_, ok = admin.ReadAuthStats(http.NotFoundHandler())
	assert.False(t, ok)
}

// TestRebindingPageCannotAct: what a rebinding page does through the
// operator's browser (same-origin in its eyes: Origin and Host agree) is
// refused, and nothing happens.
func TestRebindingPageCannotAct(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	fiveDeadLetters(t, e, fake)
	h := admin.NewHandler(e, admin.Options{})
	evil := "evil.example:9464"
	same := http.Header{"Origin": {"http://" + evil}, "Sec-Fetch-Site": {"same-origin"}, "Content-Type": {"application/json"}}
	for _, rq := range []struct{ method, path, body string }{
		{"GET", "/api/dead-letters", ""},
		{"POST", "/api/dead-letters/purge", `{"all": true}`},
		{"POST", "/api/pause", ""},
		{"GET", "/", ""},
		{"POST", "/pause", ""},
	} {
		w := hostRequest(h, rq.method, evil, rq.path, "127.0.0.1:5000", same, rq.body)
		assert.Equal(t, http.StatusForbidden, w.Code, "%s %s: %s", rq.method, rq.path, w.Body)
	}
	assert.Equal(t, 5, e.Stats().Dead, "nothing purged")
	assert.False(t, e.Stats().DeliveryPaused, "nothing paused")
	w := hostRequest(h, "POST", "127.0.0.1:9464", "/api/pause", "127.0.0.1:5000",
		http.Header{"Origin": {"http://127.0.0.1:9464"}}, "")
	assert.Equal(t, http.StatusOK, w.Code, "the same request under the real name works: %s", w.Body)
}

// TestSignInURL: a console page with ?token= signs in and redirects to the
// same page without the token; a wrong one is the login page, and counts.
func TestSignInURL(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	fiveDeadLetters(t, e, fake)
	hclock := clock.NewFake(time.Now())
	o := admin.Options{Token: "s3cret-s3cret-s3cret", Clock: hclock}
	b := newBrowser(t, e, o)

	p := b.get("dead-letters?category=poison&token=wrong")
	p.html(t, http.StatusUnauthorized, "a wrong token")
	assert.Contains(t, p.body, "Wrong token in the sign-in URL.")
	assert.NotContains(t, p.header.Get("Set-Cookie"), "ringwal_session")
	b.get("dead-letters?token=s3cret-s3cret-s3cret").html(t, http.StatusTooManyRequests, "the right one at once after a wrong one")
	hclock.Advance(100 * time.Millisecond)

	p = b.get("dead-letters?category=poison&token=s3cret-s3cret-s3cret")
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	assert.Equal(t, "./dead-letters?category=poison", p.header.Get("Location"), "the same page, without the token")
	assert.Equal(t, "no-referrer", p.header.Get("Referrer-Policy"))
	assert.Contains(t, p.header.Get("Set-Cookie"), "ringwal_session=")
	assert.Contains(t, p.header.Get("Set-Cookie"), "SameSite=Strict")
	b.get("dead-letters?category=poison").html(t, http.StatusOK, "signed in by the URL")

	root := b.get("?token=s3cret-s3cret-s3cret")
	require.Equal(t, http.StatusSeeOther, root.status)
	assert.Equal(t, "./", root.header.Get("Location"))
	login := b.get("login?token=s3cret-s3cret-s3cret")
	assert.Equal(t, "./", login.header.Get("Location"), "from the login page: to the overview")

	// Without a token there is nothing to sign in to: the parameter only
	// goes.
	plain := newBrowser(t, e, admin.Options{})
	p = plain.get("keys?token=whatever")
	require.Equal(t, http.StatusSeeOther, p.status)
	assert.Equal(t, "./keys", p.header.Get("Location"))
	assert.NotContains(t, p.header.Get("Set-Cookie"), "ringwal_session")
}

// TestSignOutRevokesSession: after sign-out a copy of the session cookie
// opens nothing.
func TestSignOutRevokesSession(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	fiveDeadLetters(t, e, fake)
	b := newBrowser(t, e, admin.Options{Token: "s3cret-s3cret-s3cret"})
	tok := b.get("login").csrf(t)
	p := b.post("login", url.Values{"csrf": {tok}, "token": {"s3cret-s3cret-s3cret"}}, nil)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	var session *http.Cookie
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		if c.Name == "ringwal_session" {
			session = c
		}
	}
	require.NotNil(t, session)
	copied := func() int {
		req, err := http.NewRequest("GET", b.base+"dead-letters", nil)
		require.NoError(t, err)
		req.AddCookie(&http.Cookie{Name: session.Name, Value: session.Value})
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, copied(), "the copy works while the session lives")

	b.get("").html(t, http.StatusOK, "signed in")
	require.Equal(t, http.StatusSeeOther, b.post("logout", url.Values{"csrf": {tok}}, nil).status)
	assert.Equal(t, http.StatusUnauthorized, copied(), "the copy is refused after sign-out")
	b.get("").html(t, http.StatusUnauthorized, "signed out")

	// Signing in again is a new session, unaffected.
	require.Equal(t, http.StatusSeeOther, b.post("login", url.Values{"csrf": {tok}, "token": {"s3cret-s3cret-s3cret"}}, nil).status)
	b.get("").html(t, http.StatusOK, "signed in again")
}

// TestWrongTokensThrottled: each wrong token puts its client in a penalty
// (100ms, doubling to 2s) during which its tokens are not checked (429
// with Retry-After); other clients, and requests without a token, are
// not held back; a right token clears the record; all of it counted.
func TestWrongTokensThrottled(t *testing.T) {
	e, _, _ := adminEngine(t, ringwal.Options{})
	hclock := clock.NewFake(time.Now())
	h := admin.NewHandler(e, admin.Options{Token: "s3cret-s3cret-s3cret", Clock: hclock})
	const attacker, other = "203.0.113.9:4000", "198.51.100.7:4000"
	try := func(remote, tok string) *httptest.ResponseRecorder {
		var hdr http.Header
		if tok != "" {
			hdr = http.Header{"Authorization": {"Bearer " + tok}}
		}
		return hostRequest(h, "GET", "127.0.0.1:9464", "/api/stats", remote, hdr, "")
	}
	penalties := []time.Duration{100, 200, 400, 800, 1600, 2000, 2000}
	for i, p := range penalties {
		p *= time.Millisecond
		require.Equal(t, http.StatusUnauthorized, try(attacker, "guess").Code, "guess %d is checked", i)
		hclock.Advance(p - time.Millisecond)
		w := try(attacker, "s3cret-s3cret-s3cret")
		require.Equal(t, http.StatusTooManyRequests, w.Code, "guess %d: still in its %s penalty, even the right token is not checked", i, p)
		assert.NotEmpty(t, w.Header().Get("Retry-After"))
		assert.Contains(t, w.Body.String(), "too many wrong tokens")
		assert.Equal(t, http.StatusUnauthorized, try(attacker, "").Code, "no token: no guess, not throttled")
		assert.Equal(t, http.StatusOK, try(other, "s3cret-s3cret-s3cret").Code, "another client is not held back")
		hclock.Advance(time.Millisecond)
	}
	st, _ := admin.ReadAuthStats(h)
	assert.EqualValues(t, len(penalties), st.Failures)
	assert.EqualValues(t, len(penalties), st.Throttled)
	assert.Equal(t, 1, st.Clients)

	require.Equal(t, http.StatusOK, try(attacker, "s3cret-s3cret-s3cret").Code, "after the penalty the right token works")
	st, _ = admin.ReadAuthStats(h)
	assert.Zero(t, st.Clients, "and clears the record")
	require.Equal(t, http.StatusUnauthorized, try(attacker, "guess").Code)
	hclock.Advance(100 * time.Millisecond)
	assert.Equal(t, http.StatusUnauthorized, try(attacker, "guess").Code, "back to the first penalty")

	// The console's bearer header and sign-in form go through it too.
	hclock.Advance(time.Second)
	page := hostRequest(h, "GET", "127.0.0.1", "/", other, http.Header{"Authorization": {"Bearer nope"}}, "")
	assert.Equal(t, http.StatusUnauthorized, page.Code)
	page = hostRequest(h, "GET", "127.0.0.1", "/", other, http.Header{"Authorization": {"Bearer nope"}}, "")
	assert.Equal(t, http.StatusTooManyRequests, page.Code)
	assert.Contains(t, page.Body.String(), "Too many wrong tokens")
	st, _ = admin.ReadAuthStats(h)
	assert.EqualValues(t, len(penalties)+3, st.Failures)
}

// TestThrottleBounded: however many addresses send wrong tokens, the
// throttle tracks at most 4096 clients; past that, a new one takes the
// place of the one whose penalty ends first, and gets a penalty of its
// own; a client that has not failed is never held back, so that a right
// token from a new address works while the table is full.
func TestThrottleBounded(t *testing.T) {
	e, _, _ := adminEngine(t, ringwal.Options{})
	hclock := clock.NewFake(time.Now())
	h := admin.NewHandler(e, admin.Options{Token: "s3cret-s3cret-s3cret", Clock: hclock})
	const n = 5000
	refused := 0
	for i := 0; i < n; i++ {
		remote := fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255)
		w := hostRequest(h, "GET", "localhost", "/api/stats", remote, http.Header{"Authorization": {"Bearer guess"}}, "")
		if w.Code == http.StatusTooManyRequests {
			refused++
		}
	}
	st, _ := admin.ReadAuthStats(h)
	assert.LessOrEqual(t, st.Clients, 4096, "bounded")
	assert.Zero(t, refused, "past the bound, each new address's first guess is checked (401), as before it")
	last := fmt.Sprintf("10.%d.%d.%d:1", (n-1)>>16&255, (n-1)>>8&255, (n-1)&255)
	assert.Equal(t, http.StatusTooManyRequests, hostRequest(h, "GET", "localhost", "/api/stats", last, http.Header{"Authorization": {"Bearer s3cret-s3cret-s3cret"}}, "").Code,
		"the last to fail is in its own penalty")
	assert.Equal(t, http.StatusOK, hostRequest(h, "GET", "localhost", "/api/stats", "192.0.2.100:1", http.Header{"Authorization": {"Bearer s3cret-s3cret-s3cret"}}, "").Code,
		"a right token from an address that never failed is checked, the table full or not")
	// Long after, the records are swept to make room again.
	hclock.Advance(time.Hour)
	w := hostRequest(h, "GET", "localhost", "/api/stats", "192.0.2.200:1", http.Header{"Authorization": {"Bearer guess"}}, "")
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	// IPv6 addresses of one /64 are one client.
	for i := 0; i < 3; i++ {
		w := hostRequest(h, "GET", "localhost", "/api/stats", fmt.Sprintf("[2001:db8:1:2::%x]:1", i+1), http.Header{"Authorization": {"Bearer guess"}}, "")
		want := http.StatusTooManyRequests
		if i == 0 {
			want = http.StatusUnauthorized
		}
		assert.Equal(t, want, w.Code, "one /64, one client: %d", i)
	}
	st, _ = admin.ReadAuthStats(h)
	assert.Less(t, st.Clients, 10, "swept")
}

// TestProtect: an endpoint behind Protect has the admin handler's Host
// check, token and throttle, and fails closed over a foreign handler.
func TestProtect(t *testing.T) {
	e, _, _ := adminEngine(t, ringwal.Options{})
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metrics") })
	open := admin.Protect(admin.NewHandler(e, admin.Options{}), next)
	assert.Equal(t, http.StatusForbidden, hostRequest(open, "GET", "evil.example", "/metrics", "192.0.2.1:1", nil, "").Code)
	assert.Equal(t, http.StatusOK, hostRequest(open, "GET", "localhost:9464", "/metrics", "192.0.2.1:1", nil, "").Code)

	hclock := clock.NewFake(time.Now())
	ah := admin.NewHandler(e, admin.Options{Token: "s3cret-s3cret-s3cret", Clock: hclock})
	guarded := admin.Protect(ah, next)
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	assert.Equal(t, http.StatusUnauthorized, hostRequest(guarded, "GET", "x", "/metrics", "192.0.2.1:1", nil, "").Code)
	assert.Equal(t, http.StatusUnauthorized, hostRequest(guarded, "GET", "x", "/metrics", "192.0.2.1:1", bearer("no"), "").Code)
	assert.Equal(t, http.StatusTooManyRequests, hostRequest(ah, "GET", "x", "/api/stats", "192.0.2.1:1", bearer("s3cret-s3cret-s3cret"), "").Code,
		"one throttle: a wrong token on /metrics holds back the API too")
	hclock.Advance(100 * time.Millisecond)
	w := hostRequest(guarded, "GET", "x", "/metrics", "192.0.2.1:1", bearer("s3cret-s3cret-s3cret"), "")
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "metrics", w.Body.String())
	st, _ := admin.ReadAuthStats(ah)
	assert.EqualValues(t, 1, st.Failures)
	assert.EqualValues(t, 1, st.Throttled)

	foreign := admin.Protect(http.NotFoundHandler(), next)
	assert.Equal(t, http.StatusInternalServerError, hostRequest(foreign, "GET", "localhost", "/metrics", "192.0.2.1:1", nil, "").Code)
}
