package ringwaltest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/ringwaltest"
)

// noJitter retries a Transient failure after exactly 1s, twice at most.
var noJitter = map[classify.Category]classify.RetryPolicy{
	classify.Transient: {MaxAttempts: 2, Base: time.Second, Max: time.Second, Multiplier: 1, Jitter: classify.NoJitter},
}

func TestWorkOneAcksWhenTheHandlerReturnsNil(t *testing.T) {
	h := ringwaltest.New(t, ringwaltest.Options{})
	id, err := h.TryEnqueue(ringwal.Message{Key: "k", Payload: []byte("hello")})
	require.NoError(t, err)

	res := h.WorkOne("", func(ctx context.Context, d ringwal.Delivery) error {
		assert.Equal(t, "hello", string(d.Message.Payload))
		return nil
	})
	assert.NoError(t, res.Err)
	assert.True(t, res.Acked)
	assert.Equal(t, id, res.Delivery.ID)
	assert.Equal(t, 1, res.Delivery.Attempt)
	assert.Zero(t, res.Info)
	_, err = h.Get(id)
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	assert.Equal(t, uint64(1), h.Stats().Acked)
}

func TestWorkOneNacksAnErrorAndTheRetryComesDueOnTheFakeClock(t *testing.T) {
	h := ringwaltest.New(t, ringwaltest.Options{Engine: ringwal.Options{Policies: noJitter}})
	id, err := h.TryEnqueue(ringwal.Message{Payload: []byte("x")})
	require.NoError(t, err)

	busy := classify.Mark(errors.New("downstream busy"), classify.Transient)
	res := h.WorkOne("", func(context.Context, ringwal.Delivery) error { return busy })
	assert.Equal(t, busy, res.Err)
	assert.False(t, res.Acked)
	assert.Equal(t, ringwal.Delayed, res.Info.State)
	assert.WithinDuration(t, h.Clock.Now().Add(time.Second), res.Info.NextAt, 0)
	assert.Equal(t, classify.Transient, res.Info.LastCategory)
	assert.Equal(t, "downstream busy", res.Info.LastError)

	h.Advance(time.Second)
	res = h.WorkOne("", func(context.Context, ringwal.Delivery) error { return busy })
	assert.Equal(t, id, res.Delivery.ID)
	assert.Equal(t, 2, res.Delivery.Attempt)
	assert.Equal(t, ringwal.Dead, res.Info.State, "two attempts spent")
}

func TestWorkOneNacksAPanicAsPoison(t *testing.T) {
	h := ringwaltest.New(t, ringwaltest.Options{})
	_, err := h.TryEnqueue(ringwal.Message{Payload: []byte("x")})
	require.NoError(t, err)

	res := h.WorkOne("", func(context.Context, ringwal.Delivery) error { panic("nil map") })
	var pe *classify.PanicError
	require.ErrorAs(t, res.Err, &pe)
	assert.Equal(t, "nil map", pe.Value)
	assert.Contains(t, string(pe.Stack), "work_test.go", "the stack shows the handler")
	assert.Equal(t, ringwal.Dead, res.Info.State)
	assert.Equal(t, classify.Poison, res.Info.LastCategory)
	assert.Contains(t, res.Info.LastError, "panic: nil map")
}

