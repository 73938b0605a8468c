package ringwal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// A repeat of a DedupID is answered as a duplicate even when the engine is
// full: it needs no space, so TryEnqueue must not say ErrFull and Enqueue
// must not wait for room it will never use.
func TestDuplicateWhileFull(t *testing.T) {
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

// A redrive re-creates a message but is not a first enqueue: its DedupID's
// window still counts from the first enqueue, after a reopen as before it.
func TestDedupWindowAfterRedriveAndReopen(t *testing.T) {
	forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
		dir := t.TempDir()
		fake := clock.NewFake(time.Time{})
		o := ringwal.Options{Clock: fake, DedupWindow: time.Minute}
		e1, err := ringwal.Open(dir, o)
		require.NoError(t, err)
		id := enqueue(t, e1, ringwal.Message{DedupID: "once"})
		d := dequeue(t, e1)
		require.NoError(t, e1.Nack(d.Lease, permanent("rejected")))
		waitState(t, e1, id, ringwal.Dead)
		fake.Advance(50 * time.Second)
		require.NoError(t, e1.Redrive(id))
		if checkpoint {
			require.NoError(t, e1.Checkpoint())
		}
		require.NoError(t, e1.Close())

		// 70 s after the first enqueue, 20 s after the redrive.
		o.Clock = clock.NewFake(fake.Now().Add(20 * time.Second))
		e2 := open(t, dir, o)
		again, err := e2.Enqueue(ctxBG, ringwal.Message{DedupID: "once"})
		require.NoError(t, err, "the window counts from the first enqueue")
		assert.NotEqual(t, id, again)
		info, err := e2.Get(id)
		require.NoError(t, err)
		assert.Equal(t, ringwal.Pending, info.State, "the redriven message is still there")
		assert.Equal(t, "once", info.Message.DedupID)
	})
}
