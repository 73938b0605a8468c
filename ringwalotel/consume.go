package ringwalotel

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

// Middleware returns a ringwal.Middleware that runs each attempt inside a
// "process <queue>" span of kind Consumer. The span is tied to the
// producer's span whose context the message's Headers carry, where
// OnEnqueue put it. By default it is linked to it (Link); with ChildOf it
// is its child. The handler's ctx carries the span and the message's
// baggage, so what the handler traces is a child of the attempt's span.
//
// The span has the messaging semantic-convention attributes:
// messaging.system is "ringwal", and messaging.destination.name is the
// queue, DefaultQueueName for the default one. messaging.operation.type
// and messaging.operation.name are "process". It also has
// messaging.message.id, ringwal.attempt, and ringwal.key when the message
// has a Key. When the handler returns an error, the span records it and
// its status is Error. Its error.type and ringwal.failure.category are the
// error's category, from Options.Classifier. A panic is recorded as
// classify.Poison and goes on to the engine, which nacks the message as
// Poison. The span ends when the handler returns or panics.
//
// A message without a trace context gets a span all the same, with no
// link (Link) or no remote parent (ChildOf). The Middleware is safe for
// concurrent use.
func Middleware(o Options) ringwal.Middleware {
	c := o.config()
	return func(next ringwal.Handler) ringwal.Handler {
		return func(ctx context.Context, d ringwal.Delivery) error {
			return c.process(ctx, d, next)
		}
	}
}

// errExited stands for a handler that called runtime.Goexit.
var errExited = errors.New("ringwalotel: the handler exited without returning (runtime.Goexit)")

func (c *config) process(ctx context.Context, d ringwal.Delivery, next ringwal.Handler) (err error) {
	sh := c.processSpans.of(d.Message.Queue)
	opts := sh.opts
	if d.Message.Headers != nil {
		pctx := c.prop.Extract(ctx, propagation.MapCarrier(d.Message.Headers))
		if c.relation == ChildOf {
			ctx = pctx
		} else {
			if sc := trace.SpanContextFromContext(pctx); sc.IsValid() {
				// At the start, where a sampler sees it.
				opts = append(opts[:len(opts):len(opts)], trace.WithLinks(trace.Link{SpanContext: sc}))
			}
			if b := baggage.FromContext(pctx); b.Len() > 0 {
				ctx = baggage.ContextWithBaggage(ctx, b)
			}
		}
	}
	ctx, span := c.tracer.Start(ctx, sh.name, opts...)
	if span.IsRecording() {
		// After the start, so that a span nobody records costs nothing
		// for them (the ID's text is an allocation).
		span.SetAttributes(
			semconv.MessagingMessageID(strconv.FormatUint(uint64(d.ID), 10)),
			AttemptKey.Int(d.Attempt),
		)
		if d.Message.Key != "" {
			span.SetAttributes(KeyKey.String(d.Message.Key))
		}
	}
	returned := false
	defer func() {
		if !returned {
			// A panic (recover is the engine's: it nacks the message as
			// Poison with the stack) or runtime.Goexit.
			if v := recover(); v != nil {
				c.failed(span, classify.Poison, fmt.Errorf("panic: %v", v))
				span.End()
				panic(v) // on to the engine, whose recover sees the same value
			}
			c.failed(span, classify.Poison, errExited)
		}
		span.End()
	}()
	err = next(ctx, d)
	returned = true
	if err != nil {
		c.failed(span, c.classifier.Classify(err), err)
	}
	return err
}

// failed marks span as a failed attempt of category cat.
func (c *config) failed(span trace.Span, cat classify.Category, err error) {
	name := cat.String()
	span.RecordError(err)
	span.SetAttributes(semconv.ErrorTypeKey.String(name), FailureCategoryKey.String(name))
	span.SetStatus(codes.Error, err.Error())
}
