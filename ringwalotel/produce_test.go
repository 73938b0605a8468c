package ringwalotel_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/ringwalotel"
)

// carried is the span context a message's headers carry (W3C).
func carried(m ringwal.Message) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(m.Headers))
	return trace.SpanContextFromContext(ctx)
}

func TestOnEnqueueInjectsASendSpanChildOfTheCallersSpan(t *testing.T) {
	r := newRecorded(t)
	hook := ringwalotel.OnEnqueue(r.opts(ringwalotel.Link))
	ctx, caller := r.tp.Tracer("test").Start(context.Background(), "checkout")
	m := ringwal.Message{Queue: "emails", Key: "acct-1"}
	hook(ctx, &m)
	caller.End()

	sends := r.ended("send emails")
	require.Len(t, sends, 1)
	send := sends[0]
	assert.Equal(t, trace.SpanKindProducer, send.SpanKind())
	assert.Equal(t, caller.SpanContext().SpanID(), send.Parent().SpanID(), "the send span is a child of the caller's")
	assert.Equal(t, send.SpanContext().TraceID(), carried(m).TraceID())
	assert.Equal(t, send.SpanContext().SpanID(), carried(m).SpanID(), "the message carries the send span's context")
	a := attrs(send)
	assert.Equal(t, "ringwal", a["messaging.system"].AsString())
	assert.Equal(t, "emails", a["messaging.destination.name"].AsString())
	assert.Equal(t, "send", a["messaging.operation.type"].AsString())
	assert.Equal(t, "acct-1", a[ringwalotel.KeyKey].AsString())
}

func TestOnEnqueueWithoutACallerSpanStartsATrace(t *testing.T) {
	r := newRecorded(t)
	m := ringwal.Message{}
	ringwalotel.OnEnqueue(r.opts(ringwalotel.Link))(context.Background(), &m)
	sends := r.ended("send " + ringwalotel.DefaultQueueName)
	require.Len(t, sends, 1)
	assert.False(t, sends[0].Parent().IsValid())
	assert.Equal(t, sends[0].SpanContext().SpanID(), carried(m).SpanID())
}

func TestOnEnqueueNoProducerSpanInjectsTheCallersContext(t *testing.T) {
	r := newRecorded(t)
	o := r.opts(ringwalotel.Link)
	o.NoProducerSpan = true
	ctx, caller := r.tp.Tracer("test").Start(context.Background(), "checkout")
	m := ringwal.Message{Headers: map[string]string{"a": "b"}}
	ringwalotel.OnEnqueue(o)(ctx, &m)
	caller.End()
	assert.Equal(t, caller.SpanContext().SpanID(), carried(m).SpanID())
	assert.Equal(t, "b", m.Headers["a"], "other headers stay")
	assert.Len(t, r.rec.Ended(), 1, "no span but the caller's")
}

// A message that carries a trace context (injected by its caller before
// TryEnqueue, or a schedule's template) keeps it when the enqueue's ctx
// has no span; a traced ctx replaces it.
func TestOnEnqueueKeepsACarriedContextOnlyWithoutACallerSpan(t *testing.T) {
	r := newRecorded(t)
	hook := ringwalotel.OnEnqueue(r.opts(ringwalotel.Link))
	ctx, earlier := r.tp.Tracer("test").Start(context.Background(), "earlier")
	earlier.End()
	m := ringwal.Message{}
	ringwalotel.Inject(ctx, r.opts(ringwalotel.Link), &m)
	require.Equal(t, earlier.SpanContext().SpanID(), carried(m).SpanID())

	hook(context.Background(), &m)
	assert.Equal(t, earlier.SpanContext().SpanID(), carried(m).SpanID(), "kept")
	assert.Empty(t, r.ended("send _default"))

	ctx2, now := r.tp.Tracer("test").Start(context.Background(), "now")
	hook(ctx2, &m)
	now.End()
	assert.Equal(t, now.SpanContext().TraceID(), carried(m).TraceID(), "replaced by the traced ctx's")
}

