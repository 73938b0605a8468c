// Package ringwalotel carries OpenTelemetry traces through ringwal
// messages: a producer's trace context rides in a message's Headers, and
// each attempt at handling the message is a consumer span tied to it. A
// trace so crosses the queue, the write-ahead log and a restart: the
// context is a header, logged with the message.
//
// Two pieces, installed where the engine takes hooks:
//
//	tel := ringwalotel.Options{} // the global TracerProvider and propagator
//	e, err := ringwal.Open(dir, ringwal.Options{OnEnqueue: ringwalotel.OnEnqueue(tel)})
//	...
//	err = e.Run(ctx, workers, ringwal.Chain(handle, ringwalotel.Middleware(tel)))
//
// OnEnqueue starts a "send <queue>" span of kind Producer, a child of the
// span in the enqueue's ctx if there is one. It ends the span at once and
// injects its context into the message's Headers with the configured
// propagator, W3C traceparent and baggage by default. Following the OpenTelemetry
// messaging semantic conventions, that span is the message's creation
// context, which every consumer span refers to. The hook runs before the
// engine validates and logs the message, so its span covers the hook, not
// the enqueue's wait for the log: the engine has no hook after it.
//
// Middleware starts a "process <queue>" span of kind Consumer around each
// attempt. The span carries the messaging attributes: messaging.system
// "ringwal", messaging.destination.name the queue, messaging.operation.type
// and .name "process", and messaging.message.id. The default queue is named
// "_default", as the admin API names it. It also carries ringwal's own
// attributes, ringwal.attempt and ringwal.key. A failed attempt records its
// error and sets the span's status to Error. Its category (package
// classify) goes in error.type and ringwal.failure.category. A panic is
// recorded as a poison failure before it goes on to the engine. The span
// ends when the handler returns.
//
// # Link or child
//
// By default, with Options.Relation Link, a consumer span is not a child
// of the producer's span. It starts on its own and carries a link to it. A
// message may be handled long after it was sent, and more than once: each
// retry is an attempt, a new span. Making each attempt a child would
// stretch the producer's trace over hours of retries. It would also give
// one request's trace an unbounded number of descendants. The messaging
// semantic conventions recommend links for such asynchronous consumers.
//
// ChildOf makes each attempt a child of the producer's span instead, so a
// tracing UI shows the whole journey as one tree. Choose it when messages
// are handled promptly and a trace per request is what is wanted.
//
// # What this package does not do
//
// It creates no "receive" spans and no metrics: the engine's Stats and
// package prom cover counts and latencies. It does not log, because the
// engine already writes a line per failure. It sees only what the hooks
// give it. The destination of a Publish's producer span is the topic
// (ringwal.PublishTopic). TryEnqueue takes no ctx, so it produces a trace
// of its own unless the message carries a trace context already (see
// OnEnqueue). The root package never imports OpenTelemetry; only this
// package does.
package ringwalotel
