package ringwal

import (
	"slices"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/dlqstore"
)

// failureState is the immutable failure record of a message; a failure replaces
// it with a copy plus that failure (copy-on-write keeps Get race-free). It
// keeps the last dlq.DefaultMaxFailures failures, as the dead-letter store
// does.
type failureState struct {
	failures      []dlq.Failure
	firstFailedAt int64 // unix ns; survives the trimming of old failures
	// delay is the backoff the last failure was given (decorrelated jitter
	// grows from it); set by fail, the record's owner, before anyone but
	// the owner reads it.
	delay time.Duration
	// heldSince is when the message was first held behind its key's open
	// breaker in the hold MaxHold bounds (unix ns; 0: not in one). A
	// failure ends that hold (with does not copy it) unless the message
	// failed as the half-open breaker's probe (keepHold).
	heldSince int64
}

// holding returns a copy of h (nil: none) that says the message has been
// held since at.
func (h *failureState) holding(at int64) *failureState {
	var n failureState
	if h != nil {
		n = *h // failures are never appended to in place (with clones)
	}
	n.heldSince = at
	return &n
}

// since is when the hold in progress began (0: none).
func (h *failureState) since() int64 {
	if h == nil {
		return 0
	}
	return h.heldSince
}

// lastDelay is the backoff the last failure was given (0: none yet).
func (h *failureState) lastDelay() time.Duration {
	if h == nil {
		return 0
	}
	return h.delay
}

// with returns a copy of h with f appended, its text cut to
// maxFailureText (failureText): a failure replayed from a log an older
// version wrote may carry any length.
func (h *failureState) with(f dlq.Failure) *failureState {
	f.Error = failureText(f.Error)
	n := &failureState{firstFailedAt: f.At.UnixNano()}
	var fs []dlq.Failure
	if h != nil {
		if h.firstFailedAt != 0 { // 0: held, never failed
			n.firstFailedAt = h.firstFailedAt
		}
		fs = slices.Clone(h.failures) // ours to append to
	}
	n.failures = dlqstore.AppendFailure(fs, f, dlq.DefaultMaxFailures)
	return n
}

func (h *failureState) last() (string, classify.Category) {
	if h == nil || len(h.failures) == 0 {
		return "", classify.Unknown
	}
	f := h.failures[len(h.failures)-1]
	return f.Error, f.Category
}

// deadLetter builds the dead-letter entry of message id with these failures,
// which must end with the failure that dead-lettered it.
func (h *failureState) deadLetter(id uint64, cat classify.Category, m Message, attempts int, deadAt int64) DeadLetter {
	return DeadLetter{
		ID:            id,
		Category:      cat,
		Key:           m.Key,
		Queue:         m.Queue,
		Message:       m,
		Attempts:      attempts,
		Failures:      h.failures,
		FirstFailedAt: time.Unix(0, h.firstFailedAt),
		DeadAt:        time.Unix(0, deadAt),
	}
}
