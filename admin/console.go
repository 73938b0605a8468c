package admin

// The web console's machinery: its routes, the checks every console
// request goes through (token or session, origin, CSRF, sizes), page
// rendering from the embedded templates, and HTML error pages. The pages
// themselves are in console_pages.go, sessions and CSRF tokens in
// session.go.

import (
	"bytes"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/ringwal/ringwal"
)

//go:embed console
var consoleFS embed.FS

// console is the web console's state: its routes, its parsed pages, the
// key that signs sessions and CSRF tokens, and the Stats samples behind
// the rates of the queues the engine keeps no history of.
type console struct {
	mux     *http.ServeMux
	pages   map[string]*template.Template
	key     []byte
	rates   sampler
	revoked revocations
}

// pageNames lists the templates under console/, each rendered inside
// layout.html.
var pageNames = []string{"overview", "queues", "queue", "queuedelete", "schedules", "scheduleremove", "keys", "messages", "cancel", "cancelmessages", "deadletters", "deadletter", "purge", "purged", "bulk", "bulkdone", "login", "error"}

// newConsole parses the templates and routes the console's paths to h.
func newConsole(h *handler) *console {
	c := &console{mux: http.NewServeMux(), pages: map[string]*template.Template{}, key: make([]byte, 32)}
	if _, err := rand.Read(c.key); err != nil {
		panic(fmt.Sprintf("ringwal admin: no randomness for the console's key: %v", err))
	}
	layout := template.Must(template.New("layout.html").Funcs(templateFuncs).ParseFS(consoleFS, "console/layout.html"))
	for _, name := range pageNames {
		t := template.Must(layout.Clone())
		c.pages[name] = template.Must(t.ParseFS(consoleFS, "console/"+name+".html"))
	}
	c.mux.HandleFunc("GET /{$}", h.overviewPage)
	c.mux.HandleFunc("GET /queues", h.queuesPage)
	c.mux.HandleFunc("GET /queue", h.queuePage)
	c.mux.HandleFunc("POST /queues/pause", h.pauseQueueAction)
	c.mux.HandleFunc("POST /queues/resume", h.resumeQueueAction)
	c.mux.HandleFunc("POST /queues/delete", h.deleteQueueAction)
	c.mux.HandleFunc("GET /schedules", h.schedulesPage)
	c.mux.HandleFunc("POST /schedules/pause", h.pauseScheduleAction)
	c.mux.HandleFunc("POST /schedules/resume", h.resumeScheduleAction)
	c.mux.HandleFunc("POST /schedules/trigger", h.triggerScheduleAction)
	c.mux.HandleFunc("POST /schedules/remove", h.removeScheduleAction)
	c.mux.HandleFunc("GET /keys", h.keysPage)
	c.mux.HandleFunc("POST /keys/pause", h.pauseKeyAction)
	c.mux.HandleFunc("POST /keys/resume", h.resumeKeyAction)
	c.mux.HandleFunc("POST /pause", h.pauseAllAction)
	c.mux.HandleFunc("POST /resume", h.resumeAllAction)
	c.mux.HandleFunc("GET /messages", h.messagesPage)
	c.mux.HandleFunc("POST /messages/{id}/cancel", h.cancelAction)
	c.mux.HandleFunc("GET /cancel-messages", h.cancelBulkPage)
	c.mux.HandleFunc("POST /cancel-messages", h.cancelBulkAction)
	c.mux.HandleFunc("GET /dead-letters", h.deadLettersPage)
	c.mux.HandleFunc("GET /dead-letters/{id}", h.deadLetterPage)
	c.mux.HandleFunc("POST /dead-letters/{id}/review", h.reviewAction)
	c.mux.HandleFunc("POST /dead-letters/{id}/redrive", h.redriveAction)
	c.mux.HandleFunc("GET /purge", h.purgePage)
	c.mux.HandleFunc("POST /purge", h.purgeAction)
	c.mux.HandleFunc("GET /bulk", h.bulkPage)
	c.mux.HandleFunc("POST /bulk", h.bulkAction)
	c.mux.HandleFunc("GET /login", h.loginPage)
	c.mux.HandleFunc("POST /login", h.loginAction)
	c.mux.HandleFunc("POST /logout", h.logoutAction)
	c.mux.HandleFunc("GET /static/{file}", h.static)
	return c
}

// serveConsole runs the checks every console request goes through (Host,
// query size, a sign-in URL's token, token or session, origin, CSRF),
// then routes it. Unknown paths and wrong methods get HTML 404 and 405 pages,
// a panic an HTML 500 (its stack goes to the log only).
func (h *handler) serveConsole(w http.ResponseWriter, r *http.Request) {
	defer h.recoverPanic(w, r)
	if !h.checkHost(w, r, false) {
		return
	}
	if len(r.URL.RawQuery) > MaxQuery {
		h.errorPage(w, r, http.StatusRequestURITooLong, fmt.Sprintf("The query is longer than %d bytes.", MaxQuery))
		return
	}
	if safeMethod(r.Method) && r.URL.Query().Has(tokenParam) {
		h.signInURL(w, r)
		return
	}
	public := strings.HasPrefix(r.URL.Path, "/static/") || r.URL.Path == "/login"
	if h.opts.Token != "" && !public {
		ok, answered := h.checkBearer(w, r, false)
		if answered {
			return
		}
		if !ok && !h.con.validSession(r, h.now()) {
			if safeMethod(r.Method) {
				h.renderLogin(w, r, http.StatusUnauthorized, "", r.URL.Path)
				return
			}
			h.errorPage(w, r, http.StatusUnauthorized, "Sign in first: this console needs the admin token.")
			return
		}
	}
	if _, pattern := h.con.mux.Handler(r); pattern == "" {
		// The mux answers 404 or 405 (with Allow); nothing is done.
		h.con.mux.ServeHTTP(&htmlErrorWriter{ResponseWriter: w, h: h, r: r}, r)
		return
	}
	if !safeMethod(r.Method) {
		if crossOrigin(r) {
			h.errorPage(w, r, http.StatusForbidden, "Cross-origin request refused.")
			return
		}
		if !h.checkForm(w, r) {
			return
		}
	}
	h.con.mux.ServeHTTP(w, r)
}

