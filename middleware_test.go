package ringwal_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

func TestChainRunsMiddlewareOutermostFirst(t *testing.T) {
	var trail []string
	mark := func(name string) ringwal.Middleware {
		return func(next ringwal.Handler) ringwal.Handler {
			return func(ctx context.Context, d ringwal.Delivery) error {
				trail = append(trail, name+">")
				err := next(ctx, d)
				trail = append(trail, "<"+name)
				return err
			}
		}
	}
	errH := errors.New("handler")
	h := func(context.Context, ringwal.Delivery) error { trail = append(trail, "h"); return errH }
	tests := []struct {
		name string
		mw   []ringwal.Middleware
		want []string
	}{
		{"none", nil, []string{"h"}},
		{"one", []ringwal.Middleware{mark("a")}, []string{"a>", "h", "<a"}},
		{"three", []ringwal.Middleware{mark("a"), mark("b"), mark("c")},
			[]string{"a>", "b>", "c>", "h", "<c", "<b", "<a"}},
		{"nil skipped", []ringwal.Middleware{nil, mark("a"), nil}, []string{"a>", "h", "<a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trail = nil
			err := ringwal.Chain(h, tt.mw...)(context.Background(), ringwal.Delivery{})
			assert.ErrorIs(t, err, errH, "the handler's error comes back through every layer")
			assert.Equal(t, tt.want, trail)
		})
	}
}

func TestHandlerTimeoutEndsTheAttemptsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wait := func(ctx context.Context, _ ringwal.Delivery) error {
			<-ctx.Done()
			return ctx.Err()
		}
		start := time.Now()
		err := ringwal.Chain(wait, ringwal.HandlerTimeout(3*time.Second))(context.Background(), ringwal.Delivery{})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 3*time.Second, time.Since(start))

		// An earlier end of the caller's ctx (the lease) still ends it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		err = ringwal.Chain(wait, ringwal.HandlerTimeout(time.Hour))(ctx, ringwal.Delivery{})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start))

		// d <= 0 leaves the handler as it is.
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start = time.Now()
		_ = ringwal.Chain(wait, ringwal.HandlerTimeout(0))(ctx, ringwal.Delivery{})
		assert.Equal(t, 2*time.Second, time.Since(start))
	})
}

// hookCalls records what Options.OnEnqueue saw.
type hookCalls struct {
	mu    sync.Mutex
	calls []ringwal.Message
	ctxOK []bool
}

type hookKey struct{}

func (h *hookCalls) hook(ctx context.Context, m *ringwal.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, *m)
	h.ctxOK = append(h.ctxOK, ctx.Value(hookKey{}) != nil)
	if m.Headers == nil {
		m.Headers = map[string]string{}
	}
	m.Headers["hooked"] = string(m.Payload)
}

func (h *hookCalls) seen() (n int, withCallerCtx int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ok := range h.ctxOK {
		if ok {
			withCallerCtx++
		}
	}
	return len(h.calls), withCallerCtx
}

