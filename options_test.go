package ringwal_test

// Tests of the intake side: Enqueue, TryEnqueue, EnqueueBatch,
// capacity, dedup, options and Close racing producers.

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
)

// A TierCapacity no machine can hold is bad input: Open must say so, not
// die allocating five rings of it (it used to be a fatal out-of-memory).
// A TierCapacity merely above MaxMessages still works.
func TestTierCapacityTooLargeIsInvalid(t *testing.T) {
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

// Breaker options are checked by Open: a FailureRate above 1 (a
// percentage, say) or NaN silently never tripped, and a huge Buckets was
// a fatal out-of-memory at the first message with a Key.
func TestBreakerOptionsValidated(t *testing.T) {
	for name, b := range map[string]breaker.Options{
		"rate as percent": {FailureRate: 50},
		"rate NaN":        {FailureRate: math.NaN()},
		"huge buckets":    {Buckets: 1 << 40, Window: 1 << 50},
	} {
		var e *ringwal.Engine
		var err error
		require.NotPanics(t, func() { e, err = ringwal.Open("", ringwal.Options{Breaker: b}) }, name)
		if e != nil {
			_ = e.Close()
		}
		assert.ErrorIs(t, err, ringwal.ErrInvalid, name)
	}
}

// Odd but valid options open an engine that works: no panic anywhere on
// the way of a message through enqueue, lease, nack, retry and ack.
func TestOddOptionsWork(t *testing.T) {
	for name, o := range map[string]ringwal.Options{
		"huge weights":      {Weights: [5]int{1 << 62, 1 << 62, 1 << 62, 1 << 62, 1 << 62}},
		"one weight":        {Weights: [5]int{0, 0, 0, 0, 1}},
		"no aging":          {AgingAfter: -1},
		"huge durations":    {LeaseTimeout: 1<<63 - 1, DeadlineSlack: 1<<63 - 1, CloseGrace: time.Millisecond},
		"off switches":      {DedupWindow: -1, CheckpointBytes: -1, DeadLetterRetention: -1},
		"tiny capacities":   {TierCapacity: 1, MaxMessages: 1},
		"breaker negatives": {Breaker: breaker.Options{ConsecutiveFailures: -1, FailureRate: -1, MinCalls: -1, Window: -1, Buckets: -1, OpenTimeout: -1, MaxProbes: -1, IdleTTL: -1}},
		"unknown category":  {Policies: map[classify.Category]classify.RetryPolicy{classify.Category(200): {MaxAttempts: 2}}},
	} {
		t.Run(name, func(t *testing.T) {
			require.NotPanics(t, func() {
				e, _ := memEngine(t, o)
				id := enqueue(t, e, ringwal.Message{Key: "k", Priority: ringwal.High, Deadline: time.Unix(1, 0)})
				d := dequeue(t, e)
				require.Equal(t, id, d.ID)
				require.NoError(t, e.Nack(d.Lease, classify.After(errors.New("again"), 0)))
				d = dequeue(t, e)
				require.NoError(t, e.Ack(d.Lease))
			})
		})
	}
}

// Messages that expired while pending leave their ring entries behind
// until a consumer pops them. With no consumer around, the tier looked
// full for good: TryEnqueue said ErrFull and Enqueue waited with not one
// live message in the engine. The room is real once they are gone, up to
// the ring's size in live messages, and order holds.
func TestExpiredMessagesLeaveRoomInTheirTier(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{TierCapacity: 4, MaxMessages: 64})
	for i := 0; i < 4; i++ {
		enqueue(t, e, ringwal.Message{TTL: time.Second})
	}
	fake.Advance(2 * time.Second)
	require.Eventually(t, func() bool { s := e.Stats(); return s.Dead == 4 && s.Pending == 0 }, waitFor, tick)

	var ids []ringwal.ID
	id, err := e.TryEnqueue(ringwal.Message{})
	require.NoError(t, err, "no live message: TryEnqueue has room")
	ids = append(ids, id)
	ctx, cancel := context.WithTimeout(ctxBG, time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		id, err := e.Enqueue(ctx, ringwal.Message{})
		require.NoError(t, err, "Enqueue %d does not wait for a consumer", i)
		ids = append(ids, id)
	}
	_, err = e.TryEnqueue(ringwal.Message{})
	assert.ErrorIs(t, err, ringwal.ErrFull, "four live messages fill a tier of four")
	for _, want := range ids {
		d := dequeue(t, e)
		require.Equal(t, want, d.ID, "FIFO")
		require.NoError(t, e.Ack(d.Lease))
	}
	_, ok := e.TryDequeue()
	assert.False(t, ok)
}