// checkForm reads a POST's form (at most MaxForm bytes, URL-encoded) and
// checks its CSRF token against the session's cookie. It answers the
// request itself and returns false when either is wrong.
func (h *handler) checkForm(w http.ResponseWriter, r *http.Request) bool {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-www-form-urlencoded" {
		h.errorPage(w, r, http.StatusUnsupportedMediaType, "Console actions take an HTML form (application/x-www-form-urlencoded); scripts use the JSON API under api/.")
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxForm)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.errorPage(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("The form is larger than %d bytes.", tooBig.Limit))
			return false
		}
		h.errorPage(w, r, http.StatusBadRequest, "Malformed form: "+err.Error())
		return false
	}
	if !h.con.validCSRF(r) {
		h.errorPage(w, r, http.StatusForbidden, "Missing or wrong CSRF token: reload the page and try again.")
		return false
	}
	return true
}

// page is what every template gets: the layout's fields and the page's
// own data.
type page struct {
	Title   string
	Nav     string // the active navigation entry
	Base    string // the relative path from this page to the console's root: "./" or "../"
	CSRF    string // the form field's value
	Session bool   // signed in with a session cookie (a token is set): show sign out
	Refresh int    // seconds between refreshes of #live; 0 = none
	Flash   string
	Data    any
}

// render executes template name into a buffer and sends it with status
// code, so that a failing template is an error page rather than half a
// page.
func (h *handler) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	p.Base = basePath(r.URL.Path)
	p.CSRF = h.con.csrfToken(w, r)
	p.Session = h.opts.Token != "" && h.con.validSession(r, h.now())
	var buf bytes.Buffer
	if err := h.con.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		h.opts.Logger.Error("ringwal: admin console: rendering a page", "page", name, "err", err)
		if name != "error" {
			h.errorPage(w, r, http.StatusInternalServerError, "internal error (the server's log has the details)")
			return
		}
		buf.Reset()
		buf.WriteString("<!doctype html><title>error</title><p>internal error</p>\n")
	}
	hd := w.Header()
	setPageHeaders(hd)
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// setPageHeaders sets the headers of every console answer: no caching,
// no sniffing, no framing, and a content security policy that allows only
// the console's own script, style and forms.
func setPageHeaders(hd http.Header) {
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	if hd.Get("Referrer-Policy") == "" { // a sign-in URL's answer keeps no-referrer
		hd.Set("Referrer-Policy", "same-origin")
	}
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
}

// errorView is the error page's data.
type errorView struct {
	Status  int
	Text    string
	Message string
}

// errorPage answers an HTML error page with status code.
func (h *handler) errorPage(w http.ResponseWriter, r *http.Request, code int, msg string) {
	h.render(w, r, code, "error", page{Title: http.StatusText(code),
		Data: errorView{Status: code, Text: http.StatusText(code), Message: msg}})
}

// failPage answers an engine error with the status its sentinel calls
// for, as an HTML page.
func (h *handler) failPage(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ringwal.ErrClosed), errors.Is(err, ringwal.ErrFull):
		code = http.StatusServiceUnavailable
	case errors.Is(err, ringwal.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ringwal.ErrInvalid):
		code = http.StatusBadRequest
	}
	if code == http.StatusInternalServerError {
		h.opts.Logger.Error("ringwal: admin console request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	h.errorPage(w, r, code, err.Error())
}

// htmlErrorWriter replaces the mux's plain-text 404 and 405 with an HTML
// page, keeping the other headers (Allow on a 405).
type htmlErrorWriter struct {
	http.ResponseWriter
	h               *handler
	r               *http.Request
	wrote, replaced bool
}

func (e *htmlErrorWriter) WriteHeader(code int) {
	if e.wrote {
		return
	}
	e.wrote = true
	e.replaced = code >= 400
	if !e.replaced {
		e.ResponseWriter.WriteHeader(code)
		return
	}
	msg := "No such page."
	if code == http.StatusMethodNotAllowed {
		msg = "This page does not take a " + e.r.Method + " request."
	}
	e.h.errorPage(e.ResponseWriter, e.r, code, msg)
}

func (e *htmlErrorWriter) Write(p []byte) (int, error) {
	if !e.wrote {
		e.WriteHeader(http.StatusOK)
	}
	if e.replaced {
		return len(p), nil
	}
	return e.ResponseWriter.Write(p)
}

// basePath is the relative path from the page at p back to the console's
// root, so that links work wherever the handler is mounted: "./" for /
// and /keys, "../" for /dead-letters/7.
func basePath(p string) string {
	depth := strings.Count(p, "/") - 1
	if depth <= 0 {
		return "./"
	}
	return strings.Repeat("../", depth)
}

// seeOther redirects a form's POST to rel, a path relative to the
// console's root (the Location is relative, so it works under a prefix).
func seeOther(w http.ResponseWriter, r *http.Request, rel string) {
	w.Header().Set("Location", basePath(r.URL.Path)+rel)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusSeeOther)
}

// static serves the console's CSS and script.
func (h *handler) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := fs.ReadFile(consoleFS, "console/"+name)
	if err != nil || (path.Ext(name) != ".css" && path.Ext(name) != ".js") {
		h.errorPage(w, r, http.StatusNotFound, "No such file.")
		return
	}
	hd := w.Header()
	setPageHeaders(hd)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}
