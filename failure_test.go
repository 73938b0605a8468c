package ringwal_test

// Failures: nack, backoff, redelivery, dead letters, classify.After and
// Mark, the per-key breaker, Redrive / MarkReviewed / Purge, Run with a
// handler that succeeds, fails or panics, lease expiry and Extend, stale
// leases, Requeue and TTL.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

func transient(msg string) error { return classify.Mark(errors.New(msg), classify.Transient) }

func permanent(msg string) error { return classify.Mark(errors.New(msg), classify.Permanent) }

// deadEntry returns the dead-letter entry of id.
func deadEntry(t testing.TB, e *ringwal.Engine, id ringwal.ID) ringwal.DeadLetter {
	t.Helper()
	es, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	for _, x := range es {
		if x.ID == id {
			return x
		}
	}
	require.FailNow(t, "no dead letter", "ID %d not in DeadLetters (%d entries)", id, len(es))
	return ringwal.DeadLetter{}
}

// stateNot polls Get(id) until its State is not s.
func stateNot(t testing.TB, e *ringwal.Engine, id ringwal.ID, s ringwal.State) ringwal.Info {
	t.Helper()
	var info ringwal.Info
	require.Eventually(t, func() bool {
		var err error
		info, err = e.Get(id)
		return err == nil && info.State != s
	}, waitFor, tick, "ID %d stayed %v", id, s)
	return info
}

// stays checks that Get(id) keeps State s for a short while.
func stays(t testing.TB, e *ringwal.Engine, id ringwal.ID, s ringwal.State, why string) {
	t.Helper()
	deadline := time.Now().Add(quiet)
	for time.Now().Before(deadline) {
		info, err := e.Get(id)
		if !assert.NoError(t, err, why) || !assert.Equal(t, s, info.State, why) {
			return
		}
		time.Sleep(tick)
	}
}

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

func TestRedrive(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{Policies: fastPolicies(2)})
	id := enqueue(t, e, ringwal.Message{Key: "k", Payload: []byte("again")})
	exhaust := func() {
		t.Helper()
		for attempt := 1; attempt <= 2; attempt++ {
			d := dequeue(t, e)
			require.Equal(t, id, d.ID)
			require.Equal(t, attempt, d.Attempt, "attempts reset by Redrive")
			require.NoError(t, e.Nack(d.Lease, transient("down")))
			if attempt == 1 {
				waitState(t, e, id, ringwal.Delayed)
				fake.Advance(15 * time.Millisecond)
			}
		}
		waitState(t, e, id, ringwal.Dead)
	}
	exhaust()

	require.NoError(t, e.Redrive(id))
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
	assert.Equal(t, 0, info.Attempts, "Redrive resets attempts")
	assert.Equal(t, "again", string(info.Message.Payload))
	es, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	assert.Empty(t, es, "a redriven message leaves the dead-letter queue")
	assert.Equal(t, 0, e.Stats().Dead)

	exhaust() // two fresh attempts, then dead again
	require.NoError(t, e.Redrive(id))
	d := dequeue(t, e)
	assert.Equal(t, 1, d.Attempt)
	require.NoError(t, e.Ack(d.Lease))

	assert.ErrorIs(t, e.Redrive(id), ringwal.ErrNotFound, "Redrive of an acked ID")
	assert.ErrorIs(t, e.Redrive(ringwal.ID(1<<40)), ringwal.ErrNotFound, "Redrive of an unknown ID")
}

func TestMarkReviewed(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	var dead []ringwal.ID
	for i := 0; i < 2; i++ {
		id := enqueueP(t, e, ringwal.Normal, fmt.Sprint(i))
		d := dequeue(t, e)
		require.NoError(t, e.Nack(d.Lease, permanent("rejected")))
		waitState(t, e, id, ringwal.Dead)
		dead = append(dead, id)
	}
	require.NoError(t, e.MarkReviewed(dead[0], "looked: upstream bug #12"))

	rev, err := e.DeadLetters(dlq.Query{Reviewed: dlq.OnlyReviewed})
	require.NoError(t, err)
	require.Len(t, rev, 1)
	assert.Equal(t, dead[0], rev[0].ID)
	assert.True(t, rev[0].Reviewed)
	assert.Equal(t, "looked: upstream bug #12", rev[0].Note)

	unrev, err := e.DeadLetters(dlq.Query{Reviewed: dlq.OnlyUnreviewed})
	require.NoError(t, err)
	require.Len(t, unrev, 1)
	assert.Equal(t, dead[1], unrev[0].ID)
	assert.False(t, unrev[0].Reviewed)

	info, err := e.Get(dead[0])
	require.NoError(t, err)
	assert.Equal(t, ringwal.Dead, info.State, "reviewing does not move the message")

	assert.ErrorIs(t, e.MarkReviewed(ringwal.ID(1<<40), "x"), ringwal.ErrNotFound, "unknown ID")
	acked := enqueueP(t, e, ringwal.Normal, "acked")
	d := dequeue(t, e)
	require.NoError(t, e.Ack(d.Lease))
	assert.ErrorIs(t, e.MarkReviewed(acked, "x"), ringwal.ErrNotFound, "acked ID")
}

