package ringwal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// Limits of the admin API.
const (
	// AdminMaxBody is the largest request body the admin API reads; a
	// larger one is answered 413.
	AdminMaxBody = 1 << 20
	// AdminDefaultLimit is the page size of GET /dead-letters without a
	// limit parameter; AdminMaxLimit is the largest limit it accepts.
	AdminDefaultLimit = 100
	AdminMaxLimit     = 1000
)

// AdminHandler returns the engine's JSON admin API as an http.Handler for
// the caller to mount in its own mux.
//
// It carries NO authentication or authorisation of its own: anyone who can
// reach it can read payloads, redrive, requeue and purge. Mount it behind
// the caller's own authentication, and on an internal listener. It works
// under a prefix with http.StripPrefix:
//
//	mux.Handle("/admin/", http.StripPrefix("/admin", auth(ringwal.AdminHandler(e))))
//
// Endpoints (paths relative to where it is mounted):
//
//	GET  /stats                      Engine.Stats
//	GET  /messages/{id}              Engine.Get; a dead message also carries its dead letter
//	POST /messages/{id}/requeue      Engine.Requeue
//	GET  /dead-letters               Engine.DeadLetters, paged: {"entries": [...], "next": "cursor"}
//	POST /dead-letters/{id}/redrive  Engine.Redrive
//	POST /dead-letters/{id}/review   Engine.MarkReviewed; body {"note": "..."} (optional)
//	POST /dead-letters/purge         Engine.PurgeDeadLetters; body: a query; answers {"purged": n}
//
// GET /dead-letters takes these query parameters, all optional:
// category (repeatable or comma-separated; names as classify.ParseCategory
// reads them), key, since and until (RFC 3339, on the dead-letter time:
// since ≤ t < until), reviewed (true or false), after (the next cursor of
// the previous page) and limit (1 to AdminMaxLimit, default
// AdminDefaultLimit). The answer's next is present when there may be more:
// pass it as after. Unknown or repeated parameters are refused.
//
// The purge body is a JSON object with the same fields: {"category":
// ["poison"], "key": "...", "since": "...", "until": "...", "reviewed":
// true, "after": "...", "limit": n} (limit 0 or absent: no limit). A query
// without any filter would purge every dead letter, so it is refused
// unless it also says "all": true.
//
// Formats: requests and answers are JSON (unknown fields in a request body
// are refused). Field names are snake_case; IDs are JSON numbers; payloads
// are base64 (encoding/json's []byte); times are RFC 3339 strings, omitted
// when zero; durations are float seconds in fields whose names end in
// _seconds; priorities, states and categories are their lower-case names.
//
// Errors are answered {"error": "..."} with status 400 for bad input
// (malformed JSON, a bad ID, bad query parameters), 404 for an unknown ID
// or path (errors.Is(err, ErrNotFound)), 405 for a wrong method, 413 for a
// body over AdminMaxBody, 503 once the engine is closed (ErrClosed) or,
// with Retry-After, when it is full (ErrFull), and 500 otherwise.
//
// Operator actions (requeue, redrive, review, purge) are logged at Info on
// Options.Logger. The handler is safe for concurrent use.
func AdminHandler(e *Engine) http.Handler {
	a := &admin{e: e, mux: http.NewServeMux()}
	a.mux.HandleFunc("GET /stats", a.stats)
	a.mux.HandleFunc("GET /messages/{id}", a.getMessage)
	a.mux.HandleFunc("POST /messages/{id}/requeue", a.requeue)
	a.mux.HandleFunc("GET /dead-letters", a.listDeadLetters)
	a.mux.HandleFunc("POST /dead-letters/purge", a.purge)
	a.mux.HandleFunc("POST /dead-letters/{id}/redrive", a.redrive)
	a.mux.HandleFunc("POST /dead-letters/{id}/review", a.review)
	return a
}

type admin struct {
	e   *Engine
	mux *http.ServeMux
}

// ServeHTTP routes r; the mux's own 404 and 405 answers (plain text) are
// turned into JSON ones.
func (a *admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := a.mux.Handler(r); pattern == "" {
		w = &jsonErrorWriter{ResponseWriter: w}
	}
	a.mux.ServeHTTP(w, r)
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
	body := errorBody(http.StatusText(code))
	h := j.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	j.ResponseWriter.WriteHeader(code)
	_, _ = j.ResponseWriter.Write(body)
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

func errorBody(msg string) []byte {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	return append(b, '\n')
}

// reply writes v as JSON with status code.
func (a *admin) reply(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		a.e.opts.Logger.Error("ringwal: admin: encoding a reply", "err", err)
		code, body = http.StatusInternalServerError, errorBody("encoding the reply: "+err.Error())
	} else {
		body = append(body, '\n')
	}
	send(w, code, body)
}

