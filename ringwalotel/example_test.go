package ringwalotel_test

import (
	"context"
	"fmt"
	"log"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/ringwalotel"
)

// A message sent inside a request's span is handled in a consumer span
// linked to that request's trace. A real program leaves Options empty
// (the global TracerProvider, W3C propagation) and exports its spans;
// here an in-memory recorder shows them.
func Example() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tel := ringwalotel.Options{TracerProvider: tp}

	e, err := ringwal.Open("", ringwal.Options{OnEnqueue: ringwalotel.OnEnqueue(tel)})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	reqCtx, req := tp.Tracer("shop").Start(context.Background(), "POST /checkout")
	if _, err := e.Queue("emails").Enqueue(reqCtx, ringwal.Message{Payload: []byte("receipt 7")}); err != nil {
		log.Fatal(err)
	}
	req.End()

	ctx, cancel := context.WithCancel(context.Background())
	handle := func(ctx context.Context, d ringwal.Delivery) error {
		cancel() // one message is the whole example
		return nil
	}
	if err := e.Queue("emails").Run(ctx, 1, ringwal.Chain(handle, ringwalotel.Middleware(tel))); err != nil {
		log.Fatal(err)
	}

	for _, s := range rec.Ended() {
		linked := len(s.Links()) == 1 && s.Links()[0].SpanContext.TraceID() == req.SpanContext().TraceID()
		fmt.Printf("%-14s %-8s request's trace: %v, linked to it: %v\n",
			s.Name(), s.SpanKind(), s.SpanContext().TraceID() == req.SpanContext().TraceID(), linked)
	}
	// Output:
	// send emails    producer request's trace: true, linked to it: false
	// POST /checkout internal request's trace: true, linked to it: false
	// process emails consumer request's trace: false, linked to it: true
}
