package ringwal_test

// Settling: acks that do not wait for the log one by one (Run's workers,
// which append their acks without waiting, and AckBatch, one wait for
// many), Nack and Extend.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

// live is the number of messages an engine still holds.
func live(e *ringwal.Engine) int {
	s := e.Stats()
	return s.Pending + s.Delayed + s.Leased + s.Held
}

// TestRunAcksSurviveClose: Run's workers do not wait for their acks to
// reach the log, but Close writes them: after a clean Close and a reopen,
// nothing a handler acked is delivered again, in every mode.
func TestRunAcksSurviveClose(t *testing.T) {
	const n = 2000
	for _, mode := range []ringwal.Durability{ringwal.Write, ringwal.Fsync, ringwal.Buffered} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			e, err := ringwal.Open(dir, ringwal.Options{Durability: mode})
			require.NoError(t, err)
			msgs := make([]ringwal.Message, n)
			for i := range msgs {
				msgs[i] = ringwal.Message{Payload: []byte("x")}
			}
			_, err = e.EnqueueBatch(ctxBG, msgs)
			require.NoError(t, err)

			var handled atomic.Int64
			all := make(chan struct{})
			ran := make(chan error, 1)
			go func() {
				ran <- e.Run(ctxBG, 4, func(context.Context, ringwal.Delivery) error {
					if handled.Add(1) == n {
						close(all)
					}
					return nil
				})
			}()
			<-all
			// The last handlers have returned; their workers' acks may still
			// be on their way to the log. Close waits for the workers, then
			// writes (and syncs) everything appended.
			require.NoError(t, e.Close())
			require.NoError(t, <-ran)

			e2 := open(t, dir, ringwal.Options{Durability: mode})
			assert.Zero(t, live(e2), "messages acked by a handler came back after a clean Close")
			_, ok := e2.TryDequeue()
			assert.False(t, ok, "a handler-acked message was delivered again")
			assert.Equal(t, int64(n), handled.Load(), "each message handled once")
		})
	}
}

// TestAckBatch: each lease is settled as Ack would settle it; a stale one
// does not stop the others.
func TestAckBatch(t *testing.T) {
	type setup struct {
		e      *ringwal.Engine
		leases []ringwal.Lease // five fresh leases of five messages
	}
	cases := []struct {
		name  string
		batch func(t *testing.T, s setup) []ringwal.Lease
		// wantLive is how many of the five messages are still live after.
		wantLive  int
		wantErr   error  // nil: no error
		wantInErr string // part of the error's text
	}{
		{name: "empty slice", batch: func(*testing.T, setup) []ringwal.Lease { return nil }, wantLive: 5},
		{name: "all valid", batch: func(_ *testing.T, s setup) []ringwal.Lease { return s.leases }},
		{name: "some valid", batch: func(_ *testing.T, s setup) []ringwal.Lease { return s.leases[1:3] }, wantLive: 3},
		{
			name: "some stale",
			batch: func(t *testing.T, s setup) []ringwal.Lease {
				require.NoError(t, s.e.Ack(s.leases[1]))
				require.NoError(t, s.e.Nack(s.leases[3], assert.AnError))
				return s.leases
			},
			wantLive:  1, // the nacked one, waiting for its retry
			wantErr:   ringwal.ErrStaleLease,
			wantInErr: "2 of 5 leases stale (indexes 1 3)",
		},
		{
			name: "duplicates in the slice",
			batch: func(_ *testing.T, s setup) []ringwal.Lease {
				return []ringwal.Lease{s.leases[0], s.leases[1], s.leases[0], s.leases[0]}
			},
			wantLive:  3,
			wantErr:   ringwal.ErrStaleLease,
			wantInErr: "2 of 4 leases stale (indexes 2 3)",
		},
		{
			name:      "zero lease",
			batch:     func(_ *testing.T, s setup) []ringwal.Lease { return []ringwal.Lease{{}, s.leases[4]} },
			wantLive:  4,
			wantErr:   ringwal.ErrStaleLease,
			wantInErr: "1 of 2 leases stale (indexes 0)",
		},
		{
			name: "after Close",
			batch: func(t *testing.T, s setup) []ringwal.Lease {
				require.NoError(t, s.e.Close())
				return s.leases
			},
			wantLive: 5,
			wantErr:  ringwal.ErrClosed,
		},
		{
			name: "empty after Close",
			batch: func(t *testing.T, s setup) []ringwal.Lease {
				require.NoError(t, s.e.Close())
				return []ringwal.Lease{}
			},
			wantLive: 5,
			wantErr:  ringwal.ErrClosed,
		},
	}
	engines := []struct {
		name string
		dir  func(t *testing.T) string
	}{{"memory", func(*testing.T) string { return "" }}, {"write", func(t *testing.T) string { return t.TempDir() }}}
	for _, eng := range engines {
		for _, tc := range cases {
			t.Run(eng.name+"/"+tc.name, func(t *testing.T) {
				e := open(t, eng.dir(t), ringwal.Options{Policies: fastPolicies(5)})
				s := setup{e: e}
				for range 5 {
					enqueue(t, e, ringwal.Message{Payload: []byte("p")})
				}
				for range 5 {
					s.leases = append(s.leases, dequeue(t, e).Lease)
				}
				batch := tc.batch(t, s)
				err := e.AckBatch(batch)
				if tc.wantErr == nil {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, tc.wantErr)
					assert.Contains(t, err.Error(), tc.wantInErr)
				}
				if tc.wantErr == ringwal.ErrClosed {
					return
				}
				assert.Equal(t, tc.wantLive, live(e))
				for i, l := range batch { // settled now, one way or another
					assert.ErrorIs(t, e.Ack(l), ringwal.ErrStaleLease, "lease %d", i)
				}
			})
		}
	}
}