func (a *admin) replyError(w http.ResponseWriter, code int, msg string) {
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
func (a *admin) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrClosed):
		code = http.StatusServiceUnavailable
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, ErrFull):
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "1")
	}
	if code == http.StatusInternalServerError {
		a.e.opts.Logger.Error("ringwal: admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	a.replyError(w, code, err.Error())
}

// badRequest answers 400.
func (a *admin) badRequest(w http.ResponseWriter, format string, args ...any) {
	a.replyError(w, http.StatusBadRequest, fmt.Sprintf(format, args...))
}

// pathID parses the {id} path segment; false (answered 400) if malformed.
func (a *admin) pathID(w http.ResponseWriter, r *http.Request) (ID, bool) {
	s := r.PathValue("id")
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		a.badRequest(w, "message ID %q is not a decimal number", s)
		return 0, false
	}
	return ID(id), true
}

// readBody decodes the request body (at most AdminMaxBody) into v. An
// empty body leaves v alone and returns empty true. It answers the request
// itself (413 or 400) and returns false when the body is unusable.
func (a *admin) readBody(w http.ResponseWriter, r *http.Request, v any) (empty, ok bool) {
	body := http.MaxBytesReader(w, r.Body, AdminMaxBody)
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
		a.replyError(w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("request body larger than %d bytes", tooBig.Limit))
		return false, false
	}
	a.badRequest(w, "malformed JSON body: %v", err)
	return false, false
}

func (a *admin) stats(w http.ResponseWriter, r *http.Request) {
	if err := a.e.usable(); err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, http.StatusOK, statsView(a.e.Stats(), a.e.log != nil))
}

