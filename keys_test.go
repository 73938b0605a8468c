package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
)

// rateLimited is a downstream's 429 with a Retry-After header.
type rateLimited struct{ after time.Duration }

func (r rateLimited) Error() string { return fmt.Sprintf("429 retry after %v", r.after) }

func (r rateLimited) RetryAfter() time.Duration { return r.after }

func (r rateLimited) StatusCode() int { return 429 }

// dequeueSoon polls TryDequeue for a while: the housekeeper puts set-aside
// messages back on its own goroutine.
func dequeueSoon(t *testing.T, e *ringwal.Engine) (ringwal.Delivery, bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		if d, ok := e.TryDequeue(); ok {
			return d, true
		}
		if time.Now().After(deadline) {
			return ringwal.Delivery{}, false
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func TestOrderedKeysKeepOrderUnderRetriesWithSixteenWorkers(t *testing.T) {
	const keys, perKey = 8, 40
	e, err := ringwal.Open("", ringwal.Options{
		KeyPolicy: policyFor(ringwal.KeyPolicy{Ordered: true}),
		Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: {MaxAttempts: 1000, Base: 100 * time.Microsecond, Max: time.Millisecond, Multiplier: 2},
		},
		Breaker: breakerOff(),
	})
	require.NoError(t, err)
	defer e.Close()

	var mu sync.Mutex
	delivered := map[string][]ringwal.ID{}
	inFlight := map[string]*atomic.Int32{}
	enqueued := map[string][]ringwal.ID{}
	for k := range keys {
		key := fmt.Sprintf("chat-%d", k)
		inFlight[key] = new(atomic.Int32)
	}
	// Interleave keys and priorities: enqueue order must win within a key.
	for i := range perKey {
		for k := range keys {
			key := fmt.Sprintf("chat-%d", k)
			id := mustEnqueue(t, e, ringwal.Message{Key: key, Priority: ringwal.Priority(i%5 - 2)})
			enqueued[key] = append(enqueued[key], id)
		}
	}
	var acked atomic.Int32
	var overlap atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, 16, func(_ context.Context, d ringwal.Delivery) error {
			key := d.Message.Key
			if inFlight[key].Add(1) > 1 {
				overlap.Add(1)
			}
			defer inFlight[key].Add(-1)
			mu.Lock()
			delivered[key] = append(delivered[key], d.ID)
			mu.Unlock()
			if rand.IntN(4) == 0 {
				return classify.Mark(errors.New("flaky downstream"), classify.Transient)
			}
			acked.Add(1)
			return nil
		})
	}()
	require.Eventually(t, func() bool { return acked.Load() == keys*perKey }, 30*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	assert.Zero(t, overlap.Load(), "two messages of one ordered key were in flight at once")
	for key, got := range delivered {
		// Deliveries in enqueue order, a retry repeating an ID before any
		// later one: the sequence never goes back.
		var last ringwal.ID
		var firsts []ringwal.ID
		for _, id := range got {
			require.GreaterOrEqual(t, id, last, "key %s went back from %d to %d", key, last, id)
			if id != last {
				firsts = append(firsts, id)
			}
			last = id
		}
		assert.Equal(t, enqueued[key], firsts, "key %s", key)
	}
}

// breakerOff keeps the breaker out of tests about keys' own controls.
func breakerOff() breaker.Options {
	return breaker.Options{ConsecutiveFailures: -1, FailureRate: -1}
}

func TestOrderedKeyEnqueueOrderWinsAcrossPriorities(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{KeyPolicy: policyFor(ringwal.KeyPolicy{Ordered: true})})
	require.NoError(t, err)
	defer e.Close()
	low := mustEnqueue(t, e, ringwal.Message{Key: "k", Priority: ringwal.Low})
	crit := mustEnqueue(t, e, ringwal.Message{Key: "k", Priority: ringwal.Critical})
	other := mustEnqueue(t, e, ringwal.Message{Key: "other", Priority: ringwal.Normal})

	info, err := e.Get(crit)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
	assert.Equal(t, ringwal.WaitOrdered, info.Waiting, "behind its key's head")

	d1, ok := e.TryDequeue()
	require.True(t, ok)
	d2, ok := e.TryDequeue()
	require.True(t, ok)
	assert.ElementsMatch(t, []ringwal.ID{low, other}, []ringwal.ID{d1.ID, d2.ID}, "the Critical one waits for the Low one")
	_, ok = e.TryDequeue()
	assert.False(t, ok, "nothing else of key k may go while its head is out")
	for _, d := range []ringwal.Delivery{d1, d2} {
		if d.ID == low {
			require.NoError(t, e.Ack(d.Lease))
		}
	}
	d3, ok := dequeueSoon(t, e)
	require.True(t, ok)
	assert.Equal(t, crit, d3.ID)
}

