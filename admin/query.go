package admin

// The query grammar of dead-letter filters, shared by GET
// /api/dead-letters, the purge body, the Client and cmd/ringwal's flags.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// Limits of the admin API.
const (
	// MaxBody is the largest request body the handler reads; a larger one
	// is answered 413.
	MaxBody = 1 << 20
	// DefaultLimit is the page size of GET /api/dead-letters without a
	// limit parameter; MaxLimit is the largest limit it accepts.
	DefaultLimit = 100
	MaxLimit     = 1000
	// MaxQuery is the longest query string (the part after "?") the
	// handler reads; a longer one is answered 414.
	MaxQuery = 4096
	// MaxForm is the largest console form body (a review note, a purge
	// confirmation); a larger one is answered 413.
	MaxForm = 64 << 10
)

// maxSearchText bounds a search's text: a needle is compared at every
// position of every field it walks.
const maxSearchText = 256

// QueryParams are the parameters ParseDeadLetterQuery reads.
var QueryParams = []string{"queue", "category", "key", "since", "until", "reviewed", "after", "limit", "through", "text"}

// ParseDeadLetterQuery reads dead-letter filters from v:
//
//	queue     the queue's admin name: absent every queue, DefaultQueue the default one
//	category  repeatable or comma-separated; names as classify.ParseCategory reads them
//	key       the breaker key
//	since     dead-lettered at or after this time (see parseTime)
//	until     dead-lettered before this time (see parseTime)
//	reviewed  true or false (see parseReviewed)
//	after     the cursor: the next of the previous page (an entry's ID)
//	limit     at most this many entries, a positive number
//	through   only entries added up to this mark (a count's through, see
//	          CountView; dlq.Query.Through): what was counted, none since
//	text      a search: the entries where it occurs, without regard to
//	          case, in the key, queue, errors or headers (dlq.Query.Text)
//
// All are optional; a relative since or until is taken back from now. A
// missing limit leaves Limit 0 (the caller chooses: the handler pages by
// DefaultLimit). Unknown or repeated parameters, and since after until,
// are refused.
//
// The query's Queue is the admin name: DefaultQueue stands for the
// default queue. dlq.Query cannot select the default queue alone; its ""
// is every queue. So give such a query to NewDeadLetterPage, not to the
// engine.
func ParseDeadLetterQuery(v url.Values, now time.Time) (dlq.Query, error) {
	var q dlq.Query
	for name, vals := range v {
		switch name {
		case "category":
			continue
		case "queue", "key", "since", "until", "reviewed", "after", "limit", "through", "text":
			if len(vals) > 1 {
				return q, fmt.Errorf("query parameter %q given %d times", name, len(vals))
			}
		default:
			return q, fmt.Errorf("unknown query parameter %q (want %s)", name, strings.Join(QueryParams, ", "))
		}
	}
	var err error
	if q.Categories, err = parseCategories(v["category"]); err != nil {
		return q, err
	}
	q.Queue, q.Key, q.Text = v.Get("queue"), v.Get("key"), v.Get("text")
	if len(q.Text) > maxSearchText {
		return q, fmt.Errorf("text of %d bytes: at most %d", len(q.Text), maxSearchText)
	}
	if q.Since, err = parseTime("since", v.Get("since"), now); err != nil {
		return q, err
	}
	if q.Until, err = parseTime("until", v.Get("until"), now); err != nil {
		return q, err
	}
	if err := checkWindow(q); err != nil {
		return q, err
	}
	if q.Reviewed, err = parseReviewed(v.Get("reviewed")); err != nil {
		return q, err
	}
	if q.After, err = ParseCursor(v.Get("after")); err != nil {
		return q, err
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return q, fmt.Errorf("limit %q: want a positive number", s)
		}
		q.Limit = n
	}
	if s := v.Get("through"); s != "" {
		if q.Through, err = strconv.ParseUint(s, 10, 64); err != nil {
			return q, fmt.Errorf("through %q is not a mark (a count's through)", s)
		}
	}
	return q, nil
}

