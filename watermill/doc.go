// Package watermill is a watermill Pub/Sub (github.com/ThreeDotsLabs/watermill)
// over one *ringwal.Engine, so that routers, middleware and CQRS code written
// for watermill run on ringwal's durable queues.
//
// The mapping, in one engine (never an engine per topic):
//
//   - A watermill topic is a ringwal topic: Publisher.Publish is
//     Engine.Publish, one copy into every queue bound to the topic, all or
//     none.
//   - A subscription reads a queue bound to the topic: QueueName(topic,
//     group). Every Subscriber of one consumer group (SubscriberConfig.
//     ConsumerGroup) shares that queue and competes for its messages; with
//     no group the queue is named after the topic and all such subscribers
//     compete too (watermill-amqp's durable-queue model). Each group gets
//     every message once; two groups get a copy each.
//   - A queue receives only what is published after it is bound: call
//     Subscribe or SubscribeInitialize before publishing, or declare the
//     queue at Open (ringwal.Options.Queues with Topics).
//   - Payload is the payload; metadata are headers; the message UUID travels
//     in the header UUIDHeader.
//   - Ack is Engine.Ack. Nack puts the message back at once (Engine.Requeue):
//     no failure recorded, no backoff, though the delivery still counts
//     toward MaxAttempts; retries and poison queues are watermill's
//     middleware's business. While a message waits for its Ack or Nack the
//     subscriber extends its lease, so a slow handler is not a Timeout.
//   - The engine belongs to the caller: closing a Publisher or Subscriber
//     never closes it.
//
// Delivery is at least once: a message whose Ack did not reach the log
// before a crash is delivered again. Order holds per ordered key only: set
// PublisherConfig.Key (KeyFromMetadata, say) and give those keys an Ordered
// ringwal.KeyPolicy; without one a Nack sends a message to the back of its
// queue, and competing subscribers interleave.
package watermill