// TestAckBatchDurable: once AckBatch returns in Fsync mode its acks are in
// the log: a copy of the directory taken then (what a crash would leave,
// without Close's final flush) reopens without them, and with the message
// that was not in the batch.
func TestAckBatchDurable(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, ringwal.Options{Durability: ringwal.Fsync})
	for range 10 {
		enqueue(t, e, ringwal.Message{Payload: []byte("p")})
	}
	ds, err := e.DequeueBatch(ctxBG, 10)
	require.NoError(t, err)
	require.Len(t, ds, 10)
	ls := make([]ringwal.Lease, 0, 9)
	for _, d := range ds[:9] {
		ls = append(ls, d.Lease)
	}
	require.NoError(t, e.AckBatch(ls))

	crashed := filepath.Join(t.TempDir(), "crashed")
	require.NoError(t, os.CopyFS(crashed, os.DirFS(dir)))
	e2 := open(t, crashed, ringwal.Options{Durability: ringwal.Fsync})
	require.Equal(t, 1, live(e2), "only the message left out of the batch")
	d := dequeue(t, e2)
	assert.Equal(t, ds[9].ID, d.ID)
}

// TestAckBatchConcurrent: batches racing over the same leases ack each
// message exactly once; every other appearance is stale.
func TestAckBatchConcurrent(t *testing.T) {
	const n, racers = 300, 4
	e := open(t, t.TempDir(), ringwal.Options{})
	ls := make([]ringwal.Lease, 0, n)
	for range n {
		enqueue(t, e, ringwal.Message{Payload: []byte("p")})
	}
	for range n {
		ls = append(ls, dequeue(t, e).Lease)
	}
	errs := make(chan error, racers)
	for g := range racers {
		go func() {
			// Each racer acks all of them, in chunks of a different size.
			var err error
			for chunk := ls; len(chunk) > 0 && err == nil; {
				k := min(len(chunk), 7+g*13)
				if berr := e.AckBatch(chunk[:k]); berr != nil && !errors.Is(berr, ringwal.ErrStaleLease) {
					err = berr
				}
				chunk = chunk[k:]
			}
			errs <- err
		}()
	}
	for range racers {
		require.NoError(t, <-errs)
	}
	st := e.Stats()
	assert.Equal(t, uint64(n), st.Acked)
	assert.Zero(t, live(e))
}

