package ringwal_test

// Concurrency: settling, leases and their expiry, held messages,
// dequeue and Run, under concurrent callers.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
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
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

// Run must return soon after its ctx ends even when messages keep being
// ready: a worker must not go on taking deliveries with an ended ctx.
func TestRunReturnsWhenCtxEndsWithBacklog(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	const n = 3000
	for i := 0; i < n; i++ {
		enqueueP(t, e, ringwal.Normal, "x")
	}
	var handled atomic.Int64
	ctx, cancel := context.WithCancel(ctxBG)
	defer cancel()
	runErr := make(chan error, 1)
	go func() {
		runErr <- e.Run(ctx, 2, func(context.Context, ringwal.Delivery) error {
			if handled.Add(1) == 5 {
				cancel()
			}
			time.Sleep(time.Millisecond)
			return nil
		})
	}()
	select {
	case err := <-runErr:
		require.NoError(t, err)
	case <-time.After(waitFor):
		<-runErr
		t.Fatalf("Run kept handling after its ctx ended (%d of %d handled)", handled.Load(), n)
	}
	assert.Less(t, handled.Load(), int64(20), "deliveries taken after ctx ended")
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

// A Run handler's ctx ends when its lease expires, even if a reader (Get)
// happens to look at the record just as the worker starts the handler.
func TestRunCtxEndsOnExpiryDespiteReaders(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{
		LeaseTimeout: 100 * time.Millisecond,
		Policies:     map[classify.Category]classify.RetryPolicy{classify.Timeout: fastPolicy(1)},
	})
	const rounds = 100
	ids := make([]ringwal.ID, rounds+1)
	for i := range ids {
		ids[i] = enqueueP(t, e, ringwal.Normal, "x")
	}
	var cur, spin atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { // a reader: keeps looking at the next message to be leased
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = e.Get(ids[cur.Load()])
				for range rand.IntN(64) { // vary the phase against the worker's
					spin.Add(1)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	started := make(chan ringwal.ID, 1)
	ended := make(chan ringwal.ID, 1)
	ctx, cancel := context.WithCancel(ctxBG)
	runErr := make(chan error, 1)
	go func() {
		runErr <- e.Run(ctx, 1, func(hctx context.Context, d ringwal.Delivery) error {
			started <- d.ID
			select {
			case <-hctx.Done():
			case <-ctx.Done():
			}
			ended <- d.ID
			return errors.New("done")
		})
	}()
	defer func() { cancel(); <-runErr }()

	for i := 0; i < rounds; i++ {
		select {
		case id := <-started:
			require.Equal(t, ids[i], id)
		case <-time.After(waitFor):
			t.Fatalf("round %d: handler not called", i)
		}
		cur.Store(int64(i + 1))
		fake.Advance(150 * time.Millisecond)
		select {
		case <-ended:
		case <-time.After(waitFor):
			t.Fatalf("round %d: the handler's ctx did not end when its lease expired", i)
		}
	}
}

// Stats counts a message that sits still, whatever readers do meanwhile.
func TestStatsCountsStableMessagesUnderReaders(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	pending := enqueueP(t, e, ringwal.Normal, "p")
	leased := enqueueP(t, e, ringwal.Normal, "l")
	d := dequeue(t, e)
	require.Equal(t, pending, d.ID)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, id := range []ringwal.ID{pending, leased} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = e.Get(id)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for i := 0; i < 300; i++ {
		s := e.Stats()
		if s.Pending != 1 || s.Leased != 1 {
			t.Fatalf("scan %d: Pending %d, Leased %d; want 1 and 1 (nothing moved)", i, s.Pending, s.Leased)
		}
	}
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

// A short TTL under the real (coarse) clock dead-letters the message about
// then, with no consumer: the TTL is eager.
func TestShortTTLExpiresEagerlyRealClock(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	for i := 0; i < 20; i++ {
		id, err := e.Enqueue(ctxBG, ringwal.Message{TTL: 3 * time.Millisecond})
		require.NoError(t, err)
		deadline := time.Now().Add(2 * time.Second)
		for {
			info, err := e.Get(id)
			require.NoError(t, err)
			if info.State == ringwal.Dead {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: a message with a 3ms TTL still %v after 500ms", i, info.State)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// Many producers and consumers acking, nacking, extending and abandoning
// leases while time moves and a breaker trips and recovers: every message
// ends acked exactly once or dead, and Stats agrees.
// With a log, a consumer may pop a message the instant it is pushed, while
// its enqueue is still being published.
func TestStressNothingLostOrAckedTwice(t *testing.T) {
	t.Run("memory", func(t *testing.T) { stressNothingLostOrAckedTwice(t, "") })
	t.Run("buffered log", func(t *testing.T) { stressNothingLostOrAckedTwice(t, t.TempDir()) })
}

func stressNothingLostOrAckedTwice(t *testing.T, dir string) {
	fake := clock.NewFake(time.Time{})
	e := open(t, dir, ringwal.Options{
		Clock:        fake,
		Durability:   ringwal.Buffered,
		LeaseTimeout: 50 * time.Millisecond,
		Policies:     fastPolicies(4),
		Breaker:      breaker.Options{ConsecutiveFailures: 3, OpenTimeout: 100 * time.Millisecond},
	})
	const producers, perProducer, consumers = 2, 400, 4
	keys := []string{"", "a", "b"}
	var ids sync.Map  // ID -> struct{}
	var acks sync.Map // ID -> *atomic.Int32
	var calm atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perProducer; i++ {
				id, err := e.Enqueue(ctxBG, ringwal.Message{Key: keys[i%len(keys)], Priority: ringwal.Priority(i%3 - 1)})
				if !assert.NoError(t, err) {
					return
				}
				ids.Store(id, struct{}{})
			}
		}()
	}
	var cw sync.WaitGroup
	for c := 0; c < consumers; c++ {
		cw.Add(1)
		go func() {
			defer cw.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				d, ok := e.TryDequeue()
				if !ok {
					runtime.Gosched()
					continue
				}
				n := rand.IntN(10)
				if calm.Load() {
					n = 0
				}
				switch {
				case n < 6:
				case n < 8:
					_ = e.Nack(d.Lease, transient("flaky"))
					continue
				case n < 9:
					_ = e.Extend(d.Lease, time.Duration(1+rand.IntN(60))*time.Millisecond)
				default:
					continue // abandoned: the lease expires
				}
				if err := e.Ack(d.Lease); err == nil {
					v, _ := acks.LoadOrStore(d.ID, new(atomic.Int32))
					if v.(*atomic.Int32).Add(1) > 1 {
						t.Errorf("ID %d acked twice", d.ID)
					}
				} else {
					assert.ErrorIs(t, err, ringwal.ErrStaleLease)
				}
			}
		}()
	}
	cw.Add(1)
	go func() { // time moves, and readers look on
		defer cw.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			fake.Advance(2 * time.Millisecond)
			_, _ = e.Get(ringwal.ID(1 + rand.IntN(producers*perProducer)))
			_ = e.Stats()
			time.Sleep(100 * time.Microsecond)
		}
	}()
	wg.Wait()
	time.Sleep(200 * time.Millisecond)
	calm.Store(true)
	var s ringwal.Stats
	ok := assert.Eventually(t, func() bool {
		s = e.Stats()
		return s.Pending+s.Delayed+s.Leased+s.Held == 0
	}, waitFor, 5*time.Millisecond)
	close(stop)
	cw.Wait()
	require.True(t, ok, "messages left: %+v", counts(s))

	nAcked := 0
	acks.Range(func(_, _ any) bool { nAcked++; return true })
	dead, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	deadIDs := map[ringwal.ID]bool{}
	for _, x := range dead {
		deadIDs[x.ID] = true
	}
	ids.Range(func(k, _ any) bool {
		id := k.(ringwal.ID)
		_, acked := acks.Load(id)
		if acked == deadIDs[id] {
			t.Errorf("ID %d: acked %v, dead %v", id, acked, deadIDs[id])
		}
		return true
	})
	s = e.Stats()
	assert.Equal(t, producers*perProducer, nAcked+len(dead), "acked + dead")
	assert.Equal(t, uint64(nAcked), s.Acked, "Stats.Acked")
	assert.Equal(t, len(dead), s.Dead, "Stats.Dead")
	assert.Equal(t, uint64(producers*perProducer), s.Enqueued, "Stats.Enqueued")
}

// TestConsumersAtTheHeadLoseNothing: consumers that pop each message the
// moment it is pushed (while its enqueue is still being published) get
// every one, with and without a log.
func TestConsumersAtTheHeadLoseNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"memory", func(*testing.T) string { return "" }},
		{"buffered log", func(t *testing.T) string { return t.TempDir() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := open(t, c.dir(t), ringwal.Options{Durability: ringwal.Buffered})
			const producers, perProducer = 2, 20_000
			var acked atomic.Int64
			var wg sync.WaitGroup
			for p := 0; p < producers; p++ {
				wg.Add(2)
				go func() {
					defer wg.Done()
					for i := 0; i < perProducer; i++ {
						_, err := e.Enqueue(ctxBG, ringwal.Message{})
						if !assert.NoError(t, err) {
							return
						}
					}
				}()
				go func() { // a consumer spinning on the head
					defer wg.Done()
					deadline := time.Now().Add(waitFor)
					for acked.Load() < producers*perProducer && time.Now().Before(deadline) {
						if d, ok := e.TryDequeue(); ok && assert.NoError(t, e.Ack(d.Lease)) {
							acked.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			s := e.Stats()
			assert.Equal(t, int64(producers*perProducer), acked.Load(), "acked; left: %+v", counts(s))
		})
	}
}
