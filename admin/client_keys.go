package admin

// The Client's key controls: keys, pauses, cancel and live messages.

import (
	"context"
	"net/http"
	"time"

	"github.com/ringwal/ringwal"
)

// Keys returns every key the engine knows, with its pause, waiting and
// held messages and breaker state (GET /api/keys; see NewKeyViews).
func (c *Client) Keys(ctx context.Context) ([]KeyView, error) {
	var v []KeyView
	return v, c.do(ctx, http.MethodGet, "/api/keys", nil, nil, &v)
}

// DeadLetterKeys returns how many dead letters each key has (GET
// /api/dead-letters/keys; Engine.DeadLetterKeys).
func (c *Client) DeadLetterKeys(ctx context.Context) (map[string]int, error) {
	v := map[string]int{}
	return v, c.do(ctx, http.MethodGet, "/api/dead-letters/keys", nil, nil, &v)
}

// untilBody is the PauseRequest for until (zero: until resumed).
func untilBody(until time.Time) PauseRequest {
	if until.IsZero() {
		return PauseRequest{}
	}
	return PauseRequest{Until: until.Format(time.RFC3339Nano)}
}

// PauseKey holds back delivery of key's messages until until (zero: until
// ResumeKey) (POST /api/keys/{key}/pause). The answer says the pause in
// force afterwards; a pause never shortens a longer one.
func (c *Client) PauseKey(ctx context.Context, key string, until time.Time) (PauseView, error) {
	var v PauseView
	return v, c.do(ctx, http.MethodPost, "/api/keys/"+KeyPath(key)+"/pause", nil, untilBody(until), &v)
}

// ResumeKey ends key's pause (POST /api/keys/{key}/resume).
func (c *Client) ResumeKey(ctx context.Context, key string) (PauseView, error) {
	var v PauseView
	return v, c.do(ctx, http.MethodPost, "/api/keys/"+KeyPath(key)+"/resume", nil, nil, &v)
}

// Pause holds back all delivery until until (zero: until Resume); enqueue
// continues (POST /api/pause).
func (c *Client) Pause(ctx context.Context, until time.Time) (PauseView, error) {
	var v PauseView
	return v, c.do(ctx, http.MethodPost, "/api/pause", nil, untilBody(until), &v)
}

// Resume ends a pause of all delivery (POST /api/resume).
func (c *Client) Resume(ctx context.Context) (PauseView, error) {
	var v PauseView
	return v, c.do(ctx, http.MethodPost, "/api/resume", nil, nil, &v)
}

// Cancel removes a live message for good; a leased one has its handler's
// ctx cancelled and its lease ended (POST /api/messages/{id}/cancel). A
// dead letter is ringwal.ErrInvalid, an unknown ID ringwal.ErrNotFound.
func (c *Client) Cancel(ctx context.Context, id ringwal.ID) (ActionView, error) {
	var v ActionView
	return v, c.do(ctx, http.MethodPost, "/api/messages/"+idPath(id)+"/cancel", nil, nil, &v)
}

// Messages returns one page of the live messages q selects (GET
// /api/messages): q.Limit is the page size (0: DefaultLimit; at most
// MaxLimit), and the page's Next, passed as q.After, gets the next page.
func (c *Client) Messages(ctx context.Context, q MessageQuery) (MessagePage, error) {
	var v MessagePage
	return v, c.do(ctx, http.MethodGet, "/api/messages", q.Values(), nil, &v)
}
