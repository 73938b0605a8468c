package admin

// The queues' vocabulary: how the admin API, its Client, the console and
// cmd/ringwal name a queue (the default one included), and the views of
// queues, shared by all of them.

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// DefaultQueue is the name the admin API, its Client, the console and
// cmd/ringwal give the default queue, whose engine name is "". It names
// the queue in a path, as in /api/queues/_default/pause. It names it in a
// queue parameter: ?queue=_default lists the default queue's messages
// only, where an absent queue lists every queue's. It is the name in
// QueueView.Name too. The engine reserves names that start with "_", so no named queue
// is ever called that.
const DefaultQueue = "_default"

// AdminQueueName returns the admin name of the queue the engine calls
// name: DefaultQueue for "", name itself otherwise.
func AdminQueueName(name string) string {
	if name == "" {
		return DefaultQueue
	}
	return name
}

// EngineQueueName is AdminQueueName's inverse: "" for DefaultQueue (and
// for ""), name itself otherwise.
func EngineQueueName(name string) string {
	if name == DefaultQueue {
		return ""
	}
	return name
}

// QueuePath escapes a queue's name as one URL path segment, for
// /api/queues/{queue}/...: the default queue ("" or DefaultQueue) is
// DefaultQueue, another name is escaped as KeyPath escapes a key.
func QueuePath(name string) string {
	return KeyPath(AdminQueueName(name))
}

// PolicyView is a classify.RetryPolicy (its jitter aside).
type PolicyView struct {
	MaxAttempts       int     `json:"max_attempts"`
	BaseSeconds       float64 `json:"base_seconds"`
	MaxSeconds        float64 `json:"max_seconds"`
	Multiplier        float64 `json:"multiplier"`
	MaxElapsedSeconds float64 `json:"max_elapsed_seconds"`
}

// QueueOptionsView is a ringwal.QueueOptions as declared: zero fields
// take the engine's (MaxMessages 0: only the engine's cap; LeaseTimeout
// 0: Options.LeaseTimeout; a category without a policy here: the
// engine's policy).
type QueueOptionsView struct {
	MaxMessages         int                              `json:"max_messages"`
	Strict              bool                             `json:"strict"`
	LeaseTimeoutSeconds float64                          `json:"lease_timeout_seconds"`
	Policies            map[classify.Category]PolicyView `json:"policies,omitempty"`
	Topics              []string                         `json:"topics"`
}

// NewQueueOptionsView returns o's view (Topics never nil).
func NewQueueOptionsView(o ringwal.QueueOptions) QueueOptionsView {
	v := QueueOptionsView{MaxMessages: o.MaxMessages, Strict: o.Strict, LeaseTimeoutSeconds: o.LeaseTimeout.Seconds(),
		Topics: append([]string{}, o.Topics...)}
	if len(o.Policies) > 0 {
		v.Policies = make(map[classify.Category]PolicyView, len(o.Policies))
		for c, p := range o.Policies {
			v.Policies[c] = PolicyView{MaxAttempts: p.MaxAttempts, BaseSeconds: p.Base.Seconds(), MaxSeconds: p.Max.Seconds(),
				Multiplier: p.Multiplier, MaxElapsedSeconds: p.MaxElapsed.Seconds()}
		}
	}
	return v
}

// QueueStatsView is a ringwal.QueueStats: a queue's messages by state,
// its dead letters, its totals since the engine opened (the default
// queue's are the engine's less the named queues') and the age of its
// longest-waiting pending message.
type QueueStatsView struct {
	Pending              int     `json:"pending"`
	Delayed              int     `json:"delayed"`
	Leased               int     `json:"leased"`
	Held                 int     `json:"held"`
	Dead                 int     `json:"dead"`
	Enqueued             uint64  `json:"enqueued"`
	Acked                uint64  `json:"acked"`
	DeadLettered         uint64  `json:"dead_lettered"`
	OldestPendingSeconds float64 `json:"oldest_pending_seconds"`
}

// NewQueueStatsView returns s's counts as a view.
func NewQueueStatsView(s ringwal.QueueStats) QueueStatsView {
	return QueueStatsView{Pending: s.Pending, Delayed: s.Delayed, Leased: s.Leased, Held: s.Held, Dead: s.Dead,
		Enqueued: s.Enqueued, Acked: s.Acked, DeadLettered: s.DeadLettered, OldestPendingSeconds: s.OldestPending.Seconds()}
}

// Live is the queue's live messages: pending, delayed, leased and held.
func (s QueueStatsView) Live() int { return s.Pending + s.Delayed + s.Leased + s.Held }

// QueueView is one declared queue (GET /api/queues): its info
// (ringwal.QueueInfo) and its counts (ringwal.QueueStats, flattened into
// the object). Name is the admin name (DefaultQueue for the default
// queue) and Default says which one that is. PausedUntil is null while
// the queue is not paused or is paused until resumed.
type QueueView struct {
	Name        string           `json:"name"`
	Default     bool             `json:"default"`
	Paused      bool             `json:"paused"`
	PausedUntil *time.Time       `json:"paused_until"`
	Options     QueueOptionsView `json:"options"`
	QueueStatsView
}

// EngineName is the queue's name in the engine ("" for the default
// queue).
func (v QueueView) EngineName() string { return EngineQueueName(v.Name) }

