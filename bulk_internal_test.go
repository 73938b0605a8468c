package ringwal

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

// deadLetterSome enqueues n messages and dead-letters each (Permanent).
func deadLetterSome(t *testing.T, e *Engine, n int) []ID {
	t.Helper()
	var ids []ID
	for range n {
		id, err := e.Enqueue(context.Background(), Message{Payload: []byte("x")})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("no"), classify.Permanent)))
		ids = append(ids, id)
	}
	return ids
}

// A bulk verb whose single verb fails part-way stops there and returns
// the count done with the error: those done are done, the rest untouched.
func TestBulkVerbStopsAtAFailureWithTheCountDone(t *testing.T) {
	e := openEngine(t, "", Options{})
	ids := deadLetterSome(t, e, 6)
	disk := errors.New("disk on fire")
	calls := 0
	got, err := e.eachDead(dlq.Query{}, func(id ID) (pendingOp, error) {
		if calls++; calls > 4 {
			return pendingOp{}, disk
		}
		return e.startRedrive(id)
	})
	require.ErrorIs(t, err, disk)
	assert.Equal(t, 4, got)
	left, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	require.Len(t, left, 2)
	assert.Equal(t, ids[4], left[0].ID)
}

// waitIdleArmed starts WaitIdle(ctx) and returns once it sleeps on its
// channel (the channel is armed and it found work), with where its result
// will arrive. It yields, never sleeps, while it waits for the arming.
func waitIdleArmed(t *testing.T, e *Engine, ctx context.Context) <-chan error {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- e.WaitIdle(ctx) }()
	for e.ctr.idleWait.c.Load() == nil {
		select {
		case err := <-res:
			t.Fatalf("WaitIdle returned %v with work left", err)
		default:
		}
		runtime.Gosched()
	}
	return res
}

func result(t *testing.T, res <-chan error) error {
	t.Helper()
	select {
	case err := <-res:
		return err
	case <-time.After(5 * time.Second): // a bound on a hang, not a sleep in the logic
		t.Fatal("WaitIdle did not return")
		return nil
	}
}

// An idle engine (never used, or whose work is all acked or dead) is idle
// at once; dead letters are not work.
func TestWaitIdleReturnsAtOnceWhenNothingIsLive(t *testing.T) {
	e := openEngine(t, "", Options{})
	require.NoError(t, e.WaitIdle(context.Background()))
	deadLetterSome(t, e, 3)
	require.NoError(t, e.WaitIdle(context.Background()))
}

// WaitIdle sleeps while a message is pending or leased, and returns once
// the last one is acked; a ctx that ends first is its error.
func TestWaitIdleWaitsForPendingAndLeased(t *testing.T) {
	e := openEngine(t, "", Options{})
	for range 2 {
		_, err := e.Enqueue(context.Background(), Message{})
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res := waitIdleArmed(t, e, ctx)
	cancel()
	require.ErrorIs(t, result(t, res), context.Canceled, "not idle: it must not have returned nil")

	res = waitIdleArmed(t, e, context.Background())
	d1, ok := e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d1.Lease))
	d2, ok := e.TryDequeue() // leased: still work
	require.True(t, ok)
	select {
	case err := <-res:
		t.Fatalf("WaitIdle returned %v while a message is leased", err)
	default:
	}
	require.NoError(t, e.Ack(d2.Lease))
	require.NoError(t, result(t, res))
}

// A delayed message is work: WaitIdle returns after it came due and was
// handled, on the fake clock, with nothing sleeping.
func TestWaitIdleWaitsForDelayed(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e := openEngine(t, "", Options{Clock: fake})
	_, err := e.Enqueue(context.Background(), Message{Delay: time.Minute})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	res := waitIdleArmed(t, e, ctx)
	cancel()
	require.ErrorIs(t, result(t, res), context.Canceled)

	res = waitIdleArmed(t, e, context.Background())
	fake.Advance(time.Minute)
	d, err := e.Dequeue(context.Background())
	require.NoError(t, err)
	require.NoError(t, e.Ack(d.Lease))
	require.NoError(t, result(t, res))
}

// Held messages (behind an open breaker) are live: WaitIdle waits until
// they end, here dead-lettered by MaxHold.
func TestWaitIdleWaitsForHeld(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e := openEngine(t, "", Options{Clock: fake, MaxHold: time.Minute,
		Breaker:  breaker.Options{ConsecutiveFailures: 1, OpenTimeout: time.Hour, MaxOpenTimeout: time.Hour},
		Policies: map[classify.Category]classify.RetryPolicy{classify.Transient: {MaxAttempts: 1}}})
	ctx := context.Background()
	for range 2 {
		_, err := e.Enqueue(ctx, Message{Key: "down"})
		require.NoError(t, err)
	}
	d, err := e.Dequeue(ctx)
	require.NoError(t, err)
	// Dead at once, and the failure opens the key's breaker: the next
	// message is held when it is popped.
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("503"), classify.Transient)))
	_, ok := e.TryDequeue()
	require.False(t, ok)
	require.Equal(t, 1, e.Stats().Held)

	cctx, cancel := context.WithCancel(ctx)
	res := waitIdleArmed(t, e, cctx)
	cancel()
	require.ErrorIs(t, result(t, res), context.Canceled, "held messages are work")

	res = waitIdleArmed(t, e, ctx)
	fake.Advance(2 * time.Minute)
	require.NoError(t, result(t, res))
	assert.Equal(t, 2, e.Stats().Dead)
}

// Close ends a WaitIdle with ErrClosed.
func TestWaitIdleEndsWithErrClosedAtClose(t *testing.T) {
	e := openEngine(t, "", Options{})
	_, err := e.Enqueue(context.Background(), Message{})
	require.NoError(t, err)
	res := waitIdleArmed(t, e, context.Background())
	require.NoError(t, e.Close())
	require.ErrorIs(t, result(t, res), ErrClosed)
}

// Several WaitIdle calls share the wake-up: the last ack wakes them all.
func TestWaitIdleWakesEveryWaiter(t *testing.T) {
	e := openEngine(t, "", Options{})
	_, err := e.Enqueue(context.Background(), Message{})
	require.NoError(t, err)
	var res []<-chan error
	for range 3 {
		res = append(res, waitIdleArmed(t, e, context.Background()))
	}
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d.Lease))
	for _, r := range res {
		require.NoError(t, result(t, r))
	}
}
