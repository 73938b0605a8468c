package ringwal

import (
	"context"
	"maps"
	"time"
)

// Middleware wraps a Handler: it runs code around each attempt (a span, a
// metric, a timeout, a recover) and returns the wrapped Handler. What it
// returns is the attempt's outcome, as a Handler's is.
type Middleware func(Handler) Handler

// Chain wraps h in mw, mw[0] outermost: Chain(h, a, b) runs a, then b,
// then h, and their returns unwind in the reverse order. Nil entries are
// skipped; Chain(h) is h.
func Chain(h Handler, mw ...Middleware) Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		if mw[i] != nil {
			h = mw[i](h)
		}
	}
	return h
}

// HandlerTimeout returns a Middleware that gives each attempt at most d:
// the handler's ctx ends after d (or earlier, when the lease or Close's
// grace ends first). A handler that returns the ctx's error then fails
// as classify.Timeout, as an expired lease does. d <= 0 leaves the
// handler as it is.
func HandlerTimeout(d time.Duration) Middleware {
	return func(h Handler) Handler {
		if d <= 0 {
			return h
		}
		return func(ctx context.Context, dl Delivery) error {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return h(ctx, dl)
		}
	}
}

// onEnqueue runs Options.OnEnqueue on m, a message about to be enqueued,
// before it is validated: what the hook sets is validated and logged
// with the rest. The hook gets its own copy of m's Headers, so one that
// adds a header (a trace context) never writes to the caller's map,
// which the caller may be sharing between messages and goroutines. It
// takes and returns m by value: the hook gets a pointer, which moves m to
// the heap, and only here, so that a nil hook costs the caller's m no
// allocation.
func (e *Engine) onEnqueue(ctx context.Context, m Message) Message {
	if m.Headers != nil {
		m.Headers = maps.Clone(m.Headers)
	}
	e.opts.OnEnqueue(ctx, &m)
	return m
}

// publishTopicKey carries Publish's topic to Options.OnEnqueue.
type publishTopicKey struct{}

// PublishTopic returns the topic when ctx is the one Publish handed to
// Options.OnEnqueue (the message's Queue is "" there: the topic picks
// the queues), and "" otherwise: a hook names the destination with it
// (package ringwalotel's "send <topic>" span).
func PublishTopic(ctx context.Context) string {
	t, _ := ctx.Value(publishTopicKey{}).(string)
	return t
}