// DeadLetterQueryValues is ParseDeadLetterQuery's inverse: q as query
// parameters (times in RFC 3339 with nanoseconds).
func DeadLetterQueryValues(q dlq.Query) url.Values {
	v := url.Values{}
	if q.Queue != "" {
		v.Set("queue", q.Queue)
	}
	for _, c := range q.Categories {
		v.Add("category", c.String())
	}
	if q.Key != "" {
		v.Set("key", q.Key)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.Format(time.RFC3339Nano))
	}
	switch q.Reviewed {
	case dlq.OnlyReviewed:
		v.Set("reviewed", "true")
	case dlq.OnlyUnreviewed:
		v.Set("reviewed", "false")
	}
	if q.After != 0 {
		v.Set("after", strconv.FormatUint(q.After, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Through != 0 {
		v.Set("through", strconv.FormatUint(q.Through, 10))
	}
	if q.Text != "" {
		v.Set("text", q.Text)
	}
	return v
}

// parseCategories reads category names, each value one name or several
// separated by commas.
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

// parseTime reads the time parameter name: an RFC 3339 time
// (2006-01-02T15:04:05Z, fractional seconds and zone offsets allowed), or
// a non-negative duration such as 24h or 90m meaning that long before now.
// "" is the zero time (no bound).
func parseTime(name, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%s %q is neither an RFC 3339 time (like 2006-01-02T15:04:05Z) nor a duration ago (like 24h)", name, s)
}

// parseReviewed reads the reviewed parameter: true (only reviewed), false
// (only unreviewed) or "" (either).
func parseReviewed(s string) (dlq.Review, error) {
	if s == "" {
		return dlq.Any, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return dlq.Any, fmt.Errorf("reviewed %q: want true or false", s)
	}
	if b {
		return dlq.OnlyReviewed, nil
	}
	return dlq.OnlyUnreviewed, nil
}

// ParseCursor reads a paging cursor (a page's next); "" is 0, the start.
func ParseCursor(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("after %q is not a cursor (the next of a previous page)", s)
	}
	return n, nil
}

func checkWindow(q dlq.Query) error {
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Since.After(q.Until) {
		return fmt.Errorf("since %s is after until %s", q.Since.Format(time.RFC3339Nano), q.Until.Format(time.RFC3339Nano))
	}
	return nil
}

// PurgeRequest is the body of POST /api/dead-letters/purge: the filters of
// ParseDeadLetterQuery as JSON fields, with reviewed a boolean and limit 0
// (or absent) meaning no limit. A request without any filter would purge
// every dead letter, so it is refused unless All is set.
type PurgeRequest struct {
	// Queue is a named queue's name; DefaultQueue is refused, as the
	// engine cannot purge the default queue's dead letters apart.
	Queue    string  `json:"queue,omitempty"`
	Category Strings `json:"category,omitempty"`
	Key      string  `json:"key,omitempty"`
	Since    string  `json:"since,omitempty"`
	Until    string  `json:"until,omitempty"`
	Reviewed *bool   `json:"reviewed,omitempty"`
	After    Cursor  `json:"after,omitempty"`
	Limit    int     `json:"limit,omitempty"`
	All      bool    `json:"all,omitempty"`
	// Through is a count's mark (CountView.Through): the purge takes the
	// dead letters that count counted, never one added since.
	Through uint64 `json:"through,omitempty"`
	// Text is a search (dlq.Query.Text).
	Text string `json:"text,omitempty"`
}

// NewPurgeRequest returns the request that purges what q matches. A q
// with no filter but a count's mark (Through) is a purge of everything
// that count counted: All is set.
func NewPurgeRequest(q dlq.Query) PurgeRequest {
	v := DeadLetterQueryValues(q)
	r := PurgeRequest{Queue: q.Queue, Category: v["category"], Key: q.Key, Since: v.Get("since"), Until: v.Get("until"),
		After: Cursor(q.After), Limit: q.Limit, Through: q.Through, Text: q.Text}
	if q.Reviewed != dlq.Any {
		b := q.Reviewed == dlq.OnlyReviewed
		r.Reviewed = &b
	}
	unfiltered := q
	unfiltered.Through = 0
	r.All = q.Through != 0 && emptyQuery(unfiltered)
	return r
}

// Query returns the request's dead-letter query (relative times taken
// back from now), refusing an empty one unless All is set.
func (p PurgeRequest) Query(now time.Time) (dlq.Query, error) {
	q := dlq.Query{Queue: p.Queue, Key: p.Key, After: uint64(p.After), Limit: p.Limit, Through: p.Through, Text: p.Text}
	if len(q.Text) > maxSearchText {
		return q, fmt.Errorf("text of %d bytes: at most %d", len(q.Text), maxSearchText)
	}
	if p.Queue == DefaultQueue {
		return q, errDefaultQueuePurge
	}
	var err error
	if q.Categories, err = parseCategories(p.Category); err != nil {
		return q, err
	}
	if q.Since, err = parseTime("since", p.Since, now); err != nil {
		return q, err
	}
	if q.Until, err = parseTime("until", p.Until, now); err != nil {
		return q, err
	}
	if err := checkWindow(q); err != nil {
		return q, err
	}
	if p.Reviewed != nil {
		q.Reviewed = dlq.OnlyUnreviewed
		if *p.Reviewed {
			q.Reviewed = dlq.OnlyReviewed
		}
	}
	if p.Limit < 0 {
		return q, fmt.Errorf("limit %d is negative", p.Limit)
	}
	if !p.All && emptyQuery(q) {
		return q, fmt.Errorf(`an empty query would purge every dead letter; add "all": true to mean that`)
	}
	return q, nil
}

// Strings is a JSON string or array of strings.
type Strings []string

// UnmarshalJSON reads a string or an array of strings.
func (l *Strings) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = Strings{s}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

// Cursor is a paging cursor in a JSON body: a page's next as a string, or
// a number. It is written as a string.
type Cursor uint64

// MarshalJSON writes the cursor as a string, as a page's next.
func (c Cursor) MarshalJSON() ([]byte, error) {
	return json.Marshal(strconv.FormatUint(uint64(c), 10))
}

// UnmarshalJSON reads a string or a number.
func (c *Cursor) UnmarshalJSON(b []byte) error {
	var s string
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(bytes.TrimSpace(b))
	}
	if s == "null" {
		s = ""
	}
	n, err := ParseCursor(s)
	*c = Cursor(n)
	return err
}
