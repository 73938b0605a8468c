package admin

// The throttle on wrong credentials. Every wrong bearer token or sign-in
// puts its client in a penalty for a while: 100ms after the first,
// doubling with each further failure up to 2s. The client is its remote
// IP. An IPv6 client is its /64, since one host often holds a whole /64.
// During its penalty a client's credentials are not checked at all: it is
// answered 429 with Retry-After. Once a client has failed, each credential
// of its that is checked first moves its penalty on to the next one
// (admit). So from its first failure on it gets one guess per penalty,
// however many connections it opens in parallel. No goroutine is held
// asleep. A right credential clears the client's record. A request that
// carries no credential (a session cookie, or none) is never throttled.
// Behind a reverse proxy every client has the proxy's address, since
// forwarding headers are not trusted: anyone can send them. So one
// guesser's penalty holds back the others' tokens too, for 2s at most.
//
// The records are bounded: at most maxThrottled clients are tracked. A
// client that fails when the table is full takes the place of those whose
// penalty has ended, since they hold no one back now. If every penalty is
// still running, it takes the place of the one whose penalty ends first.
// A client without a record has never failed, or was forgotten. It is
// never held back: its credential is always checked. So wrong guesses
// from many addresses cannot keep out an operator arriving from a new
// one. The price is that an attacker with more addresses than the table
// holds can have its oldest addresses forgotten. Their next penalty
// starts again at the first. Each of its addresses still gets one guess
// per penalty.

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The throttle's bounds.
const (
	firstPenalty = 100 * time.Millisecond
	maxPenalty   = 2 * time.Second
	// forgetAfter is how long after its penalty ends a client's record is
	// kept (and its next failure doubles the last penalty).
	forgetAfter  = 10 * time.Minute
	maxThrottled = 4096
)

// AuthStats counts a handler's refusals; see ReadAuthStats. Every field
// only grows but Clients.
type AuthStats struct {
	// Failures counts wrong credentials: bearer tokens (API and console)
	// and sign-ins (form or sign-in URL).
	Failures uint64
	// Throttled counts requests answered 429 without their credential
	// being checked, their client still in the penalty of a failure.
	Throttled uint64
	// HostsRefused counts requests refused for their Host header (see
	// Options.AllowedHosts).
	HostsRefused uint64
	// Clients is how many clients the throttle tracks now: at most 4096.
	Clients int
}

// ReadAuthStats returns the AuthStats of h, the very handler NewHandler
// returned (not one wrapping it), and false for any other handler. Export
// them as metrics: ringwal serve does, as ringwal_admin_auth_failures_total,
// ringwal_admin_auth_throttled_total and ringwal_admin_hosts_refused_total.
// Safe for concurrent use.
func ReadAuthStats(h http.Handler) (AuthStats, bool) {
	ah, ok := h.(*handler)
	if !ok {
		return AuthStats{}, false
	}
	return AuthStats{Failures: ah.auth.failures.Load(), Throttled: ah.auth.throttled.Load(),
		HostsRefused: ah.auth.hostsRefused.Load(), Clients: ah.limit.size()}, true
}

// authCounters are the handler's counters behind AuthStats.
type authCounters struct {
	failures, throttled, hostsRefused atomic.Uint64
}

// penalty is one client's record.
type penalty struct {
	fails int       // failures since the record was made
	until time.Time // no credential checked before this
}

// throttle holds the clients' records; safe for concurrent use.
type throttle struct {
	now     func() time.Time
	mu      sync.Mutex
	clients map[string]*penalty
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, clients: map[string]*penalty{}}
}

// clientKey is r's client: its remote IP, an IPv6 one cut to its /64.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return "?" + host // not an IP (a test's or a unix socket's): its own record
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
}

// admit returns how long client must still wait before a credential of
// its is checked. It returns 0 when the client may try now. It always
// does so for a client without a record, which has not failed. A client
// with a record failed before. When it may try, its penalty is moved on
// to the next one at once, under the same lock. So requests it sends in
// parallel wait while this one is checked. Then fail sets that penalty,
// or succeed drops the record. tracked reports that record.
func (t *throttle) admit(client string) (wait time.Duration, tracked bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.clients[client]
	if p == nil {
		return 0, false
	}
	now := t.now()
	if d := p.until.Sub(now); d > 0 {
		return d, true
	}
	p.forgetIfOld(now)
	p.until = now.Add(penaltyAfter(p.fails + 1))
	return 0, true
}