func (a *admin) getMessage(w http.ResponseWriter, r *http.Request) {
	id, ok := a.pathID(w, r)
	if !ok {
		return
	}
	info, err := a.e.Get(id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	v := infoView(info)
	if info.State == Dead {
		if d, ok := a.e.dead.Get(uint64(id)); ok {
			dv := deadLetterView(d)
			v.DeadLetter = &dv
		}
	}
	a.reply(w, http.StatusOK, v)
}

func (a *admin) requeue(w http.ResponseWriter, r *http.Request) {
	a.act(w, r, a.e.Requeue, "requeued a message", "requeued")
}

func (a *admin) redrive(w http.ResponseWriter, r *http.Request) {
	a.act(w, r, a.e.Redrive, "redrove a dead letter", "redriven")
}

// act applies op to the {id} of the path, logs what it did and answers
// {"id": id, "status": status}.
func (a *admin) act(w http.ResponseWriter, r *http.Request, op func(ID) error, did, status string) {
	id, ok := a.pathID(w, r)
	if !ok {
		return
	}
	if err := op(id); err != nil {
		a.fail(w, r, err)
		return
	}
	a.e.opts.Logger.Info("ringwal: admin "+did, "id", uint64(id))
	a.reply(w, http.StatusOK, actionView{ID: id, Status: status})
}

func (a *admin) review(w http.ResponseWriter, r *http.Request) {
	id, ok := a.pathID(w, r)
	if !ok {
		return
	}
	var body struct {
		Note string `json:"note"`
	}
	if _, ok := a.readBody(w, r, &body); !ok {
		return
	}
	if err := a.e.MarkReviewed(id, body.Note); err != nil {
		a.fail(w, r, err)
		return
	}
	a.e.opts.Logger.Info("ringwal: admin reviewed a dead letter", "id", uint64(id))
	a.reply(w, http.StatusOK, actionView{ID: id, Status: "reviewed", Note: &body.Note})
}

func (a *admin) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	q, err := parseDeadLetterParams(r.URL.Query())
	if err != nil {
		a.badRequest(w, "%v", err)
		return
	}
	limit := q.Limit
	q.Limit = limit + 1 // one more tells whether there is a next page
	ds, err := a.e.DeadLetters(q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page := deadLetterPage{Entries: make([]deadLetterJSON, 0, min(len(ds), limit))}
	if len(ds) > limit {
		ds = ds[:limit]
		page.Next = strconv.FormatUint(ds[limit-1].ID, 10)
	}
	for _, d := range ds {
		page.Entries = append(page.Entries, deadLetterView(d))
	}
	a.reply(w, http.StatusOK, page)
}

// purgeRequest is the body of POST /dead-letters/purge.
type purgeRequest struct {
	Category stringList `json:"category"`
	Key      string     `json:"key"`
	Since    string     `json:"since"`
	Until    string     `json:"until"`
	Reviewed *bool      `json:"reviewed"`
	After    cursor     `json:"after"`
	Limit    int        `json:"limit"`
	All      bool       `json:"all"`
}

func (a *admin) purge(w http.ResponseWriter, r *http.Request) {
	var req purgeRequest
	empty, ok := a.readBody(w, r, &req)
	if !ok {
		return
	}
	if empty {
		a.badRequest(w, `purge needs a JSON query body; {"all": true} purges every dead letter`)
		return
	}
	q, err := req.query()
	if err != nil {
		a.badRequest(w, "%v", err)
		return
	}
	if !req.All && len(q.Categories) == 0 && q.Key == "" && q.Since.IsZero() && q.Until.IsZero() &&
		q.Reviewed == dlq.Any && q.After == 0 && q.Limit == 0 {
		a.badRequest(w, `an empty query would purge every dead letter; add "all": true to mean that`)
		return
	}
	n, err := a.e.PurgeDeadLetters(q)
	if err != nil {
		if n > 0 {
			// Purged from memory, but not logged: say how many.
			a.e.opts.Logger.Error("ringwal: admin purge not logged", "purged", n, "err", err)
			a.reply(w, http.StatusInternalServerError, struct {
				Error  string `json:"error"`
				Purged int    `json:"purged"`
			}{err.Error(), n})
			return
		}
		a.fail(w, r, err)
		return
	}
	a.e.opts.Logger.Info("ringwal: admin purged dead letters", "purged", n)
	a.reply(w, http.StatusOK, struct {
		Purged int `json:"purged"`
	}{n})
}

func (p *purgeRequest) query() (dlq.Query, error) {
	q := dlq.Query{Key: p.Key, After: uint64(p.After), Limit: p.Limit}
	var err error
	if q.Categories, err = parseCategories(p.Category); err != nil {
		return q, err
	}
	if q.Since, err = parseTime("since", p.Since); err != nil {
		return q, err
	}
	if q.Until, err = parseTime("until", p.Until); err != nil {
		return q, err
	}
	if p.Reviewed != nil {
		q.Reviewed = reviewFilter(*p.Reviewed)
	}
	if p.Limit < 0 {
		return q, fmt.Errorf("limit %d is negative", p.Limit)
	}
	return q, nil
}

// parseDeadLetterParams reads GET /dead-letters' query parameters. The
// Limit it returns is the page size (never 0).
func parseDeadLetterParams(v url.Values) (dlq.Query, error) {
	q := dlq.Query{Limit: AdminDefaultLimit}
	for name, vals := range v {
		switch name {
		case "category":
			continue
		case "key", "since", "until", "reviewed", "after", "limit":
			if len(vals) > 1 {
				return q, fmt.Errorf("query parameter %q given %d times", name, len(vals))
			}
		default:
			return q, fmt.Errorf("unknown query parameter %q (want category, key, since, until, reviewed, after, limit)", name)
		}
	}
	var err error
	if q.Categories, err = parseCategories(v["category"]); err != nil {
		return q, err
	}
	q.Key = v.Get("key")
	if q.Since, err = parseTime("since", v.Get("since")); err != nil {
		return q, err
	}
	if q.Until, err = parseTime("until", v.Get("until")); err != nil {
		return q, err
	}
	if s := v.Get("reviewed"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return q, fmt.Errorf("reviewed %q: want true or false", s)
		}
		q.Reviewed = reviewFilter(b)
	}
	if s := v.Get("after"); s != "" {
		if q.After, err = parseCursor(s); err != nil {
			return q, err
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > AdminMaxLimit {
			return q, fmt.Errorf("limit %q: want a number from 1 to %d", s, AdminMaxLimit)
		}
		q.Limit = n
	}
	return q, nil
}

func parseCategories(vals []string) ([]classify.Category, error) {
	var out []classify.Category
	for _, v := range vals {
		for _, name := range strings.Split(v, ",") {
			c, err := classify.ParseCategory(strings.TrimSpace(name))
			if err != nil {
				return nil, fmt.Errorf("category: %w", err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func parseTime(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 time (like 2006-01-02T15:04:05Z)", name, s)
	}
	return t, nil
}

func parseCursor(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("after %q is not a cursor (the next of a previous page)", s)
	}
	return n, nil
}

func reviewFilter(reviewed bool) dlq.Review {
	if reviewed {
		return dlq.OnlyReviewed
	}
	return dlq.OnlyUnreviewed
}

// stringList is a JSON string or array of strings.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = stringList{s}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

// cursor is a paging cursor in a JSON body: the string of a page's next,
// or a number.
type cursor uint64

func (c *cursor) UnmarshalJSON(b []byte) error {
	var s string
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(bytes.TrimSpace(b))
	}
	if s == "" || s == "null" {
		*c = 0
		return nil
	}
	n, err := parseCursor(s)
	*c = cursor(n)
	return err
}