func TestPurgeDeadLetters(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	kill := func(cause error) ringwal.ID {
		id := enqueueP(t, e, ringwal.Normal, cause.Error())
		d := dequeue(t, e)
		require.Equal(t, id, d.ID)
		require.NoError(t, e.Nack(d.Lease, cause))
		waitState(t, e, id, ringwal.Dead)
		return id
	}
	p1 := kill(permanent("p1"))
	p2 := kill(permanent("p2"))
	p3 := kill(permanent("p3"))
	poison := kill(classify.Mark(errors.New("crash"), classify.Poison))
	require.NoError(t, e.MarkReviewed(p1, "ok to drop"))

	n, err := e.PurgeDeadLetters(dlq.Query{Categories: []classify.Category{classify.Permanent}, Reviewed: dlq.OnlyReviewed})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "reviewed Permanent")
	_, err = e.Get(p1)
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "Get of a purged ID")

	n, err = e.PurgeDeadLetters(dlq.Query{Categories: []classify.Category{classify.Permanent}})
	require.NoError(t, err)
	assert.Equal(t, 2, n, "remaining Permanent")
	for _, id := range []ringwal.ID{p1, p2, p3} {
		_, err := e.Get(id)
		assert.ErrorIs(t, err, ringwal.ErrNotFound, "Get of purged %d", id)
		assert.ErrorIs(t, e.Redrive(id), ringwal.ErrNotFound, "Redrive of purged %d", id)
		assert.ErrorIs(t, e.MarkReviewed(id, "x"), ringwal.ErrNotFound, "MarkReviewed of purged %d", id)
		assert.ErrorIs(t, e.Requeue(id), ringwal.ErrNotFound, "Requeue of purged %d", id)
	}
	es, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	require.Len(t, es, 1)
	assert.Equal(t, poison, es[0].ID)
	assert.Equal(t, 1, e.Stats().Dead)

	n, err = e.PurgeDeadLetters(dlq.Query{})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = e.PurgeDeadLetters(dlq.Query{})
	require.NoError(t, err)
	assert.Equal(t, 0, n, "nothing left")
	assert.Equal(t, 0, e.Stats().Dead)
}

func TestRunNilErrorPanic(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{Policies: fastPolicies(2)})
	var mu sync.Mutex
	attempts := map[string][]int{}
	h := func(ctx context.Context, d ringwal.Delivery) error {
		p := string(d.Message.Payload)
		mu.Lock()
		attempts[p] = append(attempts[p], d.Attempt)
		mu.Unlock()
		switch p {
		case "ok":
			return nil
		case "err":
			return errors.New("handler said no")
		case "panic":
			panic("kaboom")
		}
		return nil
	}
	ok := enqueueP(t, e, ringwal.Normal, "ok")
	bad := enqueueP(t, e, ringwal.Normal, "err")
	pan := enqueueP(t, e, ringwal.Normal, "panic")

	ctx, cancel := context.WithCancel(ctxBG)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- e.Run(ctx, 2, h) }()

	// nil -> Ack.
	assert.Eventually(t, func() bool {
		_, err := e.Get(ok)
		return errors.Is(err, ringwal.ErrNotFound)
	}, waitFor, tick, "handler returned nil: acked")

	// panic -> Poison, no retry, the panic value and a stack recorded.
	info := waitState(t, e, pan, ringwal.Dead)
	assert.Equal(t, classify.Poison, info.LastCategory)
	assert.Contains(t, info.LastError, "kaboom", "the panic value")
	assert.Contains(t, info.LastError, ".go:", "a stack trace")
	x := deadEntry(t, e, pan)
	assert.Equal(t, classify.Poison, x.Category)
	require.NotEmpty(t, x.Failures)
	assert.Contains(t, x.Failures[len(x.Failures)-1].Error, "kaboom")

	// error -> Nack -> retry after backoff -> dead after 2.
	info = waitState(t, e, bad, ringwal.Delayed)
	assert.Equal(t, "handler said no", info.LastError)
	fake.Advance(15 * time.Millisecond)
	info = waitState(t, e, bad, ringwal.Dead)
	assert.Equal(t, classify.Unknown, info.LastCategory)
	assert.Equal(t, 2, info.Attempts)

	cancel()
	select {
	case err := <-runErr:
		assert.NoError(t, err, "Run returns nil when its ctx ends")
	case <-time.After(waitFor):
		t.Fatal("Run did not return after its ctx ended")
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string][]int{"ok": {1}, "err": {1, 2}, "panic": {1}}, attempts, "handler calls by payload")
}

