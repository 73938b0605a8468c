package ringwal_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
)

// Durations of centuries (ending before 2262, the last instant the engine
// holds; times_test.go checks those past it are refused) must not wrap
// into the past.
func TestHugeTTLAndDelay(t *testing.T) {
	const centuries = 2 * 100 * 365 * 24 * time.Hour
	tests := []struct {
		name string
		msg  ringwal.Message
		want ringwal.State
	}{
		{"TTL", ringwal.Message{TTL: centuries}, ringwal.Pending},
		{"Delay", ringwal.Message{Delay: centuries}, ringwal.Delayed},
		{"both", ringwal.Message{TTL: centuries, Delay: centuries}, ringwal.Delayed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, fake := memEngine(t, ringwal.Options{})
			id := enqueue(t, e, tt.msg)
			fake.Advance(time.Hour)
			stays(t, e, id, tt.want, "a duration of centuries")
		})
	}
}

// A message's MaxAttempts raises the retries of retryable failures; it does
// not make a failure marked Permanent retryable.
func TestMaxAttemptsDoesNotRetryPermanent(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	id := enqueue(t, e, ringwal.Message{MaxAttempts: 5})
	d := dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, permanent("400 bad request")))
	info := waitState(t, e, id, ringwal.Dead)
	assert.Equal(t, classify.Permanent, info.LastCategory)
	assert.Equal(t, 1, info.Attempts)
}

// A TTL that ends while the message is leased is enforced when the lease
// ends without an Ack: no retry goes out and nothing sits pending.
func TestTTLEndsDuringLease(t *testing.T) {
	for _, end := range []string{"nack", "requeue", "lease expiry"} {
		t.Run(end, func(t *testing.T) {
			pol := fastPolicy(5)
			e, fake := memEngine(t, ringwal.Options{Policies: map[classify.Category]classify.RetryPolicy{classify.Transient: pol, classify.Timeout: pol},
				LeaseTimeout: time.Second})
			id := enqueue(t, e, ringwal.Message{TTL: 100 * time.Millisecond})
			d := dequeue(t, e)
			fake.Advance(150 * time.Millisecond) // the TTL timer fires while leased
			stays(t, e, id, ringwal.Leased, "a lease is not cut short by the TTL")
			switch end {
			case "nack":
				require.NoError(t, e.Nack(d.Lease, transient("503")))
			case "requeue":
				require.NoError(t, e.Requeue(id))
			case "lease expiry":
				fake.Advance(2 * time.Second)
			}
			info := waitState(t, e, id, ringwal.Dead)
			assert.Equal(t, classify.Expired, info.LastCategory)
			assertNothingReady(t, e, "expired during its lease")
		})
	}
}

// Peek's n is a bound, not a size: a huge n allocates nothing extra.
func TestPeekHugeN(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	enqueue(t, e, ringwal.Message{Payload: []byte("a")})
	got := e.Peek(math.MaxInt)
	require.Len(t, got, 1)
	assert.Equal(t, "a", string(got[0].Message.Payload))
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

// After Close every method says ErrClosed, even to bad arguments.
func TestClosedWinsOverBadArguments(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	assert.ErrorIs(t, e.Run(ctxBG, 0, nil), ringwal.ErrClosed)
	assert.ErrorIs(t, e.Extend(ringwal.Lease{}, 0), ringwal.ErrClosed)
	_, err = e.DequeueBatch(ctxBG, 0)
	assert.ErrorIs(t, err, ringwal.ErrClosed)
}

// Delays never end early on the real clock, whose cached reading the hot
// path uses and which lags when the machine is busy. (Timing dependent
// before the fix: it failed in some runs, never after.)
func TestDelaysNeverEarlyOnRealClock(t *testing.T) {
	const d = 5 * time.Millisecond
	e := open(t, "", ringwal.Options{Policies: fastPolicies(100)})
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		start := time.Now()
		_, err := e.Enqueue(ctx, ringwal.Message{Delay: d})
		require.NoError(t, err)
		dl, err := e.Dequeue(ctx)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), d, "Delay ended early")

		start = time.Now()
		require.NoError(t, e.Nack(dl.Lease, classify.After(transient("503"), d)))
		again, err := e.Dequeue(ctx)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), d, "classify.After ended early")
		require.NoError(t, e.Ack(again.Lease))
	}
}
