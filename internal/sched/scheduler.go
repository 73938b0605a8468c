package sched

import (
	"math"
	"time"
)

// DefaultDeadlineSlack is how close to now the earliest deadline must be
// for it to be served first, when SchedulerOptions leaves it at zero.
const DefaultDeadlineSlack = 10 * time.Millisecond

// SchedulerOptions configures a Scheduler; the zero value is ready to use.
type SchedulerOptions struct {
	Picker PickerOptions
	// DeadlineSlack: an entry whose deadline is at most this far after now
	// is served before any tier. 0 means DefaultDeadlineSlack; negative
	// means only deadlines already passed.
	DeadlineSlack time.Duration
}

// Scheduler combines a Picker with a DeadlineHeap into the dequeue order
// the engine needs: earliest deadline first once a deadline is within
// DeadlineSlack, otherwise the Picker's choice (aging, then the policy).
//
// It owns neither the tiers nor the messages: the engine pushes an entry to
// Deadlines for every message that has a deadline (the message stays in its
// tier as well) and resolves a deadline pick to its record.
type Scheduler struct {
	picker    *Picker
	deadlines DeadlineHeap
	slack     int64
}

// Pick is one decision of Scheduler.Next.
type Pick struct {
	// EDF is true when the pick is a deadline entry: serve Entry, whose
	// deadline is Deadline. Otherwise pop from Tier.
	EDF      bool
	Entry    Entry
	Deadline int64
	Tier     int
}

// NewScheduler returns a Scheduler with an empty deadline heap.
func NewScheduler(o SchedulerOptions) *Scheduler {
	s := &Scheduler{picker: NewPicker(o.Picker), slack: int64(o.DeadlineSlack)}
	switch {
	case o.DeadlineSlack == 0:
		s.slack = int64(DefaultDeadlineSlack)
	case o.DeadlineSlack < 0:
		s.slack = 0
	}
	return s
}

// Picker returns the tier picker; call its Served after every tier pop.
// Safe for concurrent use, as is the Picker.
func (s *Scheduler) Picker() *Picker { return s.picker }

// DeadlineDue reports whether Next at now could serve a deadline entry
// rather than ask the Picker: the heap's earliest deadline (perhaps a
// stale entry's) is within the slack. A heap holding only far deadlines,
// or stale entries not yet dropped, answers false. Safe for concurrent
// use; two atomic loads, no lock.
func (s *Scheduler) DeadlineDue(now int64) bool {
	d, ok := s.deadlines.NextDeadline()
	return ok && d <= s.dueBefore(now)
}

// dueBefore is the bound Next serves deadlines under: now plus the slack.
func (s *Scheduler) dueBefore(now int64) int64 {
	before := now + s.slack
	if before < now { // overflow
		return math.MaxInt64
	}
	return before
}

// Deadlines returns the deadline heap, for Push and for Compact sweeps.
// Safe for concurrent use, as is the heap.
func (s *Scheduler) Deadlines() *DeadlineHeap { return &s.deadlines }

// Next returns what to serve next at now (unix ns). A deadline entry that
// is valid and due within the slack comes first (stale ones met at the top
// of the heap are dropped on the way); otherwise the Picker chooses among
// nonEmpty. ok is false when there is neither.
//
// When no deadline is pending, or the earliest is beyond the slack, Next
// takes no lock: the heap is consulted through its atomic count and
// earliest deadline only. valid is called only under the heap's lock and
// may be nil (everything valid). Safe for concurrent use; never allocates.
func (s *Scheduler) Next(nonEmpty uint8, now int64, valid func(Entry) bool) (Pick, bool) {
	if s.deadlines.Len() > 0 {
		before := s.dueBefore(now)
		// PopIf itself starts with the atomic check of the earliest
		// deadline, so a far deadline costs two loads here.
		if it, ok := s.deadlines.popDue(before, valid); ok {
			return Pick{EDF: true, Entry: it.e, Deadline: it.deadline, Tier: -1}, true
		}
	}
	t, ok := s.picker.Next(nonEmpty, now)
	if !ok {
		return Pick{}, false
	}
	return Pick{Tier: t}, true
}
