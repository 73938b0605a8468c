package admin

// The key controls' vocabulary: the views of keys, pauses and a key's live
// messages, and the grammar of their parameters (a pause's until, a
// message query), shared by the JSON API, the Client, the console and
// cmd/ringwal.

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/internal/adminfmt"
)

// KeyView is one key: its per-key state (ringwal.KeyStats) and the state
// of its circuit breaker. PausedUntil is null while the key is not paused
// or is paused until resumed. Live and InFlight are counted for keys with
// a KeyPolicy only. Breaker is the breaker's state (closed, open,
// half-open), absent when the key has no breaker now.
type KeyView struct {
	Key         string     `json:"key"`
	Paused      bool       `json:"paused"`
	PausedUntil *time.Time `json:"paused_until"`
	Live        int        `json:"live"`
	InFlight    int        `json:"in_flight"`
	Waiting     int        `json:"waiting"`
	Held        int        `json:"held"`
	Throttled   bool       `json:"throttled"`
	AtCap       bool       `json:"at_cap"`
	Breaker     string     `json:"breaker,omitempty"`
}

// Notable reports whether the key needs an operator's eye: paused,
// throttled, at its cap, or with messages waiting or held.
func (k KeyView) Notable() bool {
	return k.Paused || k.Throttled || k.AtCap || k.Waiting > 0 || k.Held > 0
}

func newKeyView(k ringwal.KeyStats) KeyView {
	v := KeyView{Key: k.Key, Paused: k.Paused, Live: k.Live, InFlight: k.InFlight, Waiting: k.Waiting,
		Held: k.Held, Throttled: k.Throttled, AtCap: k.AtCap}
	if k.Paused && !k.PausedUntil.IsZero() {
		t := k.PausedUntil
		v.PausedUntil = &t
	}
	return v
}

// breakerStates maps each key of s.Breakers to its breaker's state.
func breakerStates(s ringwal.Stats) map[string]breaker.State {
	m := make(map[string]breaker.State, len(s.Breakers))
	for _, b := range s.Breakers {
		m[b.Key] = b.State
	}
	return m
}

// statsKeyViews returns s.Keys as views, each with its breaker's state
// (StatsView.Keys).
func statsKeyViews(s ringwal.Stats) []KeyView {
	states := breakerStates(s)
	out := make([]KeyView, 0, len(s.Keys))
	for _, k := range s.Keys {
		v := newKeyView(k)
		if st, ok := states[k.Key]; ok {
			v.Breaker = st.String()
		}
		out = append(out, v)
	}
	return out
}

// NewKeyViews returns every key s knows, sorted: those of s.Keys (a
// policy and live messages, a pause, messages waiting or held) and those
// with a circuit breaker (s.Breakers), each with its breaker's state. It
// is the answer of GET /api/keys.
func NewKeyViews(s ringwal.Stats) []KeyView {
	out := make([]KeyView, 0, len(s.Keys)+len(s.Breakers))
	i, j := 0, 0 // both lists are sorted by key: merge them
	for i < len(s.Keys) || j < len(s.Breakers) {
		switch {
		case j == len(s.Breakers) || (i < len(s.Keys) && s.Keys[i].Key < s.Breakers[j].Key):
			out = append(out, newKeyView(s.Keys[i]))
			i++
		case i == len(s.Keys) || s.Breakers[j].Key < s.Keys[i].Key:
			out = append(out, KeyView{Key: s.Breakers[j].Key, Breaker: s.Breakers[j].State.String()})
			j++
		default:
			v := newKeyView(s.Keys[i])
			v.Breaker = s.Breakers[j].State.String()
			out = append(out, v)
			i, j = i+1, j+1
		}
	}
	return out
}

// FindKey returns the view of key among vs.
func FindKey(vs []KeyView, key string) (KeyView, bool) {
	for _, v := range vs {
		if v.Key == key {
			return v, true
		}
	}
	return KeyView{Key: key}, false
}

// PauseRequest is the body of POST /api/keys/{key}/pause and POST
// /api/pause (optional: no body, or no until, pauses until resumed).
// Until is an RFC 3339 time or a positive duration from now such as 1h;
// a time not after now is refused.
type PauseRequest struct {
	Until string `json:"until,omitempty"`
}

// PauseView answers a pause or resume. Key is absent for all delivery.
// Paused says whether a pause is in force after the action (a pause never
// shortens a longer one already in force). PausedUntil is when it ends,
// null when it lasts until resumed; for all delivery it is the until
// asked for, as the engine does not report the end of that pause.
type PauseView struct {
	Key         string     `json:"key,omitempty"`
	Status      string     `json:"status"` // paused or resumed
	Paused      bool       `json:"paused"`
	PausedUntil *time.Time `json:"paused_until"`
}

// KeyPath escapes key as one URL path segment, for /api/keys/{key}/...:
// url.PathEscape, which escapes '/', '#' and '?', with the dots of a key
// "." or ".." escaped too so that no path cleaning touches it.
func KeyPath(key string) string {
	s := url.PathEscape(key)
	if s == "." || s == ".." {
		s = strings.ReplaceAll(s, ".", "%2E")
	}
	return s
}

