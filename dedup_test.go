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

func TestDedup(t *testing.T) {
	t.Run("within and after the window", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{DedupWindow: time.Minute})
		id1, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-1", Payload: []byte("first")})
		require.NoError(t, err)
		id2, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-1", Payload: []byte("second")})
		assert.ErrorIs(t, err, ringwal.ErrDuplicate)
		assert.Equal(t, id1, id2, "a duplicate returns the first ID")
		id3, err := e.TryEnqueue(ringwal.Message{DedupID: "order-1"})
		assert.ErrorIs(t, err, ringwal.ErrDuplicate)
		assert.Equal(t, id1, id3)

		other, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-2"})
		require.NoError(t, err)
		assert.NotEqual(t, id1, other)
		n1 := enqueueP(t, e, ringwal.Normal, "no dedup id")
		n2 := enqueueP(t, e, ringwal.Normal, "no dedup id")
		assert.NotEqual(t, n1, n2, "an empty DedupID never deduplicates")
		assert.Equal(t, uint64(4), e.Stats().Enqueued)

		// Acking the first does not end the window.
		d := dequeue(t, e)
		require.Equal(t, id1, d.ID)
		assert.Equal(t, "first", string(d.Message.Payload))
		require.NoError(t, e.Ack(d.Lease))
		id4, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-1"})
		assert.ErrorIs(t, err, ringwal.ErrDuplicate, "still within the window after Ack")
		assert.Equal(t, id1, id4)

		fake.Advance(59 * time.Second)
		_, err = e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-1"})
		assert.ErrorIs(t, err, ringwal.ErrDuplicate, "1s before the window ends")

		fake.Advance(time.Second + 5*time.Millisecond)
		var id5 ringwal.ID
		assert.Eventually(t, func() bool {
			id5, err = e.Enqueue(ctxBG, ringwal.Message{DedupID: "order-1", Payload: []byte("third")})
			return err == nil
		}, waitFor, tick, "accepted again after the window: last error %v", err)
		assert.NotEqual(t, id1, id5)
	})
	t.Run("negative window turns it off", func(t *testing.T) {
		e, _ := memEngine(t, ringwal.Options{DedupWindow: -1})
		a, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "x"})
		require.NoError(t, err)
		b, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "x"})
		require.NoError(t, err)
		assert.NotEqual(t, a, b)
	})
}

func TestDedupSurvivesRestart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       ringwal.Durability
		checkpoint bool
	}{
		{"write", ringwal.Write, false},
		{"buffered", ringwal.Buffered, false},
		{"write after checkpoint", ringwal.Write, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f1 := clock.NewFake(time.Time{})
			o := ringwal.Options{Durability: tc.mode, DedupWindow: time.Minute, Clock: f1}
			e1, err := ringwal.Open(dir, o)
			require.NoError(t, err)

			acked, err := e1.Enqueue(ctxBG, ringwal.Message{DedupID: "acked"})
			require.NoError(t, err)
			d := dequeue(t, e1)
			require.NoError(t, e1.Ack(d.Lease))
			pending, err := e1.Enqueue(ctxBG, ringwal.Message{DedupID: "pending"})
			require.NoError(t, err)
			if tc.checkpoint {
				require.NoError(t, e1.Checkpoint())
			}
			require.NoError(t, e1.Close())

			f2 := clock.NewFake(f1.Now().Add(10 * time.Second))
			o.Clock = f2
			e2 := open(t, dir, o)
			for key, want := range map[string]ringwal.ID{"acked": acked, "pending": pending} {
				id, err := e2.Enqueue(ctxBG, ringwal.Message{DedupID: key})
				assert.ErrorIs(t, err, ringwal.ErrDuplicate, "%s: dedup index survives the restart", key)
				assert.Equal(t, want, id, key)
			}
			waitCounts(t, e2, stateCounts{Pending: 1})

			f2.Advance(time.Minute)
			assert.Eventually(t, func() bool {
				_, err := e2.Enqueue(ctxBG, ringwal.Message{DedupID: "pending"})
				return err == nil
			}, waitFor, tick, "accepted again once the window has passed")
		})
	}
}

// TestRedriveKeepsDedupWindow: a Redrive leaves the DedupID's window
// where it was, and so does a reopen after it: the window still counts
// from the first enqueue, and a newer message that took the DedupID over
// keeps it. A redrive re-creates a message but is not a first enqueue.
func TestRedriveKeepsDedupWindow(t *testing.T) {
	const window = time.Minute
	forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
		t.Run("window ended before the redrive", func(t *testing.T) {
			fake := clock.NewFake(time.Time{})
			r := newReopener(t, ringwal.Options{Clock: fake, DedupWindow: window})
			id := enqueue(t, r.e, ringwal.Message{DedupID: "d"})
			d := dequeue(t, r.e)
			require.NoError(t, r.e.Nack(d.Lease, permanent("no")))
			fake.Advance(2 * window)
			require.NoError(t, r.e.Redrive(id))

			e2, _ := r.reopen(checkpoint, fake.Now().Add(time.Second))
			again, err := e2.Enqueue(ctxBG, ringwal.Message{DedupID: "d"})
			assert.NoError(t, err, "the window ended before the redrive; a redrive does not restart it")
			assert.NotEqual(t, id, again)
		})
		t.Run("a newer message holds the DedupID", func(t *testing.T) {
			fake := clock.NewFake(time.Time{})
			r := newReopener(t, ringwal.Options{Clock: fake, DedupWindow: window})
			old := enqueue(t, r.e, ringwal.Message{DedupID: "d"})
			d := dequeue(t, r.e)
			require.NoError(t, r.e.Nack(d.Lease, permanent("no")))
			fake.Advance(2 * window)
			newer := enqueue(t, r.e, ringwal.Message{DedupID: "d"})
			fake.Advance(10 * time.Second)
			require.NoError(t, r.e.Redrive(old))
			first, err := r.e.Enqueue(ctxBG, ringwal.Message{DedupID: "d"})
			require.ErrorIs(t, err, ringwal.ErrDuplicate)
			require.Equal(t, newer, first)

			e2, _ := r.reopen(checkpoint, fake.Now().Add(time.Second))
			first, err = e2.Enqueue(ctxBG, ringwal.Message{DedupID: "d"})
			assert.ErrorIs(t, err, ringwal.ErrDuplicate)
			assert.Equal(t, newer, first, "the newer message keeps the DedupID")
			info, err := e2.Get(old)
			require.NoError(t, err)
			assert.Equal(t, "d", info.Message.DedupID, "the redriven message keeps its DedupID")
		})
		t.Run("the window counts from the first enqueue, not the redrive", func(t *testing.T) {
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
	})
}