// fail records a wrong credential of client and returns its penalty.
func (t *throttle) fail(client string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	p := t.clients[client]
	if p == nil {
		if len(t.clients) >= maxThrottled {
			t.makeRoom(now)
		}
		p = &penalty{}
		t.clients[client] = p
	}
	p.forgetIfOld(now)
	p.fails++
	d := penaltyAfter(p.fails)
	p.until = now.Add(d)
	return d
}

// forgetIfOld starts p's count again when its last penalty ended long ago
// (forgetAfter).
func (p *penalty) forgetIfOld(now time.Time) {
	if now.After(p.until.Add(forgetAfter)) {
		p.fails = 0
	}
}

// penaltyAfter is the penalty after the fails-th failure (fails >= 1).
func penaltyAfter(fails int) time.Duration {
	if fails > 5 { // 100ms << 5 is past 2s already
		return maxPenalty
	}
	return min(firstPenalty<<(fails-1), maxPenalty)
}

// succeed forgets client: its credential was right.
func (t *throttle) succeed(client string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.clients, client)
}

// makeRoom drops records from the full table for a new one. It drops
// those whose penalty has ended, since they hold no one back. A client of
// theirs that fails again starts at the first penalty. If no penalty has
// ended, it drops the one whose penalty ends first, the least penalised.
// It costs O(maxThrottled), paid by a failure that finds the table full.
// An attacker's failures refill the table no faster than one record
// each. The caller holds t.mu.
func (t *throttle) makeRoom(now time.Time) {
	var first string
	var firstUntil time.Time
	found := false
	for k, p := range t.clients {
		switch {
		case !p.until.After(now):
			delete(t.clients, k)
		case !found || p.until.Before(firstUntil):
			first, firstUntil, found = k, p.until, true
		}
	}
	if len(t.clients) >= maxThrottled {
		delete(t.clients, first)
	}
}

// size returns how many clients t tracks.
func (t *throttle) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients)
}

// checkCredential checks tok, a credential r carries, through the
// throttle. The credential is a bearer token or a sign-in form's or URL's
// token. A client in its penalty is answered 429, and answered is true;
// api picks JSON over an HTML page. A wrong token counts a failure, and
// ok is false. A right one drops the client's record, and ok is true.
func (h *handler) checkCredential(w http.ResponseWriter, r *http.Request, tok string, api bool) (ok, answered bool) {
	client := clientKey(r)
	wait, tracked := h.limit.admit(client)
	if wait > 0 {
		h.throttled(w, r, api, wait)
		return false, true
	}
	if !h.rightToken(tok) {
		h.auth.failures.Add(1)
		d := h.limit.fail(client)
		h.opts.Logger.Info("ringwal: admin: a wrong token", "remote", r.RemoteAddr, "path", r.URL.Path, "penalty", d)
		return false, false
	}
	if tracked {
		h.limit.succeed(client)
	}
	return true, false
}

// throttled answers r 429: its client is in a penalty for d more.
func (h *handler) throttled(w http.ResponseWriter, r *http.Request, api bool, d time.Duration) {
	h.auth.throttled.Add(1)
	secs := int((d + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	msg := "too many wrong tokens from your address: try again in " + strconv.Itoa(secs) + "s"
	if api {
		replyError(w, http.StatusTooManyRequests, msg)
	} else {
		h.errorPage(w, r, http.StatusTooManyRequests, "Too many wrong tokens from your address: try again in "+strconv.Itoa(secs)+"s.")
	}
}

// Protect returns next behind the defences of ah, a handler from
// NewHandler. These are its Host check and its bearer token, with the
// same throttle on wrong tokens and the same AuthStats. So an endpoint
// mounted beside the admin handler, such as /metrics, is no easier to
// guess the token through. A console session does not open it: only the
// Authorization header does. Errors are answered as the API's, in JSON.
// If ah is not from NewHandler, every request is refused with 500: a
// mistake fails closed.
func Protect(ah, next http.Handler) http.Handler {
	h, ok := ah.(*handler)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ok {
			replyError(w, http.StatusInternalServerError, "admin.Protect: not a handler from admin.NewHandler")
			return
		}
		if h.authorizeAPI(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}
