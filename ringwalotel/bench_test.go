package ringwalotel_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/ringwalotel"
)

// BenchmarkMessagePath is one message's Enqueue, TryDequeue, handler call
// and Ack on a memory-only engine (the shape of the root's
// BenchmarkHotPathSerial, with a ctx and a handler), without ringwalotel
// and with it installed: the difference is what tracing costs a message.
//
//   - plain: no hook, no middleware.
//   - noop: ringwalotel on a no-op TracerProvider (what the global one is
//     until a program sets it): no span is recorded and nothing is
//     carried, so this is the price of having it installed and idle.
//   - sdk: an SDK TracerProvider sampling every span (no exporter, so
//     the spans are built and dropped), the enqueue in a traced ctx: a send
//     and a process span per message, a traceparent in its headers.
//   - sdk-no-producer-span: the same with Options.NoProducerSpan.
func BenchmarkMessagePath(b *testing.B) {
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	traced, span := sdk.Tracer("bench").Start(context.Background(), "request")
	defer span.End()
	for _, bc := range []struct {
		name string
		tel  *ringwalotel.Options
		ctx  context.Context
	}{
		{"plain", nil, context.Background()},
		{"noop", &ringwalotel.Options{TracerProvider: noop.NewTracerProvider()}, context.Background()},
		{"sdk", &ringwalotel.Options{TracerProvider: sdk}, traced},
		{"sdk-no-producer-span", &ringwalotel.Options{TracerProvider: sdk, NoProducerSpan: true}, traced},
	} {
		b.Run(bc.name, func(b *testing.B) {
			o := ringwal.Options{TierCapacity: 1 << 16, MaxMessages: 1 << 17}
			h := ringwal.Handler(func(context.Context, ringwal.Delivery) error { return nil })
			if bc.tel != nil {
				o.OnEnqueue = ringwalotel.OnEnqueue(*bc.tel)
				h = ringwal.Chain(h, ringwalotel.Middleware(*bc.tel))
			}
			benchPath(b, o, bc.ctx, h)
		})
	}
}

func benchPath(b *testing.B, o ringwal.Options, ctx context.Context, h ringwal.Handler) {
	e, err := ringwal.Open("", o)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	payload := make([]byte, 128)
	hctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Enqueue(ctx, ringwal.Message{Payload: payload}); err != nil {
			b.Fatal(err)
		}
		d, ok := e.TryDequeue()
		if !ok {
			b.Fatal("nothing to dequeue")
		}
		if err := h(hctx, d); err != nil {
			b.Fatal(err)
		}
		if err := e.Ack(d.Lease); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOnEnqueue is the hook alone on a message without headers, with
// and without a producer span (SDK TracerProvider, traced ctx).
func BenchmarkOnEnqueue(b *testing.B) {
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	ctx, span := sdk.Tracer("bench").Start(context.Background(), "request")
	defer span.End()
	for _, bc := range []struct {
		name string
		o    ringwalotel.Options
		ctx  context.Context
	}{
		{"noop", ringwalotel.Options{TracerProvider: noop.NewTracerProvider()}, context.Background()},
		{"sdk", ringwalotel.Options{TracerProvider: sdk}, ctx},
		{"sdk-no-producer-span", ringwalotel.Options{TracerProvider: sdk, NoProducerSpan: true}, ctx},
	} {
		b.Run(bc.name, func(b *testing.B) {
			hook := ringwalotel.OnEnqueue(bc.o)
			b.ReportAllocs()
			for b.Loop() {
				m := ringwal.Message{}
				hook(bc.ctx, &m)
			}
		})
	}
}
