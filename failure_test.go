package ringwal_test

// The failure path: nack, backoff, redelivery, dead letters (and
// OnDeadLetter), classify.After and Mark, MaxAttempts, the per-key
// breaker.

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
)

func TestNackBackoffRedeliveryDLQ(t *testing.T) {
	hook, dls := deadLetterCh()
	e, fake := memEngine(t, ringwal.Options{
		Policies:     map[classify.Category]classify.RetryPolicy{classify.Transient: fastPolicy(3)},
		OnDeadLetter: hook,
	})
	id := enqueue(t, e, ringwal.Message{Key: "svc", Payload: []byte("job")})

	// Delays after failures 1 and 2: 10ms, 20ms (NoJitter); the third
	// failure exhausts MaxAttempts 3.
	delays := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}
	for attempt := 1; attempt <= 3; attempt++ {
		d := dequeue(t, e)
		require.Equal(t, id, d.ID)
		require.Equal(t, attempt, d.Attempt, "delivery number")
		failedAt := fake.Now()
		require.NoError(t, e.Nack(d.Lease, transient(fmt.Sprintf("conn flake %d", attempt))))
		assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease, "a nacked lease is stale")
		if attempt == 3 {
			break
		}
		info := waitState(t, e, id, ringwal.Delayed)
		assert.Equal(t, attempt, info.Attempts)
		assert.Equal(t, classify.Transient, info.LastCategory)
		assert.Equal(t, fmt.Sprintf("conn flake %d", attempt), info.LastError)
		assert.True(t, info.NextAt.Equal(failedAt.Add(delays[attempt-1])), "NextAt %v, want failure+%v", info.NextAt, delays[attempt-1])

		fake.Advance(delays[attempt-1] - time.Millisecond)
		assertNothingReady(t, e, fmt.Sprintf("retry %d before its backoff", attempt))
		fake.Advance(3 * time.Millisecond)
	}

	info := waitState(t, e, id, ringwal.Dead)
	assert.Equal(t, 3, info.Attempts)
	assert.Equal(t, classify.Transient, info.LastCategory)
	assert.Equal(t, "conn flake 3", info.LastError)

	x := deadEntry(t, e, id)
	assert.Equal(t, classify.Transient, x.Category)
	assert.Equal(t, "svc", x.Key)
	assert.Equal(t, 3, x.Attempts, "MaxAttempts 3 means 3 handlings")
	assert.Equal(t, "job", string(x.Message.Payload))
	require.NotEmpty(t, x.Failures)
	assert.LessOrEqual(t, len(x.Failures), 3)
	last := x.Failures[len(x.Failures)-1]
	assert.Equal(t, "conn flake 3", last.Error, "Failures includes the last attempt")
	assert.Equal(t, classify.Transient, last.Category)
	assert.False(t, x.FirstFailedAt.After(x.DeadAt))
	if len(x.Failures) == 3 {
		assert.Equal(t, "conn flake 1", x.Failures[0].Error)
	}

	dl := recvDeadLetter(t, dls)
	assert.Equal(t, id, dl.ID)
	assert.Equal(t, classify.Transient, dl.Category)

	s := e.Stats()
	assert.Equal(t, uint64(3), s.Nacked)
	assert.Equal(t, uint64(2), s.Retried)
	assert.Equal(t, uint64(1), s.DeadLettered)
	assert.Equal(t, 1, s.Dead)
	assertNothingReady(t, e, "dead letters are not delivered")
}

func TestMessageMaxAttemptsOverridesPolicy(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	id := enqueue(t, e, ringwal.Message{MaxAttempts: 2})
	for attempt := 1; attempt <= 2; attempt++ {
		d := dequeue(t, e)
		require.Equal(t, attempt, d.Attempt)
		require.NoError(t, e.Nack(d.Lease, transient("flaky")))
		if attempt == 1 {
			waitState(t, e, id, ringwal.Delayed)
			fake.Advance(15 * time.Millisecond)
		}
	}
	info := waitState(t, e, id, ringwal.Dead)
	assert.Equal(t, 2, info.Attempts)
}

// TestDefaultPolicyUnknown uses the built-in policy: an unrecognised error
// is Unknown, 3 attempts, full jitter over 2s then 4s.
func TestDefaultPolicyUnknown(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	id := enqueueP(t, e, ringwal.Normal, "x")
	for attempt := 1; attempt <= 3; attempt++ {
		d := dequeue(t, e)
		require.Equal(t, attempt, d.Attempt)
		require.NoError(t, e.Nack(d.Lease, errors.New("boom")))
		if attempt < 3 {
			stateNot(t, e, id, ringwal.Leased)
			fake.Advance(5 * time.Second)
		}
	}
	info := waitState(t, e, id, ringwal.Dead)
	assert.Equal(t, classify.Unknown, info.LastCategory)
	assert.Equal(t, "boom", info.LastError)
	assert.Equal(t, 3, info.Attempts)
	assert.Equal(t, classify.Unknown, deadEntry(t, e, id).Category)
}