// With the no-op TracerProvider (the global default) and nothing to
// carry, the hook adds no map to a message.
func TestOnEnqueueWithNothingToCarryLeavesHeadersNil(t *testing.T) {
	o := ringwalotel.Options{TracerProvider: noop.NewTracerProvider()}
	m := ringwal.Message{}
	ringwalotel.OnEnqueue(o)(context.Background(), &m)
	assert.Nil(t, m.Headers)

	mem, err := baggage.NewMember("tenant", "acme")
	require.NoError(t, err)
	b, err := baggage.New(mem)
	require.NoError(t, err)
	ringwalotel.OnEnqueue(o)(baggage.ContextWithBaggage(context.Background(), b), &m)
	assert.Equal(t, "tenant=acme", m.Headers["baggage"], "baggage travels without a span")
}

// The zero Options speak W3C tracecontext and baggage while the global
// propagator is the no-op it starts as (this test binary never sets it).
func TestZeroOptionsPropagateW3CWhenTheGlobalPropagatorIsNoop(t *testing.T) {
	r := newRecorded(t)
	ctx, span := r.tp.Tracer("test").Start(context.Background(), "x")
	span.End()
	m := ringwal.Message{}
	ringwalotel.Inject(ctx, ringwalotel.Options{}, &m)
	assert.Contains(t, m.Headers, "traceparent")
	assert.Equal(t, span.SpanContext().SpanID(), carried(m).SpanID())
}

// The hook writes the engine's copy of the headers, never the caller's
// map, and what it sets is logged with the message and delivered.
func TestOnEnqueueHeadersReachTheDeliveryNotTheCallersMap(t *testing.T) {
	r := newRecorded(t)
	e, err := ringwal.Open("", ringwal.Options{OnEnqueue: ringwalotel.OnEnqueue(r.opts(ringwalotel.Link))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	shared := map[string]string{"a": "b"}
	_, err = e.Enqueue(context.Background(), ringwal.Message{Headers: shared})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "b"}, shared)
	d, ok := e.TryDequeue()
	require.True(t, ok)
	assert.Contains(t, d.Message.Headers, "traceparent")
	assert.Equal(t, "b", d.Message.Headers["a"])
}

// Spans of many queues, started from several goroutines at once, are
// named for their own queue, past the bound of kept span shapes too.
func TestSpansOfManyQueuesAreNamedForTheirOwn(t *testing.T) {
	r := newRecorded(t)
	o := r.opts(ringwalotel.Link)
	hook, mw := ringwalotel.OnEnqueue(o), ringwalotel.Middleware(o)
	const queues, goroutines = 300, 4
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range queues {
				q := fmt.Sprintf("q%d", (i+g*7)%queues)
				m := ringwal.Message{Queue: q}
				hook(context.Background(), &m)
				_ = ringwal.Chain(ok, mw)(context.Background(), ringwal.Delivery{ID: 1, Attempt: 1, Message: m})
			}
		})
	}
	wg.Wait()
	for i := range queues {
		q := fmt.Sprintf("q%d", i)
		for _, op := range []string{"send", "process"} {
			ss := r.ended(op + " " + q)
			require.Len(t, ss, goroutines, "%s %s", op, q)
			for _, s := range ss {
				assert.Equal(t, q, attrs(s)["messaging.destination.name"].AsString())
			}
		}
	}
}

func TestPublishSendSpanIsNamedForTheTopic(t *testing.T) {
	r := newRecorded(t)
	e, err := ringwal.Open("", ringwal.Options{OnEnqueue: ringwalotel.OnEnqueue(r.opts(ringwalotel.Link))})
	require.NoError(t, err)
	defer e.Close()
	for _, q := range []string{"billing", "audit"} {
		require.NoError(t, e.DeclareQueue(q, ringwal.QueueOptions{Topics: []string{"orders"}}))
	}
	ids, err := e.Publish(context.Background(), "orders", ringwal.Message{Payload: []byte("o-1")})
	require.NoError(t, err)
	require.Len(t, ids, 2)

	sends := r.ended("send orders")
	require.Len(t, sends, 1, "one send span for the Publish, named for its topic")
	assert.Equal(t, "orders", attrs(sends[0])["messaging.destination.name"].AsString())
	for _, q := range []string{"billing", "audit"} {
		d, ok := e.Queue(q).TryDequeue()
		require.True(t, ok)
		assert.Equal(t, sends[0].SpanContext().SpanID(), carried(d.Message).SpanID(), "every copy carries the send span")
	}
}
