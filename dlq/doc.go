// Package dlq is the vocabulary of dead letters: what a user reads back
// from the engine and how they select it. The store that holds them, with
// its indexes and retention, is the engine's own (internal/dlqstore) and
// not part of this package's surface.
//
// Its exported names, and why each is public:
//
//   - Entry and Failure: a dead letter as Engine.DeadLetters returns it
//     (ringwal.DeadLetter is Entry[ringwal.Message]), with the history of
//     its last DefaultMaxFailures failures.
//   - ID: the engine's message ID (ringwal.ID is this type), so that an
//     Entry's ID passes to Engine.Redrive, Engine.MarkReviewed or the next
//     page's Query.After with no conversion.
//   - Query and Review (Any, OnlyReviewed, OnlyUnreviewed): the selection
//     that Engine.DeadLetters, CountDeadLetters, PurgeDeadLetters and the
//     bulk verbs take, and that admin's query grammar parses.
//   - ErrNotFound, ErrDuplicate, ErrInvalid: the store's sentinel errors,
//     for errors.Is on what the engine wraps.
//
// It is generic over the message type M so that it never imports the root
// package, and it starts no goroutines and holds no state.
package dlq
