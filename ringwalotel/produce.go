package ringwalotel

import (
	"context"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/ringwal/ringwal"
)

// OnEnqueue returns a hook for ringwal.Options.OnEnqueue that puts the
// producer's trace context into each message's Headers (making the map
// when it is nil), where it is logged with the message and survives a
// restart.
//
// By default it starts a "send <queue>" span of kind Producer, ends it,
// and injects its context. The span is a child of ctx's span when ctx has
// one, and the root of a new trace otherwise. Per the messaging semantic
// conventions, the message then has a creation context of its own, which
// every consumer span refers to. With Options.NoProducerSpan it injects
// ctx's span context as it is.
//
// A message that already carries a trace context keeps it when ctx has
// no span: TryEnqueue (which takes no ctx) and schedule runs (a background
// ctx) enqueue with no span, and a caller that injected a context itself
// (Inject) means it. When ctx has a span, ctx wins: a handler that
// enqueues a copy of the message it handles starts a new hop of its own
// trace.
//
// The hook is safe for concurrent use, as the engine requires.
func OnEnqueue(o Options) func(context.Context, *ringwal.Message) {
	c := o.config()
	return c.onEnqueue
}

// Inject puts ctx's trace context into m.Headers (making the map when it
// is nil) with o's propagator, starting no span: for a message given to
// TryEnqueue, which has no ctx for OnEnqueue to read.
func Inject(ctx context.Context, o Options, m *ringwal.Message) {
	if m.Headers == nil {
		m.Headers = make(map[string]string, 2)
	}
	o.propagator().Inject(ctx, propagation.MapCarrier(m.Headers))
}

func (c *config) onEnqueue(ctx context.Context, m *ringwal.Message) {
	if !trace.SpanContextFromContext(ctx).IsValid() && m.Headers != nil &&
		trace.SpanContextFromContext(c.prop.Extract(ctx, propagation.MapCarrier(m.Headers))).IsValid() {
		return // keep the context the message carries: see OnEnqueue
	}
	if !c.noProducer {
		dest := m.Queue
		if t := ringwal.PublishTopic(ctx); t != "" {
			dest = t // a Publish: its copies' destination is the topic
		}
		sh := c.sendSpans.of(dest)
		var span trace.Span
		ctx, span = c.tracer.Start(ctx, sh.name, sh.opts...)
		if m.Key != "" && span.IsRecording() {
			span.SetAttributes(KeyKey.String(m.Key))
		}
		span.End()
	}
	if m.Headers == nil {
		if !trace.SpanContextFromContext(ctx).IsValid() && baggage.FromContext(ctx).Len() == 0 {
			return // nothing to carry (a no-op TracerProvider's span): no map
		}
		m.Headers = make(map[string]string, 2)
	}
	c.prop.Inject(ctx, propagation.MapCarrier(m.Headers))
}
