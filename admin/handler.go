package admin

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// Options configures NewHandler. The zero value is usable.
type Options struct {
	// Token, when not empty, is the bearer token every request must carry
	// (Authorization: Bearer <token>; the console also takes it once, on
	// its sign-in page or in a sign-in URL ending in ?token=<token>);
	// others are answered 401. Wrong tokens put their client in a short
	// penalty (429, see AuthStats). "" asks for none: then mount the
	// handler behind authentication of your own, and mind AllowedHosts.
	Token string
	// AllowedHosts are the host names (or addresses) besides loopback ones
	// (localhost, *.localhost, 127.0.0.0/8, ::1) that requests may name in
	// their Host header; a port, if given, is ignored, and "*" allows any.
	// The check applies when Token is "" or AllowedHosts is not empty;
	// other requests are refused with 403. Without a token it is what
	// stops DNS rebinding: a web page that makes its own name resolve to
	// the handler's address reaches it with its own name as the Host.
	// Name here the names operators use to reach an internal listener
	// ("ringwal-admin.internal"); "*" only behind a proxy that checks the
	// Host itself.
	AllowedHosts []string
	// Logger receives operator actions (requeue, redrive, review, purge,
	// pause, resume, cancel, trigger, remove) at Info and failed requests at Error. Nil discards.
	Logger *slog.Logger
	// Clock is the time relative inputs count from ("pause for 1h", a
	// dead-letter query's "after 30m") and pages show: give the engine's
	// Options.Clock when it has one, so that both agree. Nil is the real
	// clock.
	Clock clock.Clock
}

// NewHandler returns e's JSON admin API (under /api/) and web console (at
// the root) as an http.Handler for the caller to mount; see the package
// doc for the endpoints, formats and pages.
func NewHandler(e *ringwal.Engine, o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{e: e, opts: o, mux: http.NewServeMux(), now: time.Now, hosts: newHostPolicy(o)}
	if o.Clock != nil {
		h.now = o.Clock.Now
	}
	h.limit = newThrottle(h.now)
	h.mux.HandleFunc("GET /api/stats", h.stats)
	h.mux.HandleFunc("GET /api/next", h.next)
	h.mux.HandleFunc("GET /api/messages/{id}", h.getMessage)
	h.mux.HandleFunc("POST /api/messages/{id}/requeue", h.requeue)
	h.mux.HandleFunc("POST /api/messages/{id}/cancel", h.cancel)
	h.mux.HandleFunc("GET /api/messages", h.messages)
	h.mux.HandleFunc("GET /api/keys", h.keys)
	h.mux.HandleFunc("GET /api/dead-letters/keys", h.deadLetterKeys)
	h.mux.HandleFunc("POST /api/keys/{key}/pause", h.pauseKey)
	h.mux.HandleFunc("POST /api/keys/{key}/resume", h.resumeKey)
	h.mux.HandleFunc("POST /api/pause", h.pauseAll)
	h.mux.HandleFunc("POST /api/resume", h.resumeAll)
	h.mux.HandleFunc("GET /api/dead-letters", h.listDeadLetters)
	h.mux.HandleFunc("POST /api/dead-letters/purge", h.purge)
	h.mux.HandleFunc("POST /api/dead-letters/{id}/redrive", h.redrive)
	h.mux.HandleFunc("POST /api/dead-letters/{id}/purge", h.purgeOne)
	h.mux.HandleFunc("POST /api/dead-letters/{id}/review", h.review)
	h.mux.HandleFunc("GET /api/queues", h.queues)
	h.mux.HandleFunc("GET /api/queues/{queue}", h.queue)
	h.mux.HandleFunc("POST /api/queues/{queue}/pause", h.pauseQueue)
	h.mux.HandleFunc("POST /api/queues/{queue}/resume", h.resumeQueue)
	h.mux.HandleFunc("POST /api/queues/{queue}/delete", h.deleteQueue)
	h.mux.HandleFunc("GET /api/schedules", h.schedules)
	h.mux.HandleFunc("GET /api/schedules/{schedule}", h.schedule)
	h.mux.HandleFunc("POST /api/schedules/{schedule}/pause", h.pauseSchedule)
	h.mux.HandleFunc("POST /api/schedules/{schedule}/resume", h.resumeSchedule)
	h.mux.HandleFunc("POST /api/schedules/{schedule}/trigger", h.triggerSchedule)
	h.mux.HandleFunc("POST /api/schedules/{schedule}/remove", h.removeSchedule)
	h.registerBulk()
	h.registerHistory()
	h.registerBackup()
	h.con = newConsole(h)
	return h
}

