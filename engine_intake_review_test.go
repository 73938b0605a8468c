package ringwal_test

// Review tests of the intake side: Enqueue, TryEnqueue, EnqueueBatch,
// capacity, dedup, options and Close racing producers.

import (
	"context"
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

// A repeat of a DedupID is answered as a duplicate even when the engine is
// full: it needs no space, so TryEnqueue must not say ErrFull and Enqueue
// must not wait for room it will never use.
func TestReviewDuplicateWhileFull(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{MaxMessages: 1, DedupWindow: time.Minute})
	first, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-7"})
	require.NoError(t, err)

	id, err := e.TryEnqueue(ringwal.Message{DedupID: "order-7"})
	assert.ErrorIs(t, err, ringwal.ErrDuplicate, "TryEnqueue of a repeat while full")
	assert.Equal(t, first, id)

	ctx, cancel := context.WithTimeout(ctxBG, 300*time.Millisecond)
	defer cancel()
	id, err = e.Enqueue(ctx, ringwal.Message{DedupID: "order-7"})
	assert.ErrorIs(t, err, ringwal.ErrDuplicate, "Enqueue of a repeat while full")
	assert.Equal(t, first, id)

	ids, err := e.EnqueueBatch(ctx, []ringwal.Message{{DedupID: "order-7"}})
	assert.ErrorIs(t, err, ringwal.ErrDuplicate, "EnqueueBatch of a repeat while full")
	assert.Equal(t, []ringwal.ID{first}, ids)
	assert.Equal(t, uint64(3), e.Stats().Duplicates, "each refused repeat counted once")
	assert.Equal(t, uint64(1), e.Stats().Enqueued)

	// A new DedupID still waits for room and takes none on giving up.
	_, err = e.TryEnqueue(ringwal.Message{DedupID: "order-8"})
	assert.ErrorIs(t, err, ringwal.ErrFull)
	d := dequeue(t, e)
	require.NoError(t, e.Ack(d.Lease))
	_, err = e.TryEnqueue(ringwal.Message{DedupID: "order-8"})
	assert.NoError(t, err, "a DedupID refused for lack of room is not remembered")
}