// A handler that calls Close (a "shutdown" message, say) used to hang
// Close and Run for good: Close waited for the handler, which waited for
// Close. Close now returns after the grace and one more; the message,
// leased when the engine closed, is pending after a reopen.
func TestCloseFromHandlerReturns(t *testing.T) {
	dir := t.TempDir()
	e, err := ringwal.Open(dir, ringwal.Options{CloseGrace: 30 * time.Millisecond})
	require.NoError(t, err)
	closed := make(chan error, 1)
	run := make(chan error, 1)
	go func() {
		run <- e.Run(ctxBG, 2, func(ctx context.Context, d ringwal.Delivery) error {
			closed <- e.Close()
			return nil
		})
	}()
	id := enqueue(t, e, ringwal.Message{Payload: []byte("shutdown")})
	select {
	case err := <-closed:
		assert.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Close called from a handler does not return")
	}
	select {
	case err := <-run:
		assert.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run does not return after its handler's Close")
	}
	e2 := open(t, dir, ringwal.Options{})
	info, err := e2.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
	assert.Equal(t, 1, info.Attempts)
}

// Get of a message being redriven finds it, dead or pending: it used to
// answer ErrNotFound in the moment between its leaving the dead-letter
// store and its landing in the slab.
func TestGetDuringRedriveFindsTheMessage(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		e := open(t, dir, ringwal.Options{})
		id := enqueue(t, e, ringwal.Message{})
		var gets, notFound atomic.Int64
		deadline := time.Now().Add(300 * time.Millisecond)
		for round := 0; time.Now().Before(deadline) && round < 2000; round++ {
			d := dequeue(t, e)
			require.NoError(t, e.Nack(d.Lease, permanent("x")))
			waitState(t, e, id, ringwal.Dead)
			stop := make(chan struct{})
			done := make(chan struct{})
			var n atomic.Int64
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, err := e.Get(id)
					n.Add(1)
					if errors.Is(err, ringwal.ErrNotFound) {
						notFound.Add(1)
					}
				}
			}()
			for n.Load() < 20 {
				runtime.Gosched()
			}
			require.NoError(t, e.Redrive(id))
			close(stop)
			<-done
			gets.Add(n.Load())
		}
		assert.Zero(t, notFound.Load(), "dir %q: Get said ErrNotFound %d times in %d during Redrive", dir, notFound.Load(), gets.Load())
		require.NoError(t, e.Close())
	}
}

// A batch bigger than its tier's ring goes partly to the spill queue;
// single enqueues made meanwhile (waiting for the tier) come out after it,
// and everything comes out once, in ID order.
func TestBatchSpillThenSinglesKeepFIFO(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{TierCapacity: 4, MaxMessages: 256})
	batch := make([]ringwal.Message, 100)
	ids, err := e.EnqueueBatch(ctxBG, batch)
	require.NoError(t, err)
	require.Len(t, ids, 100)
	singles := make(chan ringwal.ID, 50)
	go func() {
		defer close(singles)
		for i := 0; i < 50; i++ {
			id, err := e.Enqueue(ctxBG, ringwal.Message{})
			if err != nil {
				t.Error(err)
				return
			}
			singles <- id
		}
	}()
	var got []ringwal.ID
	for len(got) < 150 {
		d := dequeue(t, e)
		got = append(got, d.ID)
		require.NoError(t, e.Ack(d.Lease))
	}
	for i := 1; i < len(got); i++ {
		require.Less(t, got[i-1], got[i], "FIFO within the tier at %d: %v", i, got)
	}
	assert.Equal(t, ids, got[:100])
	var single []ringwal.ID
	for id := range singles {
		single = append(single, id)
	}
	assert.Equal(t, single, got[100:])
	_, ok := e.TryDequeue()
	assert.False(t, ok)
}