func TestOnEnqueueSeesEveryMessageOnItsWayIn(t *testing.T) {
	var h hookCalls
	e, fake := memEngine(t, ringwal.Options{OnEnqueue: h.hook})
	require.NoError(t, e.DeclareQueue("a", ringwal.QueueOptions{Topics: []string{"news"}}))
	require.NoError(t, e.DeclareQueue("b", ringwal.QueueOptions{Topics: []string{"news"}}))
	ctx := context.WithValue(context.Background(), hookKey{}, true)

	_, err := e.Enqueue(ctx, ringwal.Message{Payload: []byte("enqueue")})
	require.NoError(t, err)
	_, err = e.TryEnqueue(ringwal.Message{Payload: []byte("try")})
	require.NoError(t, err)
	_, err = e.EnqueueBatch(ctx, []ringwal.Message{{Payload: []byte("b1")}, {Payload: []byte("b2")}})
	require.NoError(t, err)
	_, err = e.Publish(ctx, "news", ringwal.Message{Payload: []byte("pub")})
	require.NoError(t, err)
	_, err = e.Queue("a").Enqueue(ctx, ringwal.Message{Payload: []byte("handle")})
	require.NoError(t, err)
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "s", Spec: "@every 1m", Message: ringwal.Message{Payload: []byte("sched")}}))
	fake.Advance(time.Minute)
	require.Eventually(t, func() bool { n, _ := h.seen(); return n == 7 }, 10*time.Second, time.Millisecond)

	n, withCtx := h.seen()
	assert.Equal(t, 7, n, "Enqueue, TryEnqueue, two batch messages, one Publish, the handle, one schedule run")
	assert.Equal(t, 5, withCtx, "the caller's ctx reaches the hook; TryEnqueue and the schedule run get a background one")

	// What the hook set is on every message, the publish's copies included.
	got := map[string]int{}
	for _, q := range []string{"", "a", "b"} {
		for {
			d, ok := e.Queue(q).TryDequeue()
			if !ok {
				break
			}
			assert.Equal(t, string(d.Message.Payload), d.Message.Headers["hooked"])
			got[string(d.Message.Payload)]++
			require.NoError(t, e.Ack(d.Lease))
		}
	}
	assert.Equal(t, map[string]int{"enqueue": 1, "try": 1, "b1": 1, "b2": 1, "pub": 2, "handle": 1, "sched": 1}, got)
}

func TestOnEnqueueHeadersAreLoggedAndTheCallersAreLeftAlone(t *testing.T) {
	dir := t.TempDir()
	var h hookCalls
	e := open(t, dir, ringwal.Options{OnEnqueue: h.hook})
	mine := map[string]string{"own": "1"}
	batch := []ringwal.Message{{Payload: []byte("b"), Headers: mine}}
	_, err := e.Enqueue(context.Background(), ringwal.Message{Payload: []byte("x"), Headers: mine})
	require.NoError(t, err)
	_, err = e.EnqueueBatch(context.Background(), batch)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"own": "1"}, mine, "the hook writes to the engine's copy of the headers")
	assert.NotContains(t, batch[0].Headers, "hooked", "the caller's batch is not changed")
	assert.Equal(t, []byte("b"), batch[0].Payload)
	require.NoError(t, e.Close())

	e = open(t, dir, ringwal.Options{})
	for _, want := range []string{"x", "b"} {
		d := dequeue(t, e)
		assert.Equal(t, map[string]string{"own": "1", "hooked": want}, d.Message.Headers, "the hook's header survived the restart")
		require.NoError(t, e.Ack(d.Lease))
	}
}

func TestOnEnqueueOutputIsValidated(t *testing.T) {
	bad := func(_ context.Context, m *ringwal.Message) { m.Priority = 9 }
	e, _ := memEngine(t, ringwal.Options{OnEnqueue: bad})
	_, err := e.Enqueue(context.Background(), ringwal.Message{})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	_, err = e.EnqueueBatch(context.Background(), []ringwal.Message{{}})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	assert.Zero(t, e.Stats().Pending)
}

func TestPublishTopicReachesTheHookOnlyFromPublish(t *testing.T) {
	var mu sync.Mutex
	var topics []string
	hook := func(ctx context.Context, m *ringwal.Message) {
		mu.Lock()
		defer mu.Unlock()
		topics = append(topics, ringwal.PublishTopic(ctx))
	}
	e, _ := memEngine(t, ringwal.Options{OnEnqueue: hook})
	require.NoError(t, e.DeclareQueue("a", ringwal.QueueOptions{Topics: []string{"news"}}))
	_, err := e.Publish(context.Background(), "news", ringwal.Message{})
	require.NoError(t, err)
	_, err = e.Enqueue(context.Background(), ringwal.Message{Queue: "a"})
	require.NoError(t, err)
	assert.Equal(t, []string{"news", ""}, topics)
	assert.Empty(t, ringwal.PublishTopic(context.Background()))
}