type handler struct {
	e    *ringwal.Engine
	opts Options
	mux  *http.ServeMux // the JSON API
	now  func() time.Time
	con  *console

	hosts hostPolicy   // the Host check
	limit *throttle    // penalties of clients with wrong tokens
	auth  authCounters // behind ReadAuthStats
}

// ServeHTTP sends a path under /api/ to the JSON API and anything else to
// the console.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isAPIPath(r.URL.Path) {
		h.serveAPI(w, r)
		return
	}
	h.serveConsole(w, r)
}

// authorizeAPI checks an API request's Host and bearer token (the
// throttle included), and answers it in JSON when either fails.
func (h *handler) authorizeAPI(w http.ResponseWriter, r *http.Request) bool {
	if !h.checkHost(w, r, true) {
		return false
	}
	if h.opts.Token != "" {
		if ok, answered := h.checkBearer(w, r, true); answered {
			return false
		} else if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ringwal admin"`)
			replyError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return false
		}
	}
	return true
}

// isAPIPath reports whether p belongs to the JSON API.
func isAPIPath(p string) bool { return p == "/api" || strings.HasPrefix(p, "/api/") }

// serveAPI checks the Host, the token, the query size and the origin,
// then routes r. The mux's own 404 and 405 answers are plain text; they
// are turned into JSON ones. A panic is turned into a JSON 500. Its stack
// goes to the log, never to the client.
func (h *handler) serveAPI(w http.ResponseWriter, r *http.Request) {
	defer h.recoverPanic(w, r)
	if !h.authorizeAPI(w, r) {
		return
	}
	if len(r.URL.RawQuery) > MaxQuery {
		replyError(w, http.StatusRequestURITooLong, fmt.Sprintf("query longer than %d bytes", MaxQuery))
		return
	}
	if !safeMethod(r.Method) && crossOrigin(r) {
		replyError(w, http.StatusForbidden, "cross-origin request refused")
		return
	}
	if _, pattern := h.mux.Handler(r); pattern == "" {
		w = &jsonErrorWriter{ResponseWriter: w}
	}
	h.mux.ServeHTTP(w, r)
}

func (h *handler) recoverPanic(w http.ResponseWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	h.opts.Logger.Error("ringwal: admin handler panicked", "method", r.Method, "path", r.URL.Path,
		"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	if isAPIPath(r.URL.Path) {
		replyError(w, http.StatusInternalServerError, "internal error")
		return
	}
	h.errorPage(w, r, http.StatusInternalServerError, "internal error (the server's log has the details)")
}

// bearerToken is the token of r's Authorization header; "" for none or
// another scheme (never the right token: checkBearer runs only when
// Options.Token is set).
func bearerToken(r *http.Request) string {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(got)
}

// rightToken compares tok with the token in constant time.
func (h *handler) rightToken(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(h.opts.Token)) == 1
}

// checkBearer checks r's Authorization header, if it has one, through
// the throttle: a client in its penalty is answered 429 (answered true),
// a wrong token counts a failure (ok false), a right one clears the
// client's record (ok true). Without the header, ok is false and nothing
// is counted: a missing credential is no guess.
func (h *handler) checkBearer(w http.ResponseWriter, r *http.Request, api bool) (ok, answered bool) {
	if _, has := r.Header["Authorization"]; !has {
		return false, false
	}
	return h.checkCredential(w, r, bearerToken(r), api)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// crossOrigin reports whether a browser sent r from another origin: its
// Origin names another host than r's Host (an Origin that is not a URL,
// "null" included, counts as another), or, without an Origin, its
// Sec-Fetch-Site says cross-site. A request with neither (curl, the
// Client) is not cross-origin.
func crossOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return r.Header.Get("Sec-Fetch-Site") == "cross-site"
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return true
	}
	oh, op := splitHostPort(u.Host, u.Scheme)
	rh, rp := splitHostPort(r.Host, u.Scheme)
	return !strings.EqualFold(oh, rh) || op != rp
}

