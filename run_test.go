package ringwal_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

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
