package ringwalotel_test

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ringwal/ringwal/ringwalotel"
)

// recorded is a TracerProvider whose ended spans a test reads.
type recorded struct {
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
}

// newRecorded returns a recording TracerProvider, shut down with the test.
func newRecorded(t testing.TB) recorded {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return recorded{rec: rec, tp: tp}
}

// opts returns Options on r's TracerProvider.
func (r recorded) opts(rel ringwalotel.Relation) ringwalotel.Options {
	return ringwalotel.Options{TracerProvider: r.tp, Relation: rel}
}

// ended returns the ended spans named name.
func (r recorded) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// attrs maps a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}
