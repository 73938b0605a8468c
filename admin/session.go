package admin

// The console's sessions and CSRF tokens. Both are stateless: values
// signed with the console's random key (HMAC-SHA256), so a restart of the
// process signs everyone out and nothing is stored per visitor.
//
// CSRF (double submit, signed): a random nonce in the cookie ringwal_csrf
// (HttpOnly, SameSite=Strict), set by the first page a browser loads; every
// form carries the nonce's MAC in its csrf field, and a POST whose field is
// not the MAC of its cookie's nonce is refused. A page elsewhere can
// neither read the cookie nor compute the MAC; SameSite=Strict keeps the
// cookie off cross-site requests anyway, and the Origin check comes first.
//
// Sessions (only when Options.Token is set): the login form takes the
// token once and sets ringwal_session (HttpOnly, SameSite=Strict), an
// expiry and a nonce signed with the key, valid for sessionTTL.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Cookie names, and how long a session lasts.
const (
	csrfCookie    = "ringwal_csrf"
	sessionCookie = "ringwal_session"
	sessionTTL    = 12 * time.Hour
)

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
// console that has not expired at now.
func (c *console) validSession(r *http.Request, now time.Time) bool {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	parts := strings.Split(ck.Value, ".")
	if len(parts) != 3 {
		return false
	}
	exp, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return false
	}
	return hmac.Equal([]byte(parts[2]), []byte(c.mac("session", parts[0], parts[1])))
}

// loginView is the login page's data.
type loginView struct {
	Error string
	Next  string // where to go after signing in, relative to the root
}

// safeNext keeps a post-login destination only if it is a console path
// (no scheme, no host, no query): anything else is the overview.
var safeNext = regexp.MustCompile(`^/[A-Za-z0-9/_.-]*$`).MatchString

// renderLogin answers the login page with status code; next is the
// console path to return to.
func (h *handler) renderLogin(w http.ResponseWriter, r *http.Request, code int, msg, next string) {
	if !safeNext(next) || strings.Contains(next, "//") || strings.Contains(next, "..") || next == "/login" {
		next = "/"
	}
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

// loginAction checks the token from the form and, if right, sets the
// session cookie and goes to next.
func (h *handler) loginAction(w http.ResponseWriter, r *http.Request) {
	if h.opts.Token == "" {
		seeOther(w, r, "")
		return
	}
	next := r.PostForm.Get("next")
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	if subtle.ConstantTimeCompare([]byte(tok), []byte(h.opts.Token)) != 1 {
		h.opts.Logger.Info("ringwal: admin console: a sign-in with a wrong token", "remote", r.RemoteAddr)
		h.renderLogin(w, r, http.StatusUnauthorized, "Wrong token.", next)
		return
	}
	exp := h.now().Add(sessionTTL)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: h.con.newSession(exp), Path: "/", Expires: exp,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	if !safeNext(next) || strings.Contains(next, "//") || strings.Contains(next, "..") {
		next = "/"
	}
	seeOther(w, r, strings.TrimPrefix(next, "/"))
}

// logoutAction clears the session cookie.
func (h *handler) logoutAction(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	seeOther(w, r, "login")
}