func TestNackedHeadKeepsItsOrderedKey(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e, err := ringwal.Open("", ringwal.Options{Clock: fake, KeyPolicy: policyFor(ringwal.KeyPolicy{Ordered: true}), Breaker: breakerOff()})
	require.NoError(t, err)
	defer e.Close()
	first := mustEnqueue(t, e, ringwal.Message{Key: "k"})
	second := mustEnqueue(t, e, ringwal.Message{Key: "k"})
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.Equal(t, first, d.ID)
	require.NoError(t, e.Nack(d.Lease, classify.After(errors.New("busy"), time.Second)))
	_, ok = e.TryDequeue()
	assert.False(t, ok, "the second waits while the first is retried")
	fake.Advance(time.Second)
	d, ok = dequeueSoon(t, e)
	require.True(t, ok)
	assert.Equal(t, first, d.ID, "the retry goes first")
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("bad"), classify.Permanent)))
	d, ok = dequeueSoon(t, e)
	require.True(t, ok, "dead-lettering the head lets the next one go")
	assert.Equal(t, second, d.ID)
}

func TestDeadKeyAtItsCapLeavesOtherKeysFlowing(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e, err := ringwal.Open("", ringwal.Options{
		Clock: fake, MaxMessages: 64,
		Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: {MaxAttempts: 1000, Base: time.Second, Max: time.Second, Multiplier: 1},
		},
	})
	require.NoError(t, err)
	defer e.Close()
	// Open the dead key's breaker: five consecutive failures.
	for range 5 {
		mustEnqueue(t, e, ringwal.Message{Key: "dead"})
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Nack(d.Lease, errors.New("connection refused")))
	}
	fake.Advance(time.Second) // the retries come due, and are held
	require.Eventually(t, func() bool { _, ok := e.TryDequeue(); return !ok && e.Stats().Held == 5 }, 5*time.Second, time.Millisecond)
	// Its new messages pile up held until a quarter of MaxMessages.
	var capErr error
	for i := 0; i < 64 && capErr == nil; i++ {
		if _, capErr = e.TryEnqueue(ringwal.Message{Key: "dead"}); capErr == nil {
			_, ok := e.TryDequeue()
			require.False(t, ok, "a message of the dead key must not be delivered")
		}
	}
	require.ErrorIs(t, capErr, ringwal.ErrFull)
	assert.Contains(t, capErr.Error(), `"dead"`)
	assert.Contains(t, capErr.Error(), "breaker is open")
	st := e.Stats()
	assert.Equal(t, 16, st.Held, "a quarter of MaxMessages")
	// Another key keeps the rest of the engine.
	for range 40 {
		id := mustEnqueue(t, e, ringwal.Message{Key: "healthy"})
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.Equal(t, id, d.ID)
		require.NoError(t, e.Ack(d.Lease))
	}
	for range 40 {
		mustEnqueue(t, e, ringwal.Message{Key: "healthy"})
	}
	assert.Equal(t, 40, e.Stats().Pending, "the healthy key fills what the dead one leaves")
}

func TestKeyRateHoldsWithinTenPercent(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e, err := ringwal.Open("", ringwal.Options{Clock: fake, KeyPolicy: func(key string) ringwal.KeyPolicy {
		if key == "slack" {
			return ringwal.KeyPolicy{Rate: 20, Burst: 1}
		}
		return ringwal.KeyPolicy{}
	}})
	require.NoError(t, err)
	defer e.Close()
	for range 400 {
		mustEnqueue(t, e, ringwal.Message{Key: "slack"})
	}
	const window = 5 * time.Second
	const step = 50 * time.Millisecond
	got := 0
	for elapsed := time.Duration(0); elapsed < window; elapsed += step {
		// Everything deliverable at this instant; the housekeeper puts
		// back what a token allows on its own goroutine.
		for {
			d, ok := e.TryDequeue()
			if !ok {
				if waitForRecheck(e) {
					continue
				}
				break
			}
			got++
			require.NoError(t, e.Ack(d.Lease))
		}
		fake.Advance(step)
	}
	want := 20 * window.Seconds()
	assert.InEpsilon(t, want, float64(got), 0.10, "got %d deliveries in %v at 20/s", got, window)
	assert.Equal(t, 400-got, e.Stats().Pending)
}

