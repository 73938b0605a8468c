package dlqstore

import "github.com/ringwal/ringwal/dlq"

// The store speaks package dlq's vocabulary: what users read and pass
// (Entry, Failure, Query, Review, the sentinel errors) lives there, public;
// these aliases only let the store's code and tests name them unqualified.
type (
	// ID is dlq.ID, the engine's message ID.
	ID = dlq.ID
	// Entry is dlq.Entry: a dead letter.
	Entry[M any] = dlq.Entry[M]
	// Failure is dlq.Failure: one failed delivery.
	Failure = dlq.Failure
	// Query is dlq.Query: a selection of entries.
	Query = dlq.Query
	// Review is dlq.Review: a filter on review state.
	Review = dlq.Review
)

// The review filters, as in package dlq.
const (
	Any            = dlq.Any
	OnlyReviewed   = dlq.OnlyReviewed
	OnlyUnreviewed = dlq.OnlyUnreviewed
)

// The sentinel errors are package dlq's, so that a caller matches them with
// errors.Is whether they came through the engine or not.
var (
	ErrNotFound  = dlq.ErrNotFound
	ErrDuplicate = dlq.ErrDuplicate
	ErrInvalid   = dlq.ErrInvalid
)
