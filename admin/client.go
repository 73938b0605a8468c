package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/dlq"
)

// Sentinels of the answers that have no ringwal sentinel; see Error.
var (
	ErrUnauthorized = errors.New("admin: unauthorized")       // 401: missing or wrong token
	ErrForbidden    = errors.New("admin: forbidden")          // 403: cross-origin request or Host refused
	ErrProtocol     = errors.New("admin: unexpected answer")  // an answer that is not the API's JSON
	ErrUnavailable  = errors.New("admin: server error")       // any other 5xx
	errMethod       = errors.New("admin: method not allowed") // 405, a client bug
	errOther        = errors.New("admin: request failed")     // any other 4xx
)

// ErrConflict is a 409: the engine refused an action the state it is in
// forbids (DeleteQueue of a queue that still holds messages). An *Error
// that wraps it wraps ringwal.ErrInvalid too, as the engine's error does;
// TriggerSchedule's (a run its message's DedupID refuses) wraps
// ringwal.ErrDuplicate instead.
var ErrConflict = errors.New("admin: conflict")

// ErrThrottled is a 429: the client's address sent a wrong token a moment
// ago and must wait (the answer's Retry-After, at most 2s) before a token
// of its is checked again. An *Error that wraps it wraps ErrUnauthorized
// too.
var ErrThrottled = errors.New("admin: too many wrong tokens")

// Error is an error answer of the admin API. It wraps the sentinel its
// status calls for, so errors.Is works across the wire as it does on the
// engine. A 404 wraps ringwal.ErrNotFound. A 400 or 413 wraps
// ringwal.ErrInvalid. A 503 wraps ringwal.ErrFull when it carries
// Retry-After, else ringwal.ErrClosed. A 409 wraps ErrConflict and
// ringwal.ErrInvalid. A 401 wraps ErrUnauthorized. A 429 wraps
// ErrThrottled and ErrUnauthorized. A 403 wraps ErrForbidden. Any other
// 5xx wraps ErrUnavailable. An error answer that is not the API's JSON
// wraps ErrProtocol, whatever its status: a wrong base URL, say, or a
// proxy's page.
type Error struct {
	Status  int    // the HTTP status
	Message string // the server's error text
	Purged  int    // for a purge that failed after purging: how many it purged
	Count   int    // for a bulk route that failed part-way: how many it did
	err     error
}