func TestRunWaitsForHandlersWhenCtxEnds(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	started := make(chan struct{})
	release := make(chan struct{})
	h := func(ctx context.Context, d ringwal.Delivery) error {
		close(started)
		<-release
		return nil
	}
	id := enqueueP(t, e, ringwal.Normal, "slow")
	ctx, cancel := context.WithCancel(ctxBG)
	runErr := make(chan error, 1)
	go func() { runErr <- e.Run(ctx, 1, h) }()
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("handler not called")
	}
	cancel()
	select {
	case err := <-runErr:
		t.Fatalf("Run returned (%v) while its handler was still running", err)
	case <-time.After(quiet):
	}
	close(release)
	select {
	case err := <-runErr:
		assert.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run did not return after its handler did")
	}
	_, err := e.Get(id)
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "the handler returned nil, so the message was acked")
}

func TestRunHandlerCtxEndsWhenLeaseExpires(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{
		LeaseTimeout: 100 * time.Millisecond,
		Policies:     map[classify.Category]classify.RetryPolicy{classify.Timeout: fastPolicy(1)},
	})
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	h := func(ctx context.Context, d ringwal.Delivery) error {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
			return ctx.Err()
		case <-time.After(2 * waitFor):
			ended <- nil
			return nil
		}
	}
	id := enqueueP(t, e, ringwal.Normal, "stuck")
	ctx, cancel := context.WithCancel(ctxBG)
	runErr := make(chan error, 1)
	go func() { runErr <- e.Run(ctx, 1, h) }()
	t.Cleanup(func() {
		cancel()
		<-runErr
	})
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("handler not called")
	}
	fake.Advance(105 * time.Millisecond)
	select {
	case err := <-ended:
		assert.Error(t, err, "the handler's ctx ends when its lease expires")
	case <-time.After(waitFor):
		t.Fatal("the handler's ctx did not end when its lease expired")
	}
	info := waitState(t, e, id, ringwal.Dead)
	assert.Equal(t, classify.Timeout, info.LastCategory, "an expired lease is a Timeout failure")
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

func TestStaleLease(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	enqueueP(t, e, ringwal.Normal, "a")
	d := dequeue(t, e)
	require.NoError(t, e.Ack(d.Lease))
	assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease, "Ack twice")
	assert.ErrorIs(t, e.Nack(d.Lease, errors.New("x")), ringwal.ErrStaleLease, "Nack after Ack")
	assert.ErrorIs(t, e.Extend(d.Lease, time.Second), ringwal.ErrStaleLease, "Extend after Ack")

	enqueueP(t, e, ringwal.Normal, "b")
	d = dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, transient("x")))
	assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease, "Ack after Nack")
	assert.ErrorIs(t, e.Nack(d.Lease, transient("x")), ringwal.ErrStaleLease, "Nack twice")

	// The slot of an acked record is reused: an old lease must not touch
	// the new occupant.
	var old []ringwal.Lease
	for i := 0; i < 50; i++ {
		enqueueP(t, e, ringwal.High, "c")
		d := dequeue(t, e)
		require.NoError(t, e.Ack(d.Lease))
		old = append(old, d.Lease)
	}
	id := enqueueP(t, e, ringwal.High, "new")
	dn := dequeue(t, e)
	for _, l := range old {
		assert.ErrorIs(t, e.Ack(l), ringwal.ErrStaleLease)
	}
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Leased, info.State, "old leases did not ack the slot's new message")
	assert.NoError(t, e.Ack(dn.Lease))

	assert.NotPanics(t, func() {
		err := e.Ack(ringwal.Lease{})
		assert.True(t, errors.Is(err, ringwal.ErrStaleLease) || errors.Is(err, ringwal.ErrInvalid),
			"Ack of the zero Lease: %v", err)
	})
}

