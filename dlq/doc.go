// Package dlq is the vocabulary of dead letters: what a user reads back
// from the engine and how they select it. The store that holds them, with
// its indexes and retention, is the engine's own (internal/dlqstore) and
// not part of this package's surface.
//
// Its exported names, and why each is public, follow. Entry and Failure
// are a dead letter as Engine.DeadLetters returns it, with its last
// DefaultMaxFailures failures; ringwal.DeadLetter is
// Entry[ringwal.Message]. ID is the engine's message ID; ringwal.ID is
// this type. So an Entry's ID passes to Engine.Redrive,
// Engine.MarkReviewed or the next page's Query.After with no conversion.
//
// Query and Review (Any, OnlyReviewed, OnlyUnreviewed) are the selection
// that Engine.DeadLetters, CountDeadLetters, PurgeDeadLetters and the
// bulk verbs take. Admin's query grammar parses them too. ErrNotFound,
// ErrDuplicate and ErrInvalid are the store's sentinel errors, for
// errors.Is on what the engine wraps.
//
// It is generic over the message type M so that it never imports the root
// package, and it starts no goroutines and holds no state.
package dlq
