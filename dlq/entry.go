package dlq

import (
	"errors"
	"time"

	"github.com/ringwal/ringwal/classify"
)

// Sentinel errors, wrapped with context; match them with errors.Is.
var (
	// ErrNotFound: no stored entry has that ID.
	ErrNotFound = errors.New("ringwal/dlq: not found")
	// ErrDuplicate: an ID that is already stored was added again.
	ErrDuplicate = errors.New("ringwal/dlq: duplicate ID")
	// ErrInvalid: a malformed Entry or Query.
	ErrInvalid = errors.New("ringwal/dlq: invalid argument")
)

// ID is the engine's message ID as the store sees it: ringwal.ID is this
// type, and so are Entry.ID and Query.After. It is an alias of uint64, not
// a type of its own. So one value moves between all three with no
// conversion: a listed dead letter's ID goes straight to Engine.Redrive,
// or to the next page's After. And code written when these were spelled
// uint64 still compiles, such as dlq.Query{After: uint64(n)} or
// var n uint64 = d.ID.
type ID = uint64

// Failure is one failed delivery of a dead-lettered message.
type Failure struct {
	// At is when the delivery failed.
	At time.Time
	// Category is what the classifier made of the error.
	Category classify.Category
	// Error is the cause's text (for a panic, with its stack).
	Error string
}

// Entry is a dead letter. Category, Key, Queue and DeadAt decide where it
// is indexed and never change while it is stored.
type Entry[M any] struct {
	// ID is the engine's message ID; never 0 (0 means "no cursor" in
	// Query.After). It passes to Engine.Redrive and Query.After as it is.
	ID ID
	// Category is the category of the failure that dead-lettered the
	// message, which picks its dead-letter queue.
	Category classify.Category
	// Key is the message's breaker key ("" for none).
	Key string
	// Queue is the name of the queue the message came from; "" is the
	// default queue.
	Queue string
	// Message is the message itself. The store never copies or modifies
	// it; callers must treat it as read-only once added.
	Message M
	// Attempts is the number of deliveries made.
	Attempts int
	// Failures is the history of the last few failed deliveries, oldest
	// first; the engine keeps the last DefaultMaxFailures of them, so the
	// final one is always there.
	Failures []Failure
	// FirstFailedAt is when the first delivery failed.
	FirstFailedAt time.Time
	// DeadAt is when the message was dead-lettered: the sort key.
	DeadAt time.Time
	// Reviewed is set by MarkReviewed.
	Reviewed bool
	// ReviewedAt is when it was last marked reviewed.
	ReviewedAt time.Time
	// Note is the operator's review note.
	Note string
}

// DefaultMaxFailures is how many failures an Entry keeps by default: the
// latest ones, so the final failure is always there.
const DefaultMaxFailures = 10
