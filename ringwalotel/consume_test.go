package ringwalotel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/ringwalotel"
)

// produced is a delivery of a message sent inside a "checkout" span, as
// the engine would hand it out, and that span's context.
func produced(t *testing.T, r recorded, m ringwal.Message) (ringwal.Delivery, trace.SpanContext) {
	t.Helper()
	ctx, checkout := r.tp.Tracer("test").Start(context.Background(), "checkout")
	ringwalotel.OnEnqueue(r.opts(ringwalotel.Link))(ctx, &m)
	checkout.End()
	send := carried(m)
	require.True(t, send.IsValid())
	return ringwal.Delivery{ID: 42, Attempt: 3, Message: m}, send
}

// process runs d through h wrapped in the Middleware and returns the one
// "process" span it ended.
func process(t *testing.T, r recorded, rel ringwalotel.Relation, d ringwal.Delivery, h ringwal.Handler) sdktrace.ReadOnlySpan {
	t.Helper()
	_ = ringwal.Chain(h, ringwalotel.Middleware(r.opts(rel)))(context.Background(), d)
	ps := r.ended("process " + dest(d.Message.Queue))
	require.Len(t, ps, 1)
	return ps[0]
}

func dest(q string) string {
	if q == "" {
		return admin.DefaultQueue
	}
	return q
}

func ok(context.Context, ringwal.Delivery) error { return nil }

func TestDefaultQueueNameIsTheAdminAPIs(t *testing.T) {
	assert.Equal(t, admin.DefaultQueue, ringwalotel.DefaultQueueName)
}

func TestProcessSpanHasTheMessagingAttributes(t *testing.T) {
	for _, q := range []string{"emails", ""} {
		t.Run("queue="+dest(q), func(t *testing.T) {
			r := newRecorded(t)
			d, _ := produced(t, r, ringwal.Message{Queue: q, Key: "acct-1"})
			s := process(t, r, ringwalotel.Link, d, ok)
			assert.Equal(t, trace.SpanKindConsumer, s.SpanKind())
			a := attrs(s)
			assert.Equal(t, "ringwal", a["messaging.system"].AsString())
			assert.Equal(t, dest(q), a["messaging.destination.name"].AsString())
			assert.Equal(t, "process", a["messaging.operation.type"].AsString())
			assert.Equal(t, "process", a["messaging.operation.name"].AsString())
			assert.Equal(t, "42", a["messaging.message.id"].AsString())
			assert.Equal(t, int64(3), a[ringwalotel.AttemptKey].AsInt64())
			assert.Equal(t, "acct-1", a[ringwalotel.KeyKey].AsString())
			assert.NotContains(t, a, ringwalotel.FailureCategoryKey)
			assert.Equal(t, codes.Unset, s.Status().Code)
		})
	}
}

func TestProcessSpanWithoutAKeyHasNoKeyAttribute(t *testing.T) {
	r := newRecorded(t)
	d, _ := produced(t, r, ringwal.Message{})
	assert.NotContains(t, attrs(process(t, r, ringwalotel.Link, d, ok)), ringwalotel.KeyKey)
}

func TestProcessSpanLinksToOrIsAChildOfTheProducer(t *testing.T) {
	for _, rel := range []ringwalotel.Relation{ringwalotel.Link, ringwalotel.ChildOf} {
		t.Run(rel.String(), func(t *testing.T) {
			r := newRecorded(t)
			d, send := produced(t, r, ringwal.Message{Queue: "emails"})
			var inHandler trace.SpanContext
			s := process(t, r, rel, d, func(ctx context.Context, _ ringwal.Delivery) error {
				inHandler = trace.SpanContextFromContext(ctx)
				return nil
			})
			assert.Equal(t, s.SpanContext(), inHandler, "the handler's ctx carries the attempt's span")
			switch rel {
			case ringwalotel.Link:
				require.Len(t, s.Links(), 1)
				assert.Equal(t, send.TraceID(), s.Links()[0].SpanContext.TraceID())
				assert.Equal(t, send.SpanID(), s.Links()[0].SpanContext.SpanID())
				assert.False(t, s.Parent().IsValid(), "a link, no parent")
				assert.NotEqual(t, send.TraceID(), s.SpanContext().TraceID())
			case ringwalotel.ChildOf:
				assert.Empty(t, s.Links())
				assert.Equal(t, send.SpanID(), s.Parent().SpanID())
				assert.True(t, s.Parent().IsRemote())
				assert.Equal(t, send.TraceID(), s.SpanContext().TraceID())
			}
		})
	}
}