// waitForRecheck gives the housekeeper a moment to put back a message a
// due token allows; it reports whether one became deliverable.
func waitForRecheck(e *ringwal.Engine) bool {
	for range 20 {
		if st := e.Stats(); st.Pending > st.Waiting {
			return true
		}
		time.Sleep(100 * time.Microsecond)
	}
	return false
}

func TestRetryAfterPausesOnlyItsKey(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e, err := ringwal.Open("", ringwal.Options{Clock: fake, Breaker: breakerOff()})
	require.NoError(t, err)
	defer e.Close()
	a1 := mustEnqueue(t, e, ringwal.Message{Key: "a"})
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, rateLimited{after: 30 * time.Second}))
	a2 := mustEnqueue(t, e, ringwal.Message{Key: "a"})
	b := mustEnqueue(t, e, ringwal.Message{Key: "b"})

	d, ok = e.TryDequeue()
	require.True(t, ok)
	assert.Equal(t, b, d.ID, "key b is not touched")
	require.NoError(t, e.Ack(d.Lease))
	_, ok = e.TryDequeue()
	assert.False(t, ok, "key a waits out its Retry-After")
	info, err := e.Get(a2)
	require.NoError(t, err)
	assert.Equal(t, ringwal.WaitPaused, info.Waiting)
	assert.Zero(t, info.Attempts, "waiting spends no attempts")
	assert.True(t, e.Stats().Keys[0].Paused)

	fake.Advance(30 * time.Second)
	seen := map[ringwal.ID]bool{}
	for range 2 {
		d, ok := dequeueSoon(t, e)
		require.True(t, ok)
		seen[d.ID] = true
		require.NoError(t, e.Ack(d.Lease))
	}
	assert.Equal(t, map[ringwal.ID]bool{a1: true, a2: true}, seen)
}

func TestMaxInFlightCapsLeasesOfAKey(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{KeyPolicy: policyFor(ringwal.KeyPolicy{MaxInFlight: 2})})
	require.NoError(t, err)
	defer e.Close()
	ids := []ringwal.ID{mustEnqueue(t, e, ringwal.Message{Key: "k"}), mustEnqueue(t, e, ringwal.Message{Key: "k"}), mustEnqueue(t, e, ringwal.Message{Key: "k"})}
	other := mustEnqueue(t, e, ringwal.Message{Key: "other"})
	var leased []ringwal.Delivery
	for {
		d, ok := e.TryDequeue()
		if !ok {
			break
		}
		leased = append(leased, d)
	}
	require.Len(t, leased, 3, "two of k and the other key's")
	info, err := e.Get(ids[2])
	require.NoError(t, err)
	assert.Equal(t, ringwal.WaitInFlight, info.Waiting)
	assert.NotEqual(t, other, ids[2])
	require.NoError(t, e.Ack(leased[0].Lease))
	d, ok := dequeueSoon(t, e)
	require.True(t, ok, "a lease ending lets the third go")
	assert.Equal(t, ids[2], d.ID)
}

func TestMaxQueuedRefusesOnlyItsKey(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{KeyPolicy: func(key string) ringwal.KeyPolicy {
		if key == "small" {
			return ringwal.KeyPolicy{MaxQueued: 3}
		}
		return ringwal.KeyPolicy{}
	}})
	require.NoError(t, err)
	defer e.Close()
	for range 3 {
		mustEnqueue(t, e, ringwal.Message{Key: "small"})
	}
	_, err = e.TryEnqueue(ringwal.Message{Key: "small"})
	require.ErrorIs(t, err, ringwal.ErrFull)
	assert.Contains(t, err.Error(), `"small"`)
	mustEnqueue(t, e, ringwal.Message{Key: "big"})

	// Enqueue waits for room, which an ack makes.
	done := make(chan error, 1)
	go func() {
		_, err := e.Enqueue(context.Background(), ringwal.Message{Key: "small"})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Enqueue did not wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d.Lease))
	require.NoError(t, <-done)
}