func TestExtend(t *testing.T) {
	t.Run("outlives the old expiry", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{LeaseTimeout: time.Second})
		id := enqueueP(t, e, ringwal.Normal, "x")
		d := dequeue(t, e)
		fake.Advance(500 * time.Millisecond)
		require.NoError(t, e.Extend(d.Lease, 2*time.Second)) // now ends at +2.5s
		fake.Advance(time.Second)                            // +1.5s: past the old end
		stays(t, e, id, ringwal.Leased, "extended lease past its old end")
		assert.NoError(t, e.Ack(d.Lease), "the extended lease is still valid")
	})
	t.Run("expires at the new time", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{LeaseTimeout: time.Second, Policies: fastPolicies(3)})
		id := enqueueP(t, e, ringwal.Normal, "x")
		d := dequeue(t, e)
		fake.Advance(500 * time.Millisecond)
		require.NoError(t, e.Extend(d.Lease, time.Second)) // ends at +1.5s
		fake.Advance(700 * time.Millisecond)               // +1.2s
		stays(t, e, id, ringwal.Leased, "before the extended end")
		fake.Advance(400 * time.Millisecond) // +1.6s
		info := stateNot(t, e, id, ringwal.Leased)
		assert.Equal(t, classify.Timeout, info.LastCategory)
		assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease)
	})
	t.Run("shorter than the remainder", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{LeaseTimeout: time.Minute, Policies: fastPolicies(3)})
		id := enqueueP(t, e, ringwal.Normal, "x")
		d := dequeue(t, e)
		require.NoError(t, e.Extend(d.Lease, 100*time.Millisecond)) // "now ends d from now"
		fake.Advance(105 * time.Millisecond)
		stateNot(t, e, id, ringwal.Leased)
		assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease)
	})
}

// Extend by a huge duration keeps the lease, it does not end it at once.
func TestExtendHugeDuration(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{
		LeaseTimeout: 100 * time.Millisecond,
		Policies:     fastPolicies(5),
	})
	enqueueP(t, e, ringwal.Normal, "x")
	d := dequeue(t, e)
	require.NoError(t, e.Extend(d.Lease, time.Duration(math.MaxInt64)))
	fake.Advance(200 * time.Millisecond)
	time.Sleep(quiet)
	fake.Advance(200 * time.Millisecond)
	time.Sleep(quiet)
	assert.NoError(t, e.Ack(d.Lease), "the lease was extended for ever")
}

// A nack whose retry delay is huge retries much later, not at once.
func TestNackHugeDelay(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	id := enqueueP(t, e, ringwal.Normal, "x")
	d := dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, classify.After(transient("later"), time.Duration(math.MaxInt64))))
	fake.Advance(time.Second)
	assertNothingReady(t, e, "retry delay of ~292 years")
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Delayed, info.State)
}

// A short Extend under the real (coarse) clock ends the lease about then,
// not at the next periodic lease scan (LeaseTimeout later).
func TestShortExtendExpiresOnTimeRealClock(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{
		LeaseTimeout: 5 * time.Second,
		Policies:     fastPolicies(5),
	})
	require.NoError(t, err)
	defer e.Close()
	for i := 0; i < 20; i++ {
		_, err := e.Enqueue(ctxBG, ringwal.Message{Payload: []byte(fmt.Sprint(i))})
		require.NoError(t, err)
		d := dequeue(t, e)
		require.NoError(t, e.Extend(d.Lease, 3*time.Millisecond))
		deadline := time.Now().Add(2 * time.Second)
		for {
			info, err := e.Get(d.ID)
			require.NoError(t, err)
			if info.State != ringwal.Leased {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: a lease extended by 3ms still held after 500ms", i)
			}
			time.Sleep(time.Millisecond)
		}
		// Drain the retry.
		d = dequeue(t, e)
		require.NoError(t, e.Ack(d.Lease))
	}
}