// Empty reports whether the queue holds neither live messages nor dead
// letters: the engine deletes only such a queue, and never the default
// one.
func (v QueueView) Empty() bool { return v.Live() == 0 && v.Dead == 0 }

// NewQueueView returns the view of a queue from its info and its counts.
func NewQueueView(in ringwal.QueueInfo, s ringwal.QueueStats) QueueView {
	v := QueueView{Name: AdminQueueName(in.Name), Default: in.Name == "", Paused: in.Paused,
		Options: NewQueueOptionsView(in.Options), QueueStatsView: NewQueueStatsView(s)}
	if in.Paused && !in.PausedUntil.IsZero() {
		t := in.PausedUntil
		v.PausedUntil = &t
	}
	return v
}

// NewQueueViews returns every queue of infos with its counts from s
// (Stats.Queues), in infos' order (the default queue first, then by
// name). A queue declared after s was taken has zero counts; one deleted
// since infos was read is left out.
func NewQueueViews(infos []ringwal.QueueInfo, s ringwal.Stats) []QueueView {
	byName := make(map[string]ringwal.QueueStats, len(s.Queues))
	for _, qs := range s.Queues {
		byName[qs.Name] = qs
	}
	out := make([]QueueView, 0, len(infos))
	for _, in := range infos {
		qs, ok := byName[in.Name]
		if !ok {
			qs = ringwal.QueueStats{Name: in.Name}
		}
		out = append(out, NewQueueView(in, qs))
	}
	return out
}

// FindQueue returns the view of the queue called name ("" or
// DefaultQueue for the default one) among vs.
func FindQueue(vs []QueueView, name string) (QueueView, bool) {
	name = AdminQueueName(name)
	for _, v := range vs {
		if v.Name == name {
			return v, true
		}
	}
	return QueueView{Name: name}, false
}

// queueInfo returns the declared queue the engine calls name, if any.
func queueInfo(e *ringwal.Engine, name string) (ringwal.QueueInfo, bool) {
	for _, in := range e.Queues() {
		if in.Name == name {
			return in, true
		}
	}
	return ringwal.QueueInfo{}, false
}

// queueNames returns the admin names of the declared queues, the default
// first, then by name (for the console's queue selectors).
func queueNames(infos []ringwal.QueueInfo) []string {
	out := make([]string, 0, len(infos))
	for _, in := range infos {
		out = append(out, AdminQueueName(in.Name))
	}
	return out
}

// errDefaultQueuePurge refuses a purge of the default queue's dead
// letters: dlq.Query's Queue "" is every queue, so the engine has no way
// to purge the default queue's apart from the named queues'.
var errDefaultQueuePurge = errors.New(`queue ` + DefaultQueue + `: the default queue's dead letters cannot be purged apart from the named queues' (filter by category, key or time instead, or purge without a queue)`)

// defaultScan bounds the dead letters one page of the default queue's
// reads. Its entries are found by reading every queue's and keeping
// those of the default queue. So a page stops after this many, even when
// it holds fewer than its limit; its next then says where to go on.
var defaultScan = 10 * MaxLimit // a variable for tests only

// NewDeadLetterPage reads one page of the dead letters q matches, as GET
// /api/dead-letters answers it: q.Limit is the page size (0:
// DefaultLimit; at most MaxLimit), q.After the previous page's next, and
// q.Queue a queue's admin name (DefaultQueue: the default queue only). A
// page of the default queue reads at most 10·MaxLimit dead letters of
// every queue for it, so it may hold fewer entries than the limit, even
// none, and still have a next: follow next until it is absent.
func NewDeadLetterPage(e *ringwal.Engine, q dlq.Query) (DeadLetterPage, error) {
	limit := q.Limit
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		return DeadLetterPage{}, fmt.Errorf("%w: limit %d: want a number from 1 to %d", ringwal.ErrInvalid, limit, MaxLimit)
	}
	page := DeadLetterPage{}
	if q.Queue != DefaultQueue {
		q.Limit = limit + 1 // one more tells whether there is a next page
		ds, err := e.DeadLetters(q)
		if err != nil {
			return page, err
		}
		if len(ds) > limit {
			ds = ds[:limit]
			page.Next = strconv.FormatUint(ds[limit-1].ID, 10)
		}
		page.Entries = NewDeadLetterViews(ds)
		return page, nil
	}
	q.Queue = ""
	var out []ringwal.DeadLetter
	for scanned := 0; ; {
		q.Limit = min(max(2*(limit+1), 256), defaultScan-scanned)
		ds, err := e.DeadLetters(q)
		if err != nil {
			return page, err
		}
		for _, d := range ds {
			q.After = d.ID
			scanned++
			if d.Queue != "" {
				continue
			}
			if len(out) == limit { // one more: there is a next page
				page.Next = strconv.FormatUint(out[limit-1].ID, 10)
				page.Entries = NewDeadLetterViews(out)
				return page, nil
			}
			out = append(out, d)
		}
		if len(ds) < q.Limit { // read to the end
			break
		}
		if scanned >= defaultScan { // read enough: go on from the last read
			page.Next = strconv.FormatUint(q.After, 10)
			break
		}
	}
	page.Entries = NewDeadLetterViews(out)
	return page, nil
}
