package ringwalotel

import (
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/ringwal/ringwal/classify"
)

// ScopeName is the instrumentation scope of the spans this package
// starts.
const ScopeName = "github.com/ringwal/ringwal/ringwalotel"

// DefaultQueueName is the messaging.destination.name of the default queue
// (""), the name the admin API and console give it (admin.DefaultQueue).
const DefaultQueueName = "_default"

// Relation says how a consumer span refers to its producer's span.
type Relation uint8

const (
	// Link (the zero value): each attempt's span starts on its own (a
	// child of the handler ctx's span, if it has one) and links to the
	// producer's span. See the package doc for why this is the default.
	Link Relation = iota
	// ChildOf: each attempt's span is a child of the producer's span.
	ChildOf
)

// String returns "link" or "child_of".
func (r Relation) String() string {
	switch r {
	case Link:
		return "link"
	case ChildOf:
		return "child_of"
	}
	return "relation(" + strconv.Itoa(int(r)) + ")"
}

// Options configures OnEnqueue and Middleware. The zero value is the
// usual setup: the global TracerProvider and propagator, links from
// consumer to producer spans, a producer span per message. Give
// OnEnqueue and Middleware the same Options, so that both speak the same
// propagation format.
type Options struct {
	// TracerProvider makes the tracer. Nil: otel.GetTracerProvider(),
	// which follows a provider set globally later.
	TracerProvider trace.TracerProvider
	// Propagator writes and reads the trace context in Headers. Nil:
	// otel.GetTextMapPropagator(), or W3C tracecontext and baggage when
	// that is the no-op the global starts as (when OnEnqueue or
	// Middleware is called): a queue that carried no context by default
	// would break every trace across it.
	Propagator propagation.TextMapPropagator
	// Relation: Link (default) or ChildOf.
	Relation Relation
	// NoProducerSpan makes OnEnqueue inject the enqueue ctx's span context
	// as it is, starting no "send" span of its own: cheaper, but a
	// message enqueued without a traced ctx then carries no trace
	// context.
	NoProducerSpan bool
	// Classifier names the category of a failed attempt's error. Nil:
	// classify.Default(). Give it the engine's Options.Classifier, so that
	// the span says what the engine will do.
	Classifier classify.Classifier
}

// config is Options with its defaults filled, the one place they are.
type config struct {
	tracer       trace.Tracer
	prop         propagation.TextMapPropagator
	relation     Relation
	noProducer   bool
	classifier   classify.Classifier
	sendSpans    *shapes // "send <queue>", kind Producer
	processSpans *shapes // "process <queue>", kind Consumer
}

func (o Options) config() *config {
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	prop := o.propagator()
	cl := o.Classifier
	if cl == nil {
		cl = classify.Default()
	}
	return &config{
		tracer:       tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		prop:         prop,
		relation:     o.Relation,
		noProducer:   o.NoProducerSpan,
		classifier:   cl,
		sendSpans:    newShapes(sendShape),
		processSpans: newShapes(processShape),
	}
}

// sendShape is a producer span's: messaging.operation "send".
func sendShape(dest string) *shape {
	return spanShape("send", dest, trace.SpanKindProducer, semconv.MessagingOperationTypeSend)
}

// processShape is a consumer span's: messaging.operation "process".
func processShape(dest string) *shape {
	return spanShape("process", dest, trace.SpanKindConsumer, semconv.MessagingOperationTypeProcess)
}

// spanShape is the shape of operation op's spans on destination dest:
// named "<op> <dest>", of kind, with the messaging attributes that do not
// vary per message.
func spanShape(op, dest string, kind trace.SpanKind, opType attribute.KeyValue) *shape {
	return &shape{name: op + " " + dest, opts: []trace.SpanStartOption{
		trace.WithSpanKind(kind),
		trace.WithAttributes(
			systemAttr,
			semconv.MessagingDestinationName(dest),
			opType,
			semconv.MessagingOperationName(op),
		),
	}}
}

// propagator is Options.Propagator or its default.
func (o Options) propagator() propagation.TextMapPropagator {
	if o.Propagator != nil {
		return o.Propagator
	}
	prop := otel.GetTextMapPropagator()
	if len(prop.Fields()) == 0 { // the global no-op
		prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return prop
}

// Attribute keys of ringwal's own span attributes.
const (
	// AttemptKey is the delivery's attempt, 1 on the first (int).
	AttemptKey = attribute.Key("ringwal.attempt")
	// KeyKey is the message's Key, when it has one.
	KeyKey = attribute.Key("ringwal.key")
	// FailureCategoryKey is a failed attempt's category (classify).
	FailureCategoryKey = attribute.Key("ringwal.failure.category")
)

// systemAttr is messaging.system: ringwal is not among the well-known
// values, and the conventions allow others.
var systemAttr = semconv.MessagingSystemKey.String("ringwal")

// destination is the messaging.destination.name of queue q.
func destination(q string) string {
	if q == "" {
		return DefaultQueueName
	}
	return q
}
