package admin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/dlq"
)

// CountDeadLetters counts the dead letters q matches (GET
// /api/dead-letters/count) and returns the count with its mark: set
// q.Through to the mark (ParseMark reads CountView.Through) and
// RedriveMatching or ReviewMatching act on exactly those counted.
func (c *Client) CountDeadLetters(ctx context.Context, q dlq.Query) (CountView, error) {
	var v CountView
	err := c.do(ctx, http.MethodGet, "/api/dead-letters/count", bulkDeadValues(q), nil, &v)
	return v, err
}

// RedriveMatching redrives the dead letters q matches, up to q.Through,
// which is required (a CountDeadLetters mark; 0 acts on nothing): POST
// /api/dead-letters/redrive. It returns how many it redrove; a failure
// part-way is an *Error whose Count says how many it did.
func (c *Client) RedriveMatching(ctx context.Context, q dlq.Query) (BulkResult, error) {
	return c.bulk(ctx, "/api/dead-letters/redrive", bulkDeadValues(q), nil)
}

// ReviewMatching marks the dead letters q matches, up to q.Through (as
// RedriveMatching), reviewed with note: POST /api/dead-letters/review.
func (c *Client) ReviewMatching(ctx context.Context, q dlq.Query, note string) (BulkResult, error) {
	return c.bulk(ctx, "/api/dead-letters/review", bulkDeadValues(q), ReviewRequest{Note: note})
}

// CountMessages counts the live messages q's queue, key and states match
// (GET /api/messages/count; q's After and Limit must be zero) and returns
// the count with its mark for CancelMatching.
func (c *Client) CountMessages(ctx context.Context, q MessageQuery) (CountView, error) {
	var v CountView
	err := c.do(ctx, http.MethodGet, "/api/messages/count", q.Values(), nil, &v)
	return v, err
}

// CancelMatching cancels the live messages q matches up to through (a
// CountMessages mark; 0 acts on nothing): POST /api/messages/cancel.
func (c *Client) CancelMatching(ctx context.Context, q MessageQuery, through ringwal.ID) (BulkResult, error) {
	v := q.Values()
	v.Set("through", strconv.FormatUint(through, 10))
	return c.bulk(ctx, "/api/messages/cancel", v, nil)
}

// ParseMark reads a CountView's Through.
func ParseMark(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errors.New("through " + strconv.Quote(s) + " is not a mark")
	}
	return n, nil
}

func bulkDeadValues(q dlq.Query) url.Values { return DeadLetterQueryValues(q) }

func (c *Client) bulk(ctx context.Context, path string, v url.Values, body any) (BulkResult, error) {
	if _, ok := v["through"]; !ok {
		v.Set("through", "0") // the server requires one; 0 acts on nothing
	}
	var res BulkResult
	err := c.do(ctx, http.MethodPost, path, v, body, &res)
	var ae *Error
	if errors.As(err, &ae) {
		res.Count = ae.Count
	}
	return res, err
}
