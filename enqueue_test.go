package ringwal_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

func TestEnqueueDequeueAck(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	t0 := fake.Now()
	m := ringwal.Message{
		Key:      "api.example.com",
		Priority: ringwal.High,
		Payload:  []byte("hello"),
		Headers:  map[string]string{"trace": "abc", "x": "y"},
	}
	id := enqueue(t, e, m)

	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, id, info.ID)
	assert.Equal(t, ringwal.Pending, info.State)
	assert.Equal(t, 0, info.Attempts)
	assert.True(t, info.EnqueuedAt.Equal(t0), "EnqueuedAt %v, want the fake clock's %v", info.EnqueuedAt, t0)

	d := dequeue(t, e)
	assert.Equal(t, id, d.ID)
	assert.Equal(t, 1, d.Attempt, "first delivery is attempt 1")
	assert.True(t, d.EnqueuedAt.Equal(t0), "Delivery.EnqueuedAt %v, want %v", d.EnqueuedAt, t0)
	assert.Equal(t, "api.example.com", d.Message.Key)
	assert.Equal(t, ringwal.High, d.Message.Priority)
	assert.Equal(t, "hello", string(d.Message.Payload))
	assert.Equal(t, m.Headers, d.Message.Headers)

	info, err = e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Leased, info.State)
	assert.Equal(t, 1, info.Attempts)

	_, ok := e.TryDequeue()
	assert.False(t, ok, "a leased message must not be handed out twice")

	require.NoError(t, e.Ack(d.Lease))
	_, err = e.Get(id)
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "Get of an acked ID")
	assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease, "second Ack")

	s := e.Stats()
	assert.Equal(t, uint64(1), s.Enqueued)
	assert.Equal(t, uint64(1), s.Acked)
	assert.Equal(t, stateCounts{}, counts(s))
}

func TestIDsUniqueAndFIFOWithinTier(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	const n = 500
	var want []ringwal.ID
	seen := map[ringwal.ID]bool{}
	for i := 0; i < n; i++ {
		id := enqueueP(t, e, ringwal.Normal, fmt.Sprint(i))
		require.False(t, seen[id], "ID %d assigned twice", id)
		seen[id] = true
		want = append(want, id)
	}
	var got []ringwal.ID
	for i := 0; i < n; i++ {
		d := dequeue(t, e)
		assert.Equal(t, fmt.Sprint(i), string(d.Message.Payload), "FIFO within a tier")
		got = append(got, d.ID)
		require.NoError(t, e.Ack(d.Lease))
	}
	assert.Equal(t, want, got)
}

func TestTryEnqueueFullAndEnqueueWaits(t *testing.T) {
	t.Run("MaxMessages", func(t *testing.T) {
		e, _ := memEngine(t, ringwal.Options{MaxMessages: 3})
		for i := 0; i < 3; i++ {
			_, err := e.TryEnqueue(ringwal.Message{Payload: []byte{byte(i)}})
			require.NoError(t, err)
		}
		_, err := e.TryEnqueue(ringwal.Message{Priority: ringwal.Critical})
		assert.ErrorIs(t, err, ringwal.ErrFull, "TryEnqueue past MaxMessages")

		// A leased message is still live: dequeuing frees nothing.
		d := dequeue(t, e)
		_, err = e.TryEnqueue(ringwal.Message{})
		assert.ErrorIs(t, err, ringwal.ErrFull, "leased messages count against MaxMessages")

		// Enqueue waits, and gives up with its ctx.
		ctx, cancel := context.WithTimeout(ctxBG, quiet)
		defer cancel()
		_, err = e.Enqueue(ctx, ringwal.Message{})
		assert.ErrorIs(t, err, context.DeadlineExceeded, "Enqueue on a full engine waits until its ctx ends")

		// Enqueue waits, and proceeds once there is room.
		done := make(chan error, 1)
		go func() {
			_, err := e.Enqueue(ctxBG, ringwal.Message{Payload: []byte("waited")})
			done <- err
		}()
		select {
		case err := <-done:
			t.Fatalf("Enqueue returned while full: %v", err)
		case <-time.After(quiet):
		}
		require.NoError(t, e.Ack(d.Lease))
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(waitFor):
			t.Fatal("Enqueue did not proceed after an Ack made room")
		}
	})
	t.Run("TierCapacity", func(t *testing.T) {
		e, _ := memEngine(t, ringwal.Options{TierCapacity: 3}) // rounded up to 4
		for i := 0; i < 4; i++ {
			_, err := e.TryEnqueue(ringwal.Message{Priority: ringwal.Low})
			require.NoError(t, err, "message %d of a 4-slot tier", i)
		}
		_, err := e.TryEnqueue(ringwal.Message{Priority: ringwal.Low})
		assert.ErrorIs(t, err, ringwal.ErrFull, "fifth message in a tier of capacity 4")
		_, err = e.TryEnqueue(ringwal.Message{Priority: ringwal.High})
		assert.NoError(t, err, "another tier still has room")
	})
}

// Producers racing Close get either an ID (and the message is there after
// a reopen) or an error that matches ErrClosed, never some other error.
func TestEnqueueRacingCloseReportsErrClosed(t *testing.T) {
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
