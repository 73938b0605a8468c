package ringwal_test

// Review tests of the intake side: Enqueue, TryEnqueue, EnqueueBatch,
// capacity, dedup, options and Close racing producers.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// A TierCapacity no machine can hold is bad input: Open must say so, not
// die allocating five rings of it (it used to be a fatal out-of-memory).
// A TierCapacity merely above MaxMessages still works.
func TestReviewTierCapacityTooLargeIsInvalid(t *testing.T) {
	for _, c := range []int{1 << 40, 1<<63 - 1} {
		var e *ringwal.Engine
		var err error
		require.NotPanics(t, func() { e, err = ringwal.Open("", ringwal.Options{TierCapacity: c}) })
		if e != nil {
			_ = e.Close()
		}
		assert.ErrorIs(t, err, ringwal.ErrInvalid, "TierCapacity %d", c)
	}
	e, _ := memEngine(t, ringwal.Options{TierCapacity: 1 << 24, MaxMessages: 8})
	for i := 0; i < 8; i++ {
		_, err := e.TryEnqueue(ringwal.Message{})
		require.NoError(t, err, "message %d of MaxMessages 8", i)
	}
	_, err := e.TryEnqueue(ringwal.Message{})
	assert.ErrorIs(t, err, ringwal.ErrFull, "MaxMessages still binds")
}