func TestProcessSpanWithoutAProducerContextStandsAlone(t *testing.T) {
	for _, rel := range []ringwalotel.Relation{ringwalotel.Link, ringwalotel.ChildOf} {
		t.Run(rel.String(), func(t *testing.T) {
			r := newRecorded(t)
			s := process(t, r, rel, ringwal.Delivery{ID: 1, Attempt: 1}, ok)
			assert.Empty(t, s.Links())
			assert.False(t, s.Parent().IsValid())
		})
	}
}

func TestHandlerCtxCarriesTheMessagesBaggage(t *testing.T) {
	for _, rel := range []ringwalotel.Relation{ringwalotel.Link, ringwalotel.ChildOf} {
		t.Run(rel.String(), func(t *testing.T) {
			r := newRecorded(t)
			mem, err := baggage.NewMember("tenant", "acme")
			require.NoError(t, err)
			b, err := baggage.New(mem)
			require.NoError(t, err)
			m := ringwal.Message{}
			ringwalotel.OnEnqueue(r.opts(rel))(baggage.ContextWithBaggage(context.Background(), b), &m)
			var got string
			process(t, r, rel, ringwal.Delivery{ID: 1, Attempt: 1, Message: m}, func(ctx context.Context, _ ringwal.Delivery) error {
				got = baggage.FromContext(ctx).Member("tenant").Value()
				return nil
			})
			assert.Equal(t, "acme", got)
		})
	}
}

func TestFailedAttemptRecordsTheErrorAndItsCategory(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		err  error
		cat  classify.Category
	}{
		{"marked permanent", classify.Mark(boom, classify.Permanent), classify.Permanent},
		{"deadline", context.DeadlineExceeded, classify.Timeout},
		{"transient with a retry hint", classify.After(classify.Mark(boom, classify.Transient), 1), classify.Transient},
		{"unrecognised", boom, classify.Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorded(t)
			d, _ := produced(t, r, ringwal.Message{})
			s := process(t, r, ringwalotel.Link, d, func(context.Context, ringwal.Delivery) error { return tc.err })
			assert.Equal(t, codes.Error, s.Status().Code)
			assert.Equal(t, tc.err.Error(), s.Status().Description)
			a := attrs(s)
			assert.Equal(t, tc.cat.String(), a[ringwalotel.FailureCategoryKey].AsString())
			assert.Equal(t, tc.cat.String(), a["error.type"].AsString())
			require.Len(t, s.Events(), 1)
			assert.Equal(t, "exception", s.Events()[0].Name)
		})
	}
}

// A handler's error is classified by Options.Classifier, which should be
// the engine's.
func TestFailedAttemptUsesTheGivenClassifier(t *testing.T) {
	r := newRecorded(t)
	o := r.opts(ringwalotel.Link)
	o.Classifier = classify.ClassifierFunc(func(error) classify.Category { return classify.Resource })
	h := ringwal.Chain(func(context.Context, ringwal.Delivery) error { return errors.New("disk") }, ringwalotel.Middleware(o))
	require.Error(t, h(context.Background(), ringwal.Delivery{ID: 1, Attempt: 1}))
	ps := r.ended("process _default")
	require.Len(t, ps, 1)
	assert.Equal(t, "resource", attrs(ps[0])[ringwalotel.FailureCategoryKey].AsString())
}

