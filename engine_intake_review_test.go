package ringwal_test

// Review tests of the intake side: Enqueue, TryEnqueue, EnqueueBatch,
// capacity, dedup, options and Close racing producers.

import (
	"sync"
	"testing"
	"time"

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

// Producers racing Close get either an ID (and the message is there after
// a reopen) or an error that matches ErrClosed, never some other error.
func TestReviewEnqueueRacingCloseReportsErrClosed(t *testing.T) {
	for round := 0; round < 5; round++ {
		dir := t.TempDir()
		e, err := ringwal.Open(dir, ringwal.Options{})
		require.NoError(t, err)
		var (
			mu   sync.Mutex
			ok   []ringwal.ID
			errs []error
			wg   sync.WaitGroup
		)
		for p := 0; p < 8; p++ {
			wg.Add(1)
			go func(batch bool) {
				defer wg.Done()
				for {
					var ids []ringwal.ID
					var err error
					if batch {
						ids, err = e.EnqueueBatch(ctxBG, []ringwal.Message{{Payload: []byte("b")}, {Payload: []byte("b")}})
					} else {
						var id ringwal.ID
						id, err = e.Enqueue(ctxBG, ringwal.Message{Payload: []byte("x")})
						ids = []ringwal.ID{id}
					}
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					ok = append(ok, ids...)
					mu.Unlock()
				}
			}(p%2 == 0)
		}
		time.Sleep(5 * time.Millisecond)
		require.NoError(t, e.Close())
		wg.Wait()
		for _, err := range errs {
			assert.ErrorIs(t, err, ringwal.ErrClosed)
		}
		e2 := open(t, dir, ringwal.Options{})
		assert.Equal(t, len(ok), e2.Stats().Pending, "every acknowledged enqueue is there after a reopen")
		require.NoError(t, e2.Close())
	}
}