// MessageQueryParams are the parameters ParseMessageQuery reads.
var MessageQueryParams = []string{"queue", "key", "state", "after", "limit"}

// MessageQuery selects live messages for GET /api/messages: by Queue
// (its admin name: "" every queue, DefaultQueue the default queue only),
// Key ("" every key) and States (empty: every live state), a page of at
// most Limit (0: DefaultLimit) after the message After (0: from the
// start).
type MessageQuery struct {
	Queue  string
	Key    string
	States []ringwal.State
	After  ringwal.ID
	Limit  int
}

// Filter is q's selection as the engine's filter: its queue's engine
// name, its key and its states. After and Limit page a list and are not
// part of it. The filter is bounded by through, as a bulk verb's count's
// mark bounds it; 0 is no bound.
func (q MessageQuery) Filter(through ringwal.ID) ringwal.Filter {
	return ringwal.Filter{Queue: EngineQueueName(q.Queue), Key: q.Key, States: q.States, Through: through}
}

// ParseMessageQuery reads a message query from v:
//
//	queue  the queue's admin name ("" or absent: every queue; DefaultQueue: the default one)
//	key    the message key ("" or absent: every key)
//	state  repeatable or comma-separated: pending, delayed, leased, held
//	after  the cursor: the next of the previous page (a message ID)
//	limit  at most this many, 1 to MaxLimit (default DefaultLimit)
//
// Unknown or repeated parameters (state aside) are refused.
func ParseMessageQuery(v url.Values) (MessageQuery, error) {
	var q MessageQuery
	for name, vals := range v {
		switch name {
		case "state":
		case "queue", "key", "after", "limit":
			if len(vals) > 1 {
				return q, fmt.Errorf("query parameter %q given %d times", name, len(vals))
			}
		default:
			return q, fmt.Errorf("unknown query parameter %q (want %s)", name, strings.Join(MessageQueryParams, ", "))
		}
	}
	var err error
	if q.States, err = adminfmt.ParseStates(v["state"]); err != nil {
		return q, err
	}
	q.Queue, q.Key = v.Get("queue"), v.Get("key")
	after, err := ParseCursor(v.Get("after"))
	if err != nil {
		return q, err
	}
	q.After = after
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			return q, fmt.Errorf("limit %q: want a number from 1 to %d", s, MaxLimit)
		}
		q.Limit = n
	}
	return q, nil
}

// Values is ParseMessageQuery's inverse.
func (q MessageQuery) Values() url.Values {
	v := url.Values{}
	if q.Queue != "" {
		v.Set("queue", q.Queue)
	}
	if q.Key != "" {
		v.Set("key", q.Key)
	}
	for _, st := range q.States {
		v.Add("state", st.String())
	}
	if q.After != 0 {
		v.Set("after", strconv.FormatUint(q.After, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// MessagePage is one page of GET /api/messages.
type MessagePage struct {
	Entries []InfoView `json:"entries"`
	// Next is the cursor of the next page (pass it as after); absent on
	// the last page.
	Next string `json:"next,omitempty"`
}

// NewMessagePage walks e.Messages for one page of q: the live messages
// that match, in the engine's order (delivery order for an ordered key,
// else enqueue order but where IDs wrap around the engine's slab), from
// the one after q.After. It stops once it has the page and knows whether
// more follow; it never holds more than q.Limit+1 messages. If the
// message q.After left meanwhile, the page holds those with a higher ID,
// in the engine's order.
func NewMessagePage(e *ringwal.Engine, q MessageQuery) MessagePage {
	limit := min(cmp.Or(q.Limit, DefaultLimit), MaxLimit)
	page := MessagePage{Entries: []InfoView{}}
	found := q.After == 0
	var above []ringwal.Info // before the cursor is found: those above it
	more := false
	// Filter.Queue "" is every queue: the default queue's messages are
	// those whose Message.Queue is "".
	only := q.Queue == DefaultQueue
	for in := range e.Messages(q.Filter(0)) {
		if only && in.Message.Queue != "" {
			continue
		}
		if !found {
			if in.ID == q.After {
				found, above = true, nil
			} else if in.ID > q.After && len(above) <= limit {
				above = append(above, in)
			}
			continue
		}
		if len(page.Entries) == limit {
			more = true
			break
		}
		page.Entries = append(page.Entries, NewInfoView(in))
	}
	if !found {
		for _, in := range above {
			if len(page.Entries) == limit {
				more = true
				break
			}
			page.Entries = append(page.Entries, NewInfoView(in))
		}
	}
	if more {
		page.Next = strconv.FormatUint(page.Entries[len(page.Entries)-1].ID, 10)
	}
	return page
}

// engineClosed reports whether e is closed, without a scan: Get of an ID
// says ErrClosed then.
func engineClosed(e *ringwal.Engine) bool {
	_, err := e.Get(0)
	return errors.Is(err, ringwal.ErrClosed)
}