// WorkOne goes through Run: the same handler outcomes leave the same
// states, categories and counts as Run itself leaves.
func TestWorkOneSettlesAsRunDoes(t *testing.T) {
	outcome := map[string]func() error{
		"ack":       func() error { return nil },
		"transient": func() error { return classify.Mark(errors.New("busy"), classify.Transient) },
		"permanent": func() error { return classify.Mark(errors.New("bad"), classify.Permanent) },
		"hint":      func() error { return classify.After(errors.New("later"), time.Minute) },
		"panic":     func() error { panic("boom") },
	}
	handler := func(_ context.Context, d ringwal.Delivery) error { return outcome[string(d.Message.Payload)]() }
	names := []string{"ack", "transient", "permanent", "hint", "panic"}

	type seen struct {
		state    ringwal.State
		category classify.Category
		nextAt   time.Duration
	}
	settle := func(t *testing.T, viaRun bool) (map[string]seen, ringwal.Stats) {
		h := ringwaltest.New(t, ringwaltest.Options{Engine: ringwal.Options{Policies: noJitter}})
		ids := map[string]ringwal.ID{}
		for _, n := range names {
			id, err := h.TryEnqueue(ringwal.Message{Payload: []byte(n)})
			require.NoError(t, err)
			ids[n] = id
		}
		if viaRun {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- h.Run(ctx, 1, handler) }()
			require.Eventually(t, func() bool { s := h.Stats(); return s.Pending == 0 && s.Leased == 0 }, 10*time.Second, time.Millisecond)
			cancel()
			require.NoError(t, <-done)
		} else {
			for range names {
				h.WorkOne("", handler)
			}
		}
		got := map[string]seen{}
		for n, id := range ids {
			info, err := h.Get(id)
			if errors.Is(err, ringwal.ErrNotFound) {
				got[n] = seen{state: 255}
				continue
			}
			require.NoError(t, err)
			var next time.Duration
			if !info.NextAt.IsZero() {
				next = info.NextAt.Sub(h.Clock.Now())
			}
			got[n] = seen{info.State, info.LastCategory, next}
		}
		s := h.Stats()
		s.Queues, s.Breakers = nil, nil
		return got, s
	}
	viaRun, runStats := settle(t, true)
	viaWorkOne, workStats := settle(t, false)
	assert.Equal(t, viaRun, viaWorkOne)
	assert.Equal(t, runStats.Acked, workStats.Acked)
	assert.Equal(t, runStats.Nacked, workStats.Nacked)
	assert.Equal(t, runStats.Dead, workStats.Dead)
	assert.Equal(t, runStats.Delayed, workStats.Delayed)
	assert.Equal(t, seen{ringwal.Delayed, classify.Unknown, time.Minute}, viaWorkOne["hint"])
}

func TestWorkOneWorksOneMessageOfItsQueue(t *testing.T) {
	h := ringwaltest.New(t, ringwaltest.Options{})
	for _, m := range []ringwal.Message{
		{Payload: []byte("default 1")},
		{Queue: "emails", Payload: []byte("email 1")},
		{Queue: "emails", Payload: []byte("email 2")},
	} {
		_, err := h.TryEnqueue(m)
		require.NoError(t, err)
	}
	calls := 0
	res := h.WorkOne("emails", func(context.Context, ringwal.Delivery) error { calls++; return nil })
	assert.Equal(t, 1, calls)
	assert.Equal(t, "email 1", string(res.Delivery.Message.Payload))
	h.RequireEnqueued(ringwaltest.Match{Queue: "emails", Payload: []byte("email 2"), States: []ringwal.State{ringwal.Pending}})
	h.RequireEnqueued(ringwaltest.Match{Payload: []byte("default 1"), States: []ringwal.State{ringwal.Pending}})
}

// The handler's ctx is Run's: it ends when the lease expires, here because
// the handler itself moves the fake clock past the lease.
func TestWorkOneHandlerCtxEndsWhenTheLeaseExpires(t *testing.T) {
	h := ringwaltest.New(t, ringwaltest.Options{Engine: ringwal.Options{LeaseTimeout: 5 * time.Second}})
	_, err := h.TryEnqueue(ringwal.Message{Payload: []byte("slow")})
	require.NoError(t, err)

	res := h.WorkOne("", func(ctx context.Context, d ringwal.Delivery) error {
		h.Advance(6 * time.Second)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("ctx still alive 10s after its lease expired")
		}
	})
	assert.ErrorIs(t, res.Err, context.Canceled)
	assert.Equal(t, classify.Timeout, res.Info.LastCategory, "the expiry settled it, as a Timeout")
}