func TestRequeue(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	t.Run("leased", func(t *testing.T) {
		id := enqueueP(t, e, ringwal.Normal, "l")
		d := dequeue(t, e)
		require.NoError(t, e.Requeue(id))
		info, err := e.Get(id)
		require.NoError(t, err)
		assert.Equal(t, ringwal.Pending, info.State)
		assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease, "the requeued lease is stale")
		d2 := dequeue(t, e)
		assert.Equal(t, id, d2.ID)
		assert.Equal(t, 2, d2.Attempt, "second delivery")
		require.NoError(t, e.Ack(d2.Lease))
	})
	t.Run("delayed", func(t *testing.T) {
		id := enqueue(t, e, ringwal.Message{Payload: []byte("d"), Delay: time.Hour})
		require.NoError(t, e.Requeue(id))
		d := dequeue(t, e) // no clock advance
		assert.Equal(t, id, d.ID)
		assert.Equal(t, 1, d.Attempt)
		require.NoError(t, e.Ack(d.Lease))
	})
	t.Run("retry backoff", func(t *testing.T) {
		id := enqueueP(t, e, ringwal.Normal, "r")
		d := dequeue(t, e)
		require.NoError(t, e.Nack(d.Lease, transient("x")))
		waitState(t, e, id, ringwal.Delayed)
		require.NoError(t, e.Requeue(id))
		d = dequeue(t, e)
		assert.Equal(t, id, d.ID)
		assert.Equal(t, 2, d.Attempt)
		require.NoError(t, e.Ack(d.Lease))
		assertNothingReady(t, e, "the cancelled retry must not fire later")
	})
	t.Run("unknown and acked", func(t *testing.T) {
		assert.ErrorIs(t, e.Requeue(ringwal.ID(1<<40)), ringwal.ErrNotFound)
		id := enqueueP(t, e, ringwal.Normal, "a")
		d := dequeue(t, e)
		require.NoError(t, e.Ack(d.Lease))
		assert.ErrorIs(t, e.Requeue(id), ringwal.ErrNotFound)
	})
}

func TestTTL(t *testing.T) {
	t.Run("expires with no consumer", func(t *testing.T) {
		hook, dls := deadLetterCh()
		e, fake := memEngine(t, ringwal.Options{OnDeadLetter: hook})
		id := enqueue(t, e, ringwal.Message{Payload: []byte("short-lived"), TTL: 100 * time.Millisecond})
		fake.Advance(99 * time.Millisecond)
		stays(t, e, id, ringwal.Pending, "before the TTL")
		fake.Advance(3 * time.Millisecond)
		info := waitState(t, e, id, ringwal.Dead)
		assert.Equal(t, classify.Expired, info.LastCategory)
		assert.Equal(t, 0, info.Attempts)
		x := deadEntry(t, e, id)
		assert.Equal(t, classify.Expired, x.Category)
		assert.Equal(t, "short-lived", string(x.Message.Payload))
		dl := recvDeadLetter(t, dls)
		assert.Equal(t, id, dl.ID)
		assert.Equal(t, uint64(1), e.Stats().Expired)
		assertNothingReady(t, e, "expired")
	})
	t.Run("delay longer than TTL", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{})
		id := enqueue(t, e, ringwal.Message{TTL: 50 * time.Millisecond, Delay: 10 * time.Second})
		fake.Advance(55 * time.Millisecond)
		info := waitState(t, e, id, ringwal.Dead)
		assert.Equal(t, classify.Expired, info.LastCategory)
	})
	t.Run("waiting for a retry", func(t *testing.T) {
		pol := fastPolicy(5)
		pol.Base, pol.Max = time.Second, time.Minute
		e, fake := memEngine(t, ringwal.Options{Policies: map[classify.Category]classify.RetryPolicy{classify.Transient: pol}})
		id := enqueue(t, e, ringwal.Message{TTL: 100 * time.Millisecond})
		d := dequeue(t, e)
		require.NoError(t, e.Nack(d.Lease, transient("x")))
		waitState(t, e, id, ringwal.Delayed)
		fake.Advance(105 * time.Millisecond)
		info := waitState(t, e, id, ringwal.Dead)
		assert.Equal(t, classify.Expired, info.LastCategory, "undelivered past its TTL while waiting to be retried")
	})
	t.Run("acked in time", func(t *testing.T) {
		e, fake := memEngine(t, ringwal.Options{})
		enqueue(t, e, ringwal.Message{TTL: 100 * time.Millisecond})
		d := dequeue(t, e)
		require.NoError(t, e.Ack(d.Lease))
		fake.Advance(200 * time.Millisecond)
		assert.Never(t, func() bool {
			es, err := e.DeadLetters(dlq.Query{})
			return err != nil || len(es) > 0
		}, quiet, tick, "an acked message does not expire")
		assert.Equal(t, uint64(0), e.Stats().Expired)
	})
}

// errText is a helper for tests that only care about an error's message.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.ToLower(err.Error())
}
