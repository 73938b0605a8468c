package dlq

import (
	"fmt"
	"time"

	"github.com/ringwal/ringwal/classify"
)

// Review filters entries by review state.
type Review uint8

// The review filters. Any is the zero value.
const (
	// Any matches reviewed and unreviewed entries.
	Any Review = iota
	// OnlyReviewed matches entries marked reviewed.
	OnlyReviewed
	// OnlyUnreviewed matches entries not yet reviewed.
	OnlyUnreviewed
)

// String returns "any", "reviewed" or "unreviewed".
func (r Review) String() string {
	switch r {
	case Any:
		return "any"
	case OnlyReviewed:
		return "reviewed"
	case OnlyUnreviewed:
		return "unreviewed"
	}
	return fmt.Sprintf("review(%d)", uint8(r))
}

// Query selects entries. The zero Query selects everything. Results are in
// dead-letter order: by DeadAt, then by ID.
//
// Paging: pass the ID of the last entry of a page as After to get the next
// page. The cursor is a position in that order, not a filter on IDs. So
// pages cover every matching entry exactly once, even when IDs are not in
// DeadAt order. Entries added behind the cursor, with an older DeadAt, are
// not returned by later pages. If the cursor entry has been removed since
// (redriven, purged), paging still resumes where it stood, provided it is
// among the engine's last 4096 removals; otherwise the read fails with
// ErrInvalid. An entry removed and added again is found at its new place.
type Query struct {
	// Categories limits the result to these categories; empty means all.
	Categories []classify.Category
	// Key limits the result to entries with this key; "" means any key.
	Key string
	// Queue limits the result to entries that came from this queue; ""
	// means every queue. The default queue's name is "" too, so a query
	// cannot pick the default queue alone: filter the result by
	// Entry.Queue for that (Engine.Stats counts it per queue).
	Queue string
	// Since and Until bound DeadAt: Since ≤ DeadAt < Until. A zero time is
	// unbounded on that side.
	Since, Until time.Time
	// Reviewed filters by review state.
	Reviewed Review
	// After is the cursor: only entries after the entry with this ID, in
	// result order. 0 means from the start. The last entry's ID of a page
	// is the next page's After.
	After ID
	// Limit caps the number of entries returned; 0 means no cap.
	Limit int
	// Through, if not 0, matches only the entries added up to a mark
	// Engine.CountDeadLetters returned with its count: an operator who
	// counted what a query matches then purges exactly those, never one
	// added since. It is a count of additions, not an ID, and a mark is
	// good for the engine that gave it (a reopened engine numbers its dead
	// letters afresh). 0 means no bound.
	Through uint64
	// Text, if not "", matches only the entries where it occurs, without
	// regard to case, in the key, the queue's name, a failure's error
	// text or a message header's name or value (what the engine's store
	// searches in the message). A search walks every entry the other
	// filters leave, O(n) for n dead letters, and stops at Limit: page
	// with After and Limit to bound each call.
	Text string
}