func TestClassifyAfter(t *testing.T) {
	t.Run("exact delay, counts against MaxAttempts", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{
			Policies: map[classify.Category]classify.RetryPolicy{classify.Transient: fastPolicy(2)},
		})
		id := enqueueP(t, e, ringwal.Normal, "x")
		d := dequeue(t, e)
		failedAt := fake.Now()
		require.NoError(t, e.Nack(d.Lease, classify.After(transient("busy"), 500*time.Millisecond)))
		info := waitState(t, e, id, ringwal.Delayed)
		assert.Equal(t, classify.Transient, info.LastCategory, "After keeps the wrapped error's category")
		assert.Equal(t, "busy", info.LastError)
		assert.True(t, info.NextAt.Equal(failedAt.Add(500*time.Millisecond)), "NextAt %v, want failure+500ms", info.NextAt)

		fake.Advance(499 * time.Millisecond)
		assertNothingReady(t, e, "1ms before the After delay")
		fake.Advance(3 * time.Millisecond)
		d = dequeue(t, e)
		require.Equal(t, id, d.ID)
		assert.Equal(t, 2, d.Attempt)

		// The second failure exhausts MaxAttempts 2 even with an After.
		require.NoError(t, e.Nack(d.Lease, classify.After(transient("busy again"), time.Millisecond)))
		info = waitState(t, e, id, ringwal.Dead)
		assert.Equal(t, classify.Transient, info.LastCategory)
		assert.Equal(t, 2, info.Attempts)
	})

	t.Run("shorter than the backoff", func(t *testing.T) {
		pol := fastPolicy(3)
		pol.Base = time.Second
		pol.Max = time.Minute
		e, fake := memEngine(t, ringwal.Options{
			Policies: map[classify.Category]classify.RetryPolicy{classify.Transient: pol},
		})
		id := enqueueP(t, e, ringwal.Normal, "x")
		d := dequeue(t, e)
		require.NoError(t, e.Nack(d.Lease, classify.After(transient("soon"), 5*time.Millisecond)))
		waitState(t, e, id, ringwal.Delayed)
		fake.Advance(7 * time.Millisecond)
		d = dequeue(t, e)
		assert.Equal(t, id, d.ID, "After's delay replaces the 1s backoff")
		assert.Equal(t, 2, d.Attempt)
	})

	t.Run("nil cause", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{Policies: fastPolicies(3)})
		id := enqueueP(t, e, ringwal.Normal, "poll")
		d := dequeue(t, e)
		require.NoError(t, e.Nack(d.Lease, classify.After(nil, 50*time.Millisecond)))
		info := waitState(t, e, id, ringwal.Delayed)
		assert.Equal(t, classify.Unknown, info.LastCategory)
		assert.Equal(t, "retry after 50ms", info.LastError)
		fake.Advance(49 * time.Millisecond)
		assertNothingReady(t, e, "before After(nil, 50ms)")
		fake.Advance(3 * time.Millisecond)
		assert.Equal(t, id, dequeue(t, e).ID)
	})
}

