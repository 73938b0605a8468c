package admin

// The console's sessions and CSRF tokens. Both are stateless: values
// signed with the console's random key (HMAC-SHA256), so a restart of the
// process signs everyone out and nothing is stored per visitor.
//
// CSRF is a signed double submit. The first page a browser loads sets a
// random nonce in the cookie ringwal_csrf (HttpOnly, SameSite=Strict).
// Every form carries the nonce's MAC in its csrf field. A POST whose field
// is not the MAC of its cookie's nonce is refused. A page elsewhere can
// neither read the cookie nor compute the MAC. SameSite=Strict keeps the
// cookie off cross-site requests anyway, and the Origin check comes first.
//
// Sessions exist only when Options.Token is set. The login form takes the
// token once, or a sign-in URL does: any page with ?token=<token>, as
// ringwal serve prints. Either sets ringwal_session (HttpOnly,
// SameSite=Strict). The cookie is an expiry and a nonce signed with the
// key, valid for sessionTTL. Signing out revokes the session on the
// server too, not only in the browser that signs out: a copy of the
// cookie taken before is refused. The revoked nonces are the one thing
// the console keeps per session. Each is forgotten when its session would
// have expired anyway. Should more than maxRevoked be live at once, every
// session issued so far is revoked instead, and everyone signs in again.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Cookie names, and how long a session lasts.
const (
	csrfCookie    = "ringwal_csrf"
	sessionCookie = "ringwal_session"
	sessionTTL    = 12 * time.Hour
	maxRevoked    = 4096
	// tokenParam is the query parameter of a sign-in URL.
	tokenParam = "token"
)

// revocations are the sessions signed out before their expiry; safe for
// concurrent use.
type revocations struct {
	mu        sync.Mutex
	nonces    map[string]time.Time // nonce -> its session's expiry
	notBefore time.Time            // sessions issued before it are revoked too
}

// revoked reports whether the session with nonce n, issued at issued, is
// revoked.
func (v *revocations) revoked(n string, issued time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.nonces[n]
	return ok || issued.Before(v.notBefore)
}

// revoke revokes the session with nonce n until exp, its expiry.
func (v *revocations) revoke(n string, exp, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.nonces == nil {
		v.nonces = map[string]time.Time{}
	}
	if len(v.nonces) >= maxRevoked {
		for k, e := range v.nonces {
			if !now.Before(e) {
				delete(v.nonces, k) // expired: refused anyway
			}
		}
	}
	if len(v.nonces) >= maxRevoked {
		// No room: revoke every session issued up to now instead.
		clear(v.nonces)
		v.notBefore = now.Add(time.Second) // issued times are whole seconds
		return
	}
	v.nonces[n] = exp
}