// splitHostPort splits hostport, filling in scheme's default port.
func splitHostPort(hostport, scheme string) (host, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.Trim(hostport, "[]"), ""
	}
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return host, port
}

// jsonErrorWriter replaces a plain-text error body with {"error": ...},
// keeping the status and the other headers (Allow on a 405).
type jsonErrorWriter struct {
	http.ResponseWriter
	wrote, replaced bool
}

func (j *jsonErrorWriter) WriteHeader(code int) {
	if j.wrote {
		return
	}
	j.wrote = true
	j.replaced = code >= 400
	if !j.replaced {
		j.ResponseWriter.WriteHeader(code)
		return
	}
	send(j.ResponseWriter, code, errorBody(http.StatusText(code)))
}

func (j *jsonErrorWriter) Write(p []byte) (int, error) {
	if !j.wrote {
		j.WriteHeader(http.StatusOK)
	}
	if j.replaced {
		return len(p), nil // the text body, replaced
	}
	return j.ResponseWriter.Write(p)
}

// errorReply is the body of every error answer.
type errorReply struct {
	Error  string `json:"error"`
	Purged int    `json:"purged,omitempty"` // a purge that failed after purging
	Count  int    `json:"count,omitempty"`  // a bulk route that failed after acting on some
}

func errorBody(msg string) []byte {
	b, _ := json.Marshal(errorReply{Error: msg})
	return append(b, '\n')
}

// reply writes v as JSON with status code.
func (h *handler) reply(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		h.opts.Logger.Error("ringwal: admin: encoding a reply", "err", err)
		code, body = http.StatusInternalServerError, errorBody("encoding the reply: "+err.Error())
	} else {
		body = append(body, '\n')
	}
	send(w, code, body)
}

func replyError(w http.ResponseWriter, code int, msg string) {
	send(w, code, errorBody(msg))
}

// send writes a JSON body with status code and the API's headers.
func send(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// fail answers an engine error with the status its sentinel calls for.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ringwal.ErrClosed):
		code = http.StatusServiceUnavailable
	case errors.Is(err, ringwal.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ringwal.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, ringwal.ErrFull):
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "1")
	}
	if code == http.StatusInternalServerError {
		h.opts.Logger.Error("ringwal: admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	replyError(w, code, err.Error())
}

func badRequest(w http.ResponseWriter, format string, args ...any) {
	replyError(w, http.StatusBadRequest, fmt.Sprintf(format, args...))
}

// pathID parses the {id} path segment; false (answered 400) if malformed.
func pathID(w http.ResponseWriter, r *http.Request) (ringwal.ID, bool) {
	s := r.PathValue("id")
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		badRequest(w, "message ID %q is not a decimal number", s)
		return 0, false
	}
	return id, true
}

// readBody decodes the request body (at most MaxBody) into v. An empty
// body leaves v alone and returns empty true. It answers the request
// itself (413 or 400) and returns false when the body is unusable.
func readBody(w http.ResponseWriter, r *http.Request, v any) (empty, ok bool) {
	body := http.MaxBytesReader(w, r.Body, MaxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return true, true
	}
	if err == nil {
		// Exactly one JSON value: anything after it but space is an error.
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("unexpected data after the JSON value")
			if terr != nil {
				err = terr
			}
		}
	}
	if err == nil {
		return false, true
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		replyError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", tooBig.Limit))
		return false, false
	}
	badRequest(w, "malformed JSON body: %v", err)
	return false, false
}

func (h *handler) stats(w http.ResponseWriter, r *http.Request) {
	s := h.e.Stats()
	if s.Closed {
		h.fail(w, r, ringwal.ErrClosed)
		return
	}
	h.reply(w, http.StatusOK, NewStatsView(s))
}