// A panic ends the span as a poison failure and goes on, unchanged, to
// the engine (whose Run nacks the message as Poison).
func TestPanickingHandlerEndsItsSpanAsPoisonAndPanicsOn(t *testing.T) {
	r := newRecorded(t)
	h := ringwal.Chain(func(context.Context, ringwal.Delivery) error { panic("kaboom") }, ringwalotel.Middleware(r.opts(ringwalotel.Link)))
	assert.PanicsWithValue(t, "kaboom", func() { _ = h(context.Background(), ringwal.Delivery{ID: 1, Attempt: 1}) })
	ps := r.ended("process _default")
	require.Len(t, ps, 1)
	assert.Equal(t, codes.Error, ps[0].Status().Code)
	assert.Equal(t, "poison", attrs(ps[0])[ringwalotel.FailureCategoryKey].AsString())
}

// Through Run: each attempt is a span, and the failed one says why.
func TestEachAttemptThroughRunIsASpan(t *testing.T) {
	r := newRecorded(t)
	o := r.opts(ringwalotel.Link)
	e, err := ringwal.Open("", ringwal.Options{OnEnqueue: ringwalotel.OnEnqueue(o)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	_, err = e.Enqueue(context.Background(), ringwal.Message{Key: "k", MaxAttempts: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := func(_ context.Context, d ringwal.Delivery) error {
		if d.Attempt == 1 {
			return classify.After(classify.Mark(errors.New("flaky"), classify.Transient), 1) // retried at once
		}
		cancel()
		return nil
	}
	require.NoError(t, e.Run(ctx, 1, ringwal.Chain(h, ringwalotel.Middleware(o))))
	ps := r.ended("process _default")
	require.Len(t, ps, 2)
	assert.Equal(t, int64(1), attrs(ps[0])[ringwalotel.AttemptKey].AsInt64())
	assert.Equal(t, "transient", attrs(ps[0])[ringwalotel.FailureCategoryKey].AsString())
	assert.Equal(t, int64(2), attrs(ps[1])[ringwalotel.AttemptKey].AsInt64())
	assert.Equal(t, codes.Unset, ps[1].Status().Code)
	for _, s := range ps {
		require.Len(t, s.Links(), 1)
		assert.Equal(t, ps[0].Links()[0].SpanContext, s.Links()[0].SpanContext, "every attempt links to the one send span")
	}
}

// panickyHandler panics; its name is looked for in the recorded stack.
func panickyHandler(context.Context, ringwal.Delivery) error { panic("kaboom") }

// Through Run, a panic under the Middleware is still the engine's Poison,
// with the stack of the handler that panicked (the Middleware's recover
// panics again with the same value before the stack unwinds).
func TestPanicThroughRunIsTheEnginesPoisonWithTheHandlersStack(t *testing.T) {
	r := newRecorded(t)
	o := r.opts(ringwalotel.Link)
	dead := make(chan ringwal.DeadLetter, 1)
	e, err := ringwal.Open("", ringwal.Options{
		OnEnqueue:    ringwalotel.OnEnqueue(o),
		OnDeadLetter: func(dl ringwal.DeadLetter) { dead <- dl },
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	_, err = e.Enqueue(context.Background(), ringwal.Message{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, 1, ringwal.Chain(panickyHandler, ringwalotel.Middleware(o))) }()
	dl := <-dead
	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, classify.Poison, dl.Category)
	require.NotEmpty(t, dl.Failures)
	last := dl.Failures[len(dl.Failures)-1].Error
	assert.Contains(t, last, "kaboom")
	assert.Contains(t, last, "ringwalotel_test.panickyHandler")
	ps := r.ended("process _default")
	require.Len(t, ps, 1)
	assert.Equal(t, "poison", attrs(ps[0])[ringwalotel.FailureCategoryKey].AsString())
}
