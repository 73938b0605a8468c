package admin

// The Client's queue controls: the queues with their counts, one queue,
// and pausing, resuming and deleting one.

import (
	"context"
	"net/http"
	"time"
)

// Queues returns every declared queue, the default first (named
// DefaultQueue), then by name, each with its options, pause and counts
// (GET /api/queues).
func (c *Client) Queues(ctx context.Context) ([]QueueView, error) {
	var v []QueueView
	return v, c.do(ctx, http.MethodGet, "/api/queues", nil, nil, &v)
}

// QueueStats returns one queue's view with its counts (GET
// /api/queues/{queue}); name "" or DefaultQueue is the default queue. An
// undeclared name is ringwal.ErrNotFound.
func (c *Client) QueueStats(ctx context.Context, name string) (QueueView, error) {
	var v QueueView
	return v, c.do(ctx, http.MethodGet, "/api/queues/"+QueuePath(name), nil, nil, &v)
}

// PauseQueue holds back the delivery of the queue called name ("" or
// DefaultQueue: the default queue) until until (zero: until ResumeQueue),
// while enqueues and the other queues go on (POST
// /api/queues/{queue}/pause). A pause never shortens a longer one in
// force. An undeclared name is ringwal.ErrNotFound (nothing is declared).
func (c *Client) PauseQueue(ctx context.Context, name string, until time.Time) error {
	var v QueueActionView
	return c.do(ctx, http.MethodPost, "/api/queues/"+QueuePath(name)+"/pause", nil, untilBody(until), &v)
}

// ResumeQueue ends the queue's pause (POST /api/queues/{queue}/resume).
func (c *Client) ResumeQueue(ctx context.Context, name string) error {
	var v QueueActionView
	return c.do(ctx, http.MethodPost, "/api/queues/"+QueuePath(name)+"/resume", nil, nil, &v)
}

// DeleteQueue deletes the named queue (POST /api/queues/{queue}/delete).
// A queue that holds live messages or dead letters is refused with an
// error wrapping ErrConflict and ringwal.ErrInvalid whose message says
// how many; the default queue cannot be deleted (ringwal.ErrInvalid); an
// undeclared name is ringwal.ErrNotFound.
func (c *Client) DeleteQueue(ctx context.Context, name string) error {
	var v QueueActionView
	return c.do(ctx, http.MethodPost, "/api/queues/"+QueuePath(name)+"/delete", nil, nil, &v)
}