func TestMaxHoldDeadLettersWithTheBreakersCategory(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e, err := ringwal.Open("", ringwal.Options{Clock: fake, KeyPolicy: policyFor(ringwal.KeyPolicy{MaxHold: time.Minute}),
		Breaker: breaker.Options{OpenTimeout: time.Hour, MaxOpenTimeout: time.Hour}, // stays open past MaxHold
		Policies: map[classify.Category]classify.RetryPolicy{
			classify.Timeout: {MaxAttempts: 1000, Base: time.Second, Max: time.Second, Multiplier: 1},
		}})
	require.NoError(t, err)
	defer e.Close()
	var last ringwal.ID
	for range 5 {
		last = mustEnqueue(t, e, ringwal.Message{Key: "k"})
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Nack(d.Lease, context.DeadlineExceeded))
	}
	fake.Advance(time.Second)
	require.Eventually(t, func() bool { e.TryDequeue(); return e.Stats().Held == 5 }, 5*time.Second, time.Millisecond,
		"stats %+v", e.Stats())
	fake.Advance(time.Minute)
	require.Eventually(t, func() bool { return e.Stats().Dead == 5 }, 5*time.Second, time.Millisecond)
	info, err := e.Get(last)
	require.NoError(t, err)
	assert.Equal(t, classify.Timeout, info.LastCategory)
	assert.Contains(t, info.LastError, "MaxHold")
}

func TestPauseAllStopsDeliveryNotIntake(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.Pause(time.Time{}))
	id := mustEnqueue(t, e, ringwal.Message{})
	_, ok := e.TryDequeue()
	assert.False(t, ok)
	assert.True(t, e.Stats().DeliveryPaused)
	require.NoError(t, e.Resume())
	d, ok := e.TryDequeue()
	require.True(t, ok)
	assert.Equal(t, id, d.ID)
}

func TestPauseAndCancelSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	a := mustEnqueue(t, e, ringwal.Message{Key: "a"})
	gone := mustEnqueue(t, e, ringwal.Message{Key: "b"})
	leased := mustEnqueue(t, e, ringwal.Message{Key: "c"})
	require.NoError(t, e.PauseKey("a", time.Time{}))
	require.NoError(t, e.Pause(time.Now().Add(time.Hour)))
	require.NoError(t, e.Resume())
	require.NoError(t, e.Cancel(gone))
	require.NoError(t, e.Resume())
	var d ringwal.Delivery
	for {
		var ok bool
		d, ok = e.TryDequeue()
		require.True(t, ok)
		if d.ID == leased {
			break
		}
		require.NotEqual(t, a, d.ID, "key a is paused")
	}
	require.NoError(t, e.Cancel(leased))
	assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease, "a cancelled lease is over")
	require.NoError(t, e.Close())

	e, err = ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	for _, id := range []ringwal.ID{gone, leased} {
		_, err := e.Get(id)
		assert.ErrorIs(t, err, ringwal.ErrNotFound, "cancelled for good")
	}
	_, ok := e.TryDequeue()
	assert.False(t, ok, "key a is still paused")
	info, err := e.Get(a)
	require.NoError(t, err)
	assert.Equal(t, ringwal.WaitPaused, info.Waiting)
	require.NoError(t, e.ResumeKey("a"))
	d, ok = dequeueSoon(t, e)
	require.True(t, ok)
	assert.Equal(t, a, d.ID)
	assert.Equal(t, uint64(0), e.Stats().Acked)
}

func TestMessagesFiltersWithoutCollecting(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{KeyPolicy: func(key string) ringwal.KeyPolicy {
		return ringwal.KeyPolicy{Ordered: key == "ordered"}
	}})
	require.NoError(t, err)
	defer e.Close()
	var ordered []ringwal.ID
	for i := range 2000 {
		if i%4 == 0 {
			ordered = append(ordered, mustEnqueue(t, e, ringwal.Message{Key: "ordered"}))
			continue
		}
		mustEnqueue(t, e, ringwal.Message{Key: "plain"})
	}
	var got []ringwal.ID
	for info := range e.Messages(ringwal.Filter{Key: "ordered"}) {
		got = append(got, info.ID)
	}
	assert.Equal(t, ordered, got, "an ordered key's messages in delivery order")
	n := 0
	for range e.Messages(ringwal.Filter{Key: "plain", States: []ringwal.State{ringwal.Pending}}) {
		n++
	}
	assert.Equal(t, 1500, n)

	first := testing.AllocsPerRun(20, func() {
		for range e.Messages(ringwal.Filter{}) {
			break
		}
	})
	all := testing.AllocsPerRun(5, func() {
		for range e.Messages(ringwal.Filter{}) {
		}
	})
	assert.LessOrEqual(t, first, 4.0, "taking the first message allocates O(1)")
	assert.LessOrEqual(t, all, 4.0, "walking 2000 messages allocates nothing per message")
}