func TestPermanentDeadLettersAtOnce(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	for _, tc := range []struct {
		name, text string
		err        error
	}{
		{"marked", "invalid recipient", permanent("invalid recipient")},
		{"wrapped mark", "send: invalid recipient", fmt.Errorf("send: %w", permanent("invalid recipient"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := enqueueP(t, e, ringwal.Normal, tc.name)
			d := dequeue(t, e)
			require.Equal(t, id, d.ID)
			require.NoError(t, e.Nack(d.Lease, tc.err))
			info := waitState(t, e, id, ringwal.Dead)
			assert.Equal(t, classify.Permanent, info.LastCategory)
			assert.Equal(t, tc.text, info.LastError)
			assert.Equal(t, 1, info.Attempts)
			x := deadEntry(t, e, id)
			assert.Equal(t, classify.Permanent, x.Category)
			assert.Equal(t, 1, x.Attempts)
			require.Len(t, x.Failures, 1)
			assert.Equal(t, tc.text, x.Failures[0].Error)
		})
	}
	assert.Equal(t, uint64(0), e.Stats().Retried)
}

func TestBreakerHoldsOpenKey(t *testing.T) {
	constant := classify.RetryPolicy{MaxAttempts: 10, Base: 10 * time.Millisecond, Multiplier: 1, Jitter: classify.NoJitter}
	e, fake := memEngine(t, ringwal.Options{
		Policies:   map[classify.Category]classify.RetryPolicy{classify.Transient: constant},
		Breaker:    breaker.Options{ConsecutiveFailures: 2, OpenTimeout: time.Second},
		AgingAfter: noAging,
	})
	a := enqueue(t, e, ringwal.Message{Key: "svc", Payload: []byte("a")})
	b := enqueue(t, e, ringwal.Message{Key: "svc", Payload: []byte("b")})
	c := enqueue(t, e, ringwal.Message{Key: "svc", Payload: []byte("c")})
	other := enqueue(t, e, ringwal.Message{Key: "other", Payload: []byte("d")})

	for _, want := range []ringwal.ID{a, b} {
		d := dequeue(t, e)
		require.Equal(t, want, d.ID)
		require.NoError(t, e.Nack(d.Lease, transient("connection refused")))
	}
	// Two consecutive failures: svc's breaker is open. C is not handed out;
	// the other key's message is.
	d := dequeue(t, e)
	assert.Equal(t, other, d.ID, "an open key's message is held back, other keys flow")
	require.NoError(t, e.Ack(d.Lease))
	info := waitState(t, e, c, ringwal.Held)
	assert.Equal(t, 0, info.Attempts, "holding spends no attempt")

	// The retries of A and B come due while the breaker is open: held too.
	fake.Advance(15 * time.Millisecond)
	assertNothingReady(t, e, "svc's breaker is open")
	for _, id := range []ringwal.ID{a, b} {
		info := waitState(t, e, id, ringwal.Held)
		assert.Equal(t, 1, info.Attempts, "holding spends no attempt")
	}
	waitCounts(t, e, stateCounts{Held: 3})

	// OpenTimeout passes: half-open lets a probe through; its success
	// closes the breaker and releases the rest.
	fake.Advance(time.Second + 5*time.Millisecond)
	wantAttempt := map[ringwal.ID]int{a: 2, b: 2, c: 1}
	got := map[ringwal.ID]int{}
	for len(got) < 3 {
		var d ringwal.Delivery
		if !assert.Eventually(t, func() bool {
			var ok bool
			d, ok = e.TryDequeue()
			return ok
		}, waitFor, tick, "held messages released: %v of 3", len(got)) {
			break
		}
		assert.Equal(t, "svc", d.Message.Key)
		assert.NotContains(t, got, d.ID, "delivered twice")
		got[d.ID] = d.Attempt
		require.NoError(t, e.Ack(d.Lease))
	}
	assert.Equal(t, wantAttempt, got, "attempt numbers after release (holding spends none)")
	waitCounts(t, e, stateCounts{})
}

func TestBreakerIgnoresPermanentFailures(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{
		Breaker: breaker.Options{ConsecutiveFailures: 2, OpenTimeout: time.Hour},
	})
	for i := 0; i < 4; i++ {
		enqueue(t, e, ringwal.Message{Key: "svc"})
		d := dequeue(t, e)
		require.NoError(t, e.Nack(d.Lease, permanent("bad request")))
	}
	id := enqueue(t, e, ringwal.Message{Key: "svc"})
	d := dequeue(t, e)
	assert.Equal(t, id, d.ID, "Permanent failures do not count against the breaker")
}

func TestOnDeadLetterCalledForEachNewDeadLetter(t *testing.T) {
	hook, ch := deadLetterCh()
	var mu sync.Mutex
	var calls int
	e, fake := memEngine(t, ringwal.Options{
		Policies: fastPolicies(2),
		OnDeadLetter: func(dl ringwal.DeadLetter) {
			mu.Lock()
			calls++
			mu.Unlock()
			hook(dl)
		},
	})

	// 1: permanent failure.
	p := enqueueP(t, e, ringwal.Normal, "perm")
	d := dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("gone"), classify.Permanent)))
	dl := recvDeadLetter(t, ch)
	assert.Equal(t, p, dl.ID)
	assert.Equal(t, classify.Permanent, dl.Category)
	assert.Equal(t, "perm", string(dl.Message.Payload))

	// 2: attempts exhausted (2).
	x := enqueueP(t, e, ringwal.Normal, "exhaust")
	d = dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("flaky"), classify.Transient)))
	fake.Advance(15 * time.Millisecond)
	d = dequeue(t, e)
	require.Equal(t, x, d.ID)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("flaky"), classify.Transient)))
	dl = recvDeadLetter(t, ch)
	assert.Equal(t, x, dl.ID)
	assert.Equal(t, classify.Transient, dl.Category)
	assert.Equal(t, 2, dl.Attempts)

	// 3: TTL.
	ttl := enqueue(t, e, ringwal.Message{Payload: []byte("ttl"), TTL: 20 * time.Millisecond})
	fake.Advance(25 * time.Millisecond)
	dl = recvDeadLetter(t, ch)
	assert.Equal(t, ttl, dl.ID)
	assert.Equal(t, classify.Expired, dl.Category)

	// Reviewing or purging is not a new dead letter.
	require.NoError(t, e.MarkReviewed(p, "seen"))
	select {
	case dl := <-ch:
		t.Errorf("OnDeadLetter called again for %d", dl.ID)
	case <-time.After(quiet):
	}
	mu.Lock()
	assert.Equal(t, 3, calls)
	mu.Unlock()
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