// mac signs parts with the console's key.
func (c *console) mac(parts ...string) string {
	m := hmac.New(sha256.New, c.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// nonce returns 16 random bytes, URL-safe.
func nonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// validNonce reports whether s looks like a nonce of ours (a cookie is
// input, and is echoed into nothing but a MAC, but keep it tidy).
var validNonce = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`).MatchString

// csrfToken returns the CSRF field value for r's session, setting the
// CSRF cookie first when r has none.
func (c *console) csrfToken(w http.ResponseWriter, r *http.Request) string {
	n := ""
	if ck, err := r.Cookie(csrfCookie); err == nil && validNonce(ck.Value) {
		n = ck.Value
	} else {
		n = nonce()
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: n, Path: "/", HttpOnly: true,
			Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
		// A page rendered in this answer may post back at once: let the
		// rest of this request see the cookie too.
		r.AddCookie(&http.Cookie{Name: csrfCookie, Value: n})
	}
	return c.mac("csrf", n)
}

// validCSRF reports whether r's form field csrf is the MAC of its CSRF
// cookie's nonce.
func (c *console) validCSRF(r *http.Request) bool {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || !validNonce(ck.Value) {
		return false
	}
	got := r.PostForm.Get("csrf")
	return got != "" && hmac.Equal([]byte(got), []byte(c.mac("csrf", ck.Value)))
}

// newSession returns a session cookie's value valid until exp.
func (c *console) newSession(exp time.Time) string {
	e, n := strconv.FormatInt(exp.Unix(), 10), nonce()
	return e + "." + n + "." + c.mac("session", e, n)
}

// validSession reports whether r carries a session cookie signed by this
// console that has not expired at now nor been revoked.
func (c *console) validSession(r *http.Request, now time.Time) bool {
	_, _, ok := c.session(r, now)
	return ok
}

// session returns the nonce and expiry of r's session cookie, and
// whether it is valid at now.
func (c *console) session(r *http.Request, now time.Time) (n string, exp time.Time, ok bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", time.Time{}, false
	}
	parts := strings.Split(ck.Value, ".")
	if len(parts) != 3 {
		return "", time.Time{}, false
	}
	secs, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || !now.Before(time.Unix(secs, 0)) {
		return "", time.Time{}, false
	}
	if !hmac.Equal([]byte(parts[2]), []byte(c.mac("session", parts[0], parts[1]))) {
		return "", time.Time{}, false
	}
	exp = time.Unix(secs, 0)
	if c.revoked.revoked(parts[1], exp.Add(-sessionTTL)) {
		return "", time.Time{}, false
	}
	return parts[1], exp, true
}

// loginView is the login page's data.
type loginView struct {
	Error string
	Next  string // where to go after signing in, relative to the root
}

// safeNext matches a console path: no scheme, no host, no query.
var safeNext = regexp.MustCompile(`^/[A-Za-z0-9/_.-]*$`).MatchString

// consolePath keeps p as a place to go, after signing in or from a
// sign-in URL. It keeps p only if it is a console path other than the
// login page itself, and no "//" or ".." could make a browser take it
// elsewhere. Anything else is the overview, "/".
func consolePath(p string) string {
	if !safeNext(p) || strings.Contains(p, "//") || strings.Contains(p, "..") || p == "/login" {
		return "/"
	}
	return p
}

// renderLogin answers the login page with status code; next is the
// console path to return to.
func (h *handler) renderLogin(w http.ResponseWriter, r *http.Request, code int, msg, next string) {
	next = consolePath(next)
	h.render(w, r, code, "login", page{Title: "Sign in", Data: loginView{Error: msg, Next: next}})
}

func (h *handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if h.opts.Token == "" {
		seeOther(w, r, "")
		return
	}
	next := r.URL.Query().Get("next")
	h.renderLogin(w, r, http.StatusOK, "", next)
}

// loginAction checks the token from the form (through the throttle)
// and, if right, sets the session cookie and goes to next.
func (h *handler) loginAction(w http.ResponseWriter, r *http.Request) {
	if h.opts.Token == "" {
		seeOther(w, r, "")
		return
	}
	next := r.PostForm.Get("next")
	ok, answered := h.checkCredential(w, r, strings.TrimSpace(r.PostForm.Get("token")), false)
	if answered {
		return
	}
	if !ok {
		h.renderLogin(w, r, http.StatusUnauthorized, "Wrong token.", next)
		return
	}
	h.startSession(w, r)
	seeOther(w, r, strings.TrimPrefix(consolePath(next), "/"))
}

// startSession sets a new session cookie on w.
func (h *handler) startSession(w http.ResponseWriter, r *http.Request) {
	exp := h.now().Add(sessionTTL)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: h.con.newSession(exp), Path: "/", Expires: exp,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// signInURL answers a console GET whose query has a token: a sign-in URL,
// such as ringwal serve prints. The right token starts a session and
// redirects to the same page without the token, so that the token leaves
// the address bar. A wrong token is counted as a failure and answered
// with the login page. A client in its penalty is answered 429. Both
// answers are at the tokened URL, which their Referrer-Policy
// (no-referrer) keeps from being sent on. Without Options.Token there is
// nothing to sign in to: the parameter is only dropped.
func (h *handler) signInURL(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tok := strings.TrimSpace(q.Get(tokenParam))
	q.Del(tokenParam)
	rel := strings.TrimPrefix(consolePath(r.URL.Path), "/")
	if len(q) > 0 {
		rel += "?" + q.Encode()
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	if h.opts.Token != "" {
		ok, answered := h.checkCredential(w, r, tok, false)
		if answered {
			return
		}
		if !ok {
			h.renderLogin(w, r, http.StatusUnauthorized, "Wrong token in the sign-in URL.", r.URL.Path)
			return
		}
		h.startSession(w, r)
		h.opts.Logger.Info("ringwal: admin console: signed in with a sign-in URL", "remote", r.RemoteAddr)
	}
	seeOther(w, r, rel)
}

// logoutAction revokes the session (on the server: a copy of the cookie
// is refused from now on) and clears its cookie.
func (h *handler) logoutAction(w http.ResponseWriter, r *http.Request) {
	now := h.now()
	if n, exp, ok := h.con.session(r, now); ok {
		h.con.revoked.revoke(n, exp, now)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	seeOther(w, r, "login")
}
