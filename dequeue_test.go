package ringwal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
)

func TestDequeueBlocksUntilEnqueue(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	type res struct {
		d   ringwal.Delivery
		err error
	}
	ch := make(chan res, 1)
	go func() {
		d, err := e.Dequeue(ctxBG)
		ch <- res{d, err}
	}()
	select {
	case r := <-ch:
		t.Fatalf("Dequeue returned on an empty engine: %+v", r)
	case <-time.After(quiet):
	}
	id := enqueueP(t, e, ringwal.Low, "x")
	select {
	case r := <-ch:
		require.NoError(t, r.err)
		assert.Equal(t, id, r.d.ID)
	case <-time.After(waitFor):
		t.Fatal("Dequeue did not wake up on Enqueue")
	}

	// A canceled ctx ends a blocked Dequeue with the ctx's error.
	ctx, cancel := context.WithCancel(ctxBG)
	errc := make(chan error, 1)
	go func() {
		_, err := e.Dequeue(ctx)
		errc <- err
	}()
	time.Sleep(quiet) // let it block (real time; nothing engine-timed)
	cancel()
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(waitFor):
		t.Fatal("Dequeue ignored its ctx")
	}
}

func TestLeaseExpiry(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{
		LeaseTimeout: time.Second,
		Policies:     map[classify.Category]classify.RetryPolicy{classify.Timeout: fastPolicy(2)},
	})
	id := enqueueP(t, e, ringwal.Normal, "x")
	d1 := dequeue(t, e)

	fake.Advance(999 * time.Millisecond)
	stays(t, e, id, ringwal.Leased, "1ms before the lease ends")
	fake.Advance(3 * time.Millisecond)
	info := stateNot(t, e, id, ringwal.Leased)
	assert.Equal(t, classify.Timeout, info.LastCategory, "an expired lease is a Timeout failure")
	assert.Equal(t, 1, info.Attempts)

	fake.Advance(15 * time.Millisecond) // Timeout backoff 10ms
	d2 := dequeue(t, e)
	assert.Equal(t, id, d2.ID)
	assert.Equal(t, 2, d2.Attempt, "the expired lease counted as an attempt")
	assert.NotEqual(t, d1.Lease, d2.Lease)

	assert.ErrorIs(t, e.Ack(d1.Lease), ringwal.ErrStaleLease, "Ack of an expired lease")
	assert.ErrorIs(t, e.Nack(d1.Lease, errors.New("late")), ringwal.ErrStaleLease, "Nack of an expired lease")
	assert.ErrorIs(t, e.Extend(d1.Lease, time.Second), ringwal.ErrStaleLease, "Extend of an expired lease")

	// The second expiry exhausts MaxAttempts 2.
	fake.Advance(time.Second + 5*time.Millisecond)
	info = waitState(t, e, id, ringwal.Dead)
	assert.Equal(t, classify.Timeout, info.LastCategory)
	x := deadEntry(t, e, id)
	assert.Equal(t, classify.Timeout, x.Category)
	assert.Equal(t, 2, x.Attempts)
	assert.ErrorIs(t, e.Ack(d2.Lease), ringwal.ErrStaleLease)
}

// TryDequeue reports false only when nothing is ready: stale tier entries
// (messages whose TTL expired while pending) in front of a ready message
// must not make it give up.
func TestTryDequeueSkipsStaleEntries(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	const n = 200
	for i := 0; i < n; i++ {
		enqueue(t, e, ringwal.Message{TTL: time.Second})
	}
	fake.Advance(2 * time.Second)
	require.Eventually(t, func() bool { return e.Stats().Dead == n }, waitFor, tick)
	id := enqueueP(t, e, ringwal.Normal, "live")
	d, ok := e.TryDequeue()
	require.True(t, ok, "TryDequeue returned false with a message ready")
	assert.Equal(t, id, d.ID)
}

// Messages set aside (held) while TryDequeue looks for a deliverable one
// must not make it give up either.
func TestTryDequeuePastHeldMessages(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{
		Breaker:    breaker.Options{ConsecutiveFailures: 1, OpenTimeout: time.Hour},
		AgingAfter: noAging,
	})
	enqueue(t, e, ringwal.Message{Key: "down"})
	d := dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, transient("refused"))) // trips "down"
	const n = 200
	for i := 0; i < n; i++ {
		enqueue(t, e, ringwal.Message{Key: "down"})
	}
	id := enqueue(t, e, ringwal.Message{Key: "up"})
	d, ok := e.TryDequeue()
	require.True(t, ok, "TryDequeue returned false with a message ready")
	assert.Equal(t, id, d.ID)
}