// Error returns the server's message with the status.
func (e *Error) Error() string {
	return fmt.Sprintf("admin API: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Unwrap returns the sentinel of the status.
func (e *Error) Unwrap() error { return e.err }

// Client calls an admin API over HTTP. Its methods mirror the endpoints
// and return the same views; it is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// ClientOption configures NewClient.
type ClientOption func(*Client)

// WithToken sends token as the bearer token (Options.Token of the
// handler).
func WithToken(token string) ClientOption { return func(c *Client) { c.token = token } }

// WithHTTPClient sends the requests through hc instead of
// http.DefaultClient.
func WithHTTPClient(hc *http.Client) ClientOption { return func(c *Client) { c.hc = hc } }

// NewClient returns a client of the admin API mounted at baseURL (the
// handler's root: "http://127.0.0.1:9464" for `ringwal serve`, or the
// prefix it is mounted under).
func NewClient(baseURL string, opts ...ClientOption) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Stats returns the engine's statistics (GET /api/stats).
func (c *Client) Stats(ctx context.Context) (StatsView, error) {
	var v StatsView
	return v, c.do(ctx, http.MethodGet, "/api/stats", nil, nil, &v)
}

// Next returns the next n messages in scheduling order, nothing leased
// (GET /api/next, Engine.Peek); n is at most MaxLimit.
func (c *Client) Next(ctx context.Context, n int) ([]InfoView, error) {
	var v []InfoView
	return v, c.do(ctx, http.MethodGet, "/api/next", url.Values{"n": {strconv.Itoa(n)}}, nil, &v)
}

// Get returns a message (GET /api/messages/{id}); a dead one carries its
// dead letter.
func (c *Client) Get(ctx context.Context, id ringwal.ID) (InfoView, error) {
	var v InfoView
	return v, c.do(ctx, http.MethodGet, "/api/messages/"+idPath(id), nil, nil, &v)
}

// Requeue makes a leased, held or delayed message pending now (POST
// /api/messages/{id}/requeue).
func (c *Client) Requeue(ctx context.Context, id ringwal.ID) (ActionView, error) {
	var v ActionView
	return v, c.do(ctx, http.MethodPost, "/api/messages/"+idPath(id)+"/requeue", nil, nil, &v)
}

// DeadLetters returns one page of the dead letters q matches (GET
// /api/dead-letters): q.Limit is the page size (0: the server's
// DefaultLimit; at most MaxLimit), and the page's Next, passed as q.After,
// gets the next page.
func (c *Client) DeadLetters(ctx context.Context, q dlq.Query) (DeadLetterPage, error) {
	var v DeadLetterPage
	return v, c.do(ctx, http.MethodGet, "/api/dead-letters", DeadLetterQueryValues(q), nil, &v)
}

// Redrive makes a dead letter pending again, attempts reset (POST
// /api/dead-letters/{id}/redrive).
func (c *Client) Redrive(ctx context.Context, id ringwal.ID) (ActionView, error) {
	var v ActionView
	return v, c.do(ctx, http.MethodPost, "/api/dead-letters/"+idPath(id)+"/redrive", nil, nil, &v)
}

// PurgeDeadLetter deletes one dead letter for good (POST
// /api/dead-letters/{id}/purge; Engine.PurgeDeadLetter).
func (c *Client) PurgeDeadLetter(ctx context.Context, id ringwal.ID) (ActionView, error) {
	var v ActionView
	return v, c.do(ctx, http.MethodPost, "/api/dead-letters/"+idPath(id)+"/purge", nil, nil, &v)
}

// Review marks a dead letter reviewed with a note (POST
// /api/dead-letters/{id}/review).
func (c *Client) Review(ctx context.Context, id ringwal.ID, note string) (ActionView, error) {
	var v ActionView
	return v, c.do(ctx, http.MethodPost, "/api/dead-letters/"+idPath(id)+"/review", nil, ReviewRequest{Note: note}, &v)
}

// Purge deletes the dead letters q matches (POST
// /api/dead-letters/purge); q.Limit 0 is no limit. An empty q is refused
// (ringwal.ErrInvalid): use PurgeAll. On an error the result still says
// how many were purged, if any.
func (c *Client) Purge(ctx context.Context, q dlq.Query) (PurgeResult, error) {
	return c.purge(ctx, NewPurgeRequest(q))
}

// PurgeAll deletes every dead letter.
func (c *Client) PurgeAll(ctx context.Context) (PurgeResult, error) {
	return c.purge(ctx, PurgeRequest{All: true})
}

func (c *Client) purge(ctx context.Context, req PurgeRequest) (PurgeResult, error) {
	var v PurgeResult
	err := c.do(ctx, http.MethodPost, "/api/dead-letters/purge", nil, req, &v)
	var ae *Error
	if errors.As(err, &ae) {
		v.Purged = ae.Purged
	}
	return v, err
}

func idPath(id ringwal.ID) string { return strconv.FormatUint(id, 10) }

// do sends one request and decodes the answer into out, or returns an
// *Error.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("admin client: encoding the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("admin client: %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		return answerError(resp, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &Error{Status: resp.StatusCode, Message: fmt.Sprintf("decoding the answer: %v", err), err: ErrProtocol}
	}
	return nil
}

// answerError turns an error answer into an *Error.
func answerError(resp *http.Response, raw []byte) error {
	var body errorReply
	e := &Error{Status: resp.StatusCode}
	if json.Unmarshal(raw, &body) == nil && body.Error != "" {
		e.Message, e.Purged, e.Count = body.Error, body.Purged, body.Count
	} else {
		// Not the API's answer (a wrong base URL, a proxy): the status
		// says nothing about the engine.
		e.Message = strings.TrimSpace(string(raw))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200] + "…"
		}
		e.err = ErrProtocol
		return e
	}
	switch code := resp.StatusCode; {
	case code == http.StatusNotFound:
		e.err = ringwal.ErrNotFound
	case code == http.StatusBadRequest || code == http.StatusRequestEntityTooLarge:
		e.err = ringwal.ErrInvalid
	case code == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
		e.err = ringwal.ErrFull
	case code == http.StatusServiceUnavailable:
		e.err = ringwal.ErrClosed
	case code == http.StatusConflict:
		e.err = fmt.Errorf("%w (%w)", ErrConflict, ringwal.ErrInvalid)
	case code == http.StatusUnauthorized:
		e.err = ErrUnauthorized
	case code == http.StatusTooManyRequests:
		e.err = fmt.Errorf("%w (%w)", ErrThrottled, ErrUnauthorized)
	case code == http.StatusForbidden:
		e.err = ErrForbidden
	case code == http.StatusMethodNotAllowed:
		e.err = errMethod
	case code >= 500:
		e.err = ErrUnavailable
	default:
		e.err = errOther
	}
	return e
}