func TestWorkOneFailsWhenNoMessageBecomesReady(t *testing.T) {
	r, completed := runRecorded(func(tb testing.TB) {
		h := ringwaltest.New(tb, ringwaltest.Options{Wait: 50 * time.Millisecond})
		_, err := h.TryEnqueue(ringwal.Message{Payload: []byte("later"), Delay: time.Minute})
		require.NoError(tb, err)
		h.WorkOne("", func(context.Context, ringwal.Delivery) error {
			t.Error("a delayed message was handled")
			return nil
		})
	})
	assert.False(t, completed)
	require.Len(t, r.failures, 1)
	assert.Contains(t, r.failures[0], `WorkOne(queue ""): no message became ready (waited 50ms)`)
}

func TestWorkOneFailsOnAClosedEngine(t *testing.T) {
	r, completed := runRecorded(func(tb testing.TB) {
		h := ringwaltest.New(tb, ringwaltest.Options{})
		require.NoError(tb, h.Close())
		h.WorkOne("", func(context.Context, ringwal.Delivery) error { return nil })
	})
	assert.False(t, completed)
	require.Len(t, r.failures, 1)
	assert.Contains(t, r.failures[0], "closed")
}

// A handler may use t.Fatal (require): it stops the test's goroutine, and
// the message is nacked saying so, with nothing left running.
func TestWorkOneHandlerThatStopsTheTestNacksItsMessage(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e, err := ringwal.Open("", ringwal.Options{Clock: fake})
	require.NoError(t, err)
	defer e.Close()
	id, err := e.TryEnqueue(ringwal.Message{Payload: []byte("x")})
	require.NoError(t, err)

	r, completed := runRecorded(func(tb testing.TB) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ringwaltest.WorkOne(ctx, tb, e, "", func(context.Context, ringwal.Delivery) error {
			tb.Fatalf("handler gave up")
			return nil
		})
	})
	assert.False(t, completed)
	assert.Equal(t, []string{"handler gave up"}, r.failures)
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.NotEqual(t, ringwal.Leased, info.State)
	assert.Contains(t, info.LastError, "the handler stopped the test")
	_, ok := e.TryDequeue()
	assert.False(t, ok, "the retry is delayed; nothing else was taken")
}

func TestWorkOneWithoutADeadlineWaitsDefaultWaitAtMost(t *testing.T) {
	defer ringwaltest.SetNoDeadlineWait(50 * time.Millisecond)()
	r, completed := runRecorded(func(tb testing.TB) {
		h := ringwaltest.New(tb, ringwaltest.Options{})
		ringwaltest.WorkOne(context.Background(), tb, h.Engine, "none", func(context.Context, ringwal.Delivery) error { return nil })
	})
	assert.False(t, completed)
	require.Len(t, r.failures, 1)
	assert.Contains(t, r.failures[0], `WorkOne(queue "none"): no message became ready (waited 50ms)`)
}

// The handler's ctx is Run's, with no deadline of the harness's own; a
// caller's ctx that ends before anything is ready fails the test saying so.
func TestWorkOneHandlerCtxHasNoDeadlineButTheCallersCtxBoundsTheWait(t *testing.T) {
	h := ringwaltest.New(t, ringwaltest.Options{})
	_, err := h.TryEnqueue(ringwal.Message{})
	require.NoError(t, err)
	h.WorkOne("", func(ctx context.Context, _ ringwal.Delivery) error {
		_, has := ctx.Deadline()
		assert.False(t, has)
		return nil
	})

	r, completed := runRecorded(func(tb testing.TB) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		ringwaltest.WorkOne(ctx, tb, h.Engine, "", func(context.Context, ringwal.Delivery) error { return nil })
	})
	assert.False(t, completed)
	require.Len(t, r.failures, 1)
	assert.Contains(t, r.failures[0], "no message became ready (ctx ended: context deadline exceeded)")
}