// next answers GET /api/next?n=N: Engine.Peek, the next n messages in
// scheduling order (default 10, at most MaxLimit), nothing leased.
func (h *handler) next(w http.ResponseWriter, r *http.Request) {
	n := 10
	for name, vals := range r.URL.Query() {
		if name != "n" || len(vals) > 1 {
			badRequest(w, "query: want only n, once")
			return
		}
		v, err := strconv.Atoi(vals[0])
		if err != nil || v < 0 || v > MaxLimit {
			badRequest(w, "n %q: want a number from 0 to %d", vals[0], MaxLimit)
			return
		}
		n = v
	}
	if engineClosed(h.e) {
		h.fail(w, r, ringwal.ErrClosed)
		return
	}
	out := []InfoView{}
	// Peek reads the queues' fronts: O(n), whatever the backlog.
	for _, in := range h.e.Peek(n) {
		out = append(out, NewInfoView(in))
	}
	h.reply(w, http.StatusOK, out)
}

func (h *handler) getMessage(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	info, err := h.e.Get(id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v := NewInfoView(info)
	if info.State == ringwal.Dead {
		if d, err := h.e.DeadLetter(id); err == nil { // by ID: O(1)
			dv := NewDeadLetterView(d)
			v.DeadLetter = &dv
		}
	}
	h.reply(w, http.StatusOK, v)
}

func (h *handler) requeue(w http.ResponseWriter, r *http.Request) {
	h.act(w, r, h.e.Requeue, "requeued a message", "requeued")
}

func (h *handler) redrive(w http.ResponseWriter, r *http.Request) {
	h.act(w, r, h.e.Redrive, "redrove a dead letter", "redriven")
}

// purgeOne answers POST /api/dead-letters/{id}/purge: Engine.PurgeDeadLetter.
func (h *handler) purgeOne(w http.ResponseWriter, r *http.Request) {
	h.act(w, r, h.e.PurgeDeadLetter, "purged a dead letter", "purged")
}

// act applies op to the {id} of the path, logs what it did and answers
// an ActionView.
func (h *handler) act(w http.ResponseWriter, r *http.Request, op func(ringwal.ID) error, did, status string) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if err := op(id); err != nil {
		h.fail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin "+did, "id", id)
	h.reply(w, http.StatusOK, ActionView{ID: id, Status: status})
}

// ReviewRequest is the body of POST /api/dead-letters/{id}/review
// (optional: no body is no note).
type ReviewRequest struct {
	Note string `json:"note"`
}

func (h *handler) review(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var body ReviewRequest
	if _, ok := readBody(w, r, &body); !ok {
		return
	}
	if err := h.e.MarkReviewed(id, body.Note); err != nil {
		h.fail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin reviewed a dead letter", "id", id)
	h.reply(w, http.StatusOK, ActionView{ID: id, Status: "reviewed", Note: &body.Note})
}

func (h *handler) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	q, err := ParseDeadLetterQuery(r.URL.Query(), h.now())
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	limit := q.Limit
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		badRequest(w, "limit %d: want a number from 1 to %d", limit, MaxLimit)
		return
	}
	q.Limit = limit
	page, err := NewDeadLetterPage(h.e, q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, page)
}

func (h *handler) purge(w http.ResponseWriter, r *http.Request) {
	var req PurgeRequest
	empty, ok := readBody(w, r, &req)
	if !ok {
		return
	}
	if empty {
		badRequest(w, `purge needs a JSON query body; {"all": true} purges every dead letter`)
		return
	}
	q, err := req.Query(h.now())
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	n, err := h.e.PurgeDeadLetters(q)
	if err != nil {
		if n > 0 {
			// Purged from memory, but not logged: say how many.
			h.opts.Logger.Error("ringwal: admin purge not logged", "purged", n, "err", err)
			h.reply(w, http.StatusInternalServerError, errorReply{Error: err.Error(), Purged: n})
			return
		}
		h.fail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin purged dead letters", "purged", n)
	h.reply(w, http.StatusOK, PurgeResult{Purged: n})
}