func TestKeyControlsRefuseBadInput(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{})
	require.NoError(t, err)
	for name, err := range map[string]error{
		"PauseKey empty":   e.PauseKey("", time.Time{}),
		"PauseKey past":    e.PauseKey("k", time.Now().Add(-time.Hour)),
		"ResumeKey empty":  e.ResumeKey(""),
		"Pause past":       e.Pause(time.Now().Add(-time.Hour)),
		"Cancel unknown":   e.Cancel(12345),
		"ResumeKey unseen": e.ResumeKey("never-seen"),
	} {
		switch name {
		case "Cancel unknown":
			assert.ErrorIs(t, err, ringwal.ErrNotFound, name)
		case "ResumeKey unseen":
			assert.NoError(t, err, name)
		default:
			assert.ErrorIs(t, err, ringwal.ErrInvalid, name)
		}
	}
	require.NoError(t, e.Close())
	assert.ErrorIs(t, e.PauseKey("k", time.Time{}), ringwal.ErrClosed)
	assert.ErrorIs(t, e.Cancel(1), ringwal.ErrClosed)
}

// TestOrderedKeyUnderCancelsExpiriesAndAcks races the things that touch an
// ordered key's queue: consumers acking heads (which releases the next),
// a canceller removing queued messages, and TTLs expiring them. It must
// finish with every message acked, cancelled or dead-lettered as Expired.
func TestOrderedKeyUnderCancelsExpiriesAndAcks(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{KeyPolicy: policyFor(ringwal.KeyPolicy{Ordered: true})})
	require.NoError(t, err)
	defer e.Close()
	const n = 600
	ids := make([]ringwal.ID, n)
	for i := range ids {
		m := ringwal.Message{Key: "k"}
		if i%5 == 0 {
			m.TTL = time.Duration(1+rand.IntN(20)) * time.Millisecond
		}
		ids[i] = mustEnqueue(t, e, m)
	}
	var acked, cancelled atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				d, ok := e.TryDequeue()
				if !ok {
					time.Sleep(50 * time.Microsecond)
					continue
				}
				if e.Ack(d.Lease) == nil {
					acked.Add(1)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// In ascending order: the canceller keeps meeting the front of the
		// key's queue just as an ack releases it.
		for i := 1; i < n; i += 3 {
			if e.Cancel(ids[i]) == nil {
				cancelled.Add(1)
			}
		}
	}()
	require.Eventually(t, func() bool {
		st := e.Stats()
		return st.Pending+st.Delayed+st.Leased+st.Held == 0
	}, 30*time.Second, time.Millisecond, "the key's queue never drained")
	cancel()
	wg.Wait()
	st := e.Stats()
	assert.Equal(t, int64(n), acked.Load()+cancelled.Load()+int64(st.Dead), "acked %d cancelled %d dead %d", acked.Load(), cancelled.Load(), st.Dead)
	assert.Equal(t, uint64(cancelled.Load()), st.Cancelled)
	assert.Equal(t, st.Dead, st.DeadByCategory[classify.Expired])
}

// A paused ordered key's head goes back to the front of its queue when a
// consumer meets it; Messages still lists the key in delivery order.
func TestMessagesOfAPausedOrderedKey(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{KeyPolicy: policyFor(ringwal.KeyPolicy{Ordered: true})})
	require.NoError(t, err)
	defer e.Close()
	var ids []ringwal.ID
	for range 3 {
		ids = append(ids, mustEnqueue(t, e, ringwal.Message{Key: "k"}))
	}
	require.NoError(t, e.PauseKey("k", time.Time{}))
	_, ok := e.TryDequeue()
	require.False(t, ok, "the head is set aside, paused")
	var got []ringwal.ID
	for info := range e.Messages(ringwal.Filter{Key: "k"}) {
		assert.Equal(t, ringwal.WaitPaused, info.Waiting)
		got = append(got, info.ID)
	}
	assert.Equal(t, ids, got)
}
