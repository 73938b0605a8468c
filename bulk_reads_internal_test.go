package ringwal

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// deadLetterWith enqueues n messages and dead-letters each (Permanent)
// with the error text text.
func deadLetterWith(t *testing.T, e *Engine, n int, text string) {
	t.Helper()
	for range n {
		_, err := e.Enqueue(context.Background(), Message{Payload: []byte("x")})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New(text), classify.Permanent)))
	}
}

// A bulk verb whose filter no index answers (a text search, here) reads
// the dead letters it skips once, not once per page: each page starts
// where the last one ended, by place, though the redriven ones have left
// the store (and a review's stay). Counted in entries the store read, not
// timed.
func TestBulkVerbsReadTheDeadLettersTheySkipOncePerRun(t *testing.T) {
	const skipped, matching = 1500, 2*bulkPage + 88 // three pages
	for _, verb := range []string{"redrive", "review"} {
		t.Run(verb, func(t *testing.T) {
			e := openEngine(t, "", Options{})
			deadLetterWith(t, e, skipped, "other")
			deadLetterWith(t, e, matching, "boom")
			q := dlq.Query{Text: "boom", Reviewed: dlq.OnlyUnreviewed}

			before := e.dead.Reads()
			var n int
			var err error
			if verb == "redrive" {
				n, err = e.RedriveMatching(q)
			} else {
				n, err = e.ReviewMatching(q, "seen")
			}
			require.NoError(t, err)
			require.Equal(t, matching, n)
			reads := e.dead.Reads() - before
			// The set's probe reads up to the first match; then the pages
			// read every entry once between them.
			assert.LessOrEqual(t, reads, uint64(skipped+1+skipped+matching+bulkPage),
				"the %d skipped dead letters were read once per page, not once", skipped)
			left, _, err := e.CountDeadLetters(q)
			require.NoError(t, err)
			assert.Zero(t, left)
		})
	}
}
