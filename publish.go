package ringwal

import (
	"context"
	"errors"
	"fmt"
)

// Topics: a queue binds topics (QueueOptions.Topics), and Publish puts one
// copy of a message into every queue bound to the topic. Consumer groups
// are built so: one queue per group, competing consumers inside it.

// Publish puts one copy of m into every queue bound to topic
// (QueueOptions.Topics), all or none: the copies are logged in one
// record, which a crash keeps whole or drops whole. Each copy has its own ID (the
// IDs are returned in the order of the queues' names), attempts and
// fate. m.Queue must be "". A topic no queue binds gets no copy, no ID
// and no error, and is counted (Stats.UnroutedPublishes). A bound queue at
// its MaxMessages refuses the whole publish with an error wrapping
// ErrFull that names the queue. With a DedupID, each copy's DedupID is
// m.DedupID + "/" + its queue's name, so that a repeat adds no copy to a
// queue that has one (ErrDuplicate, with the first copies' IDs). Safe for
// concurrent use.
func (e *Engine) Publish(ctx context.Context, topic string, m Message) ([]ID, error) {
	if err := e.errIfClosing(); err != nil {
		return nil, err
	}
	if e.opts.OnEnqueue != nil {
		m = e.onEnqueue(context.WithValue(ctx, publishTopicKey{}, topic), m)
	}
	if err := validQueueName(topic); err != nil {
		return nil, fmt.Errorf("topic: %w", err)
	}
	if m.Queue != "" {
		return nil, invalidf("Publish of a message for queue %q: topics pick the queues", m.Queue)
	}
	// Before any capacity check: a caller retries ErrFull, and an invalid
	// message would never stop being refused.
	if err := e.validate(&m); err != nil {
		return nil, err
	}
	qs := e.bound(topic)
	if len(qs) == 0 {
		e.ctr.unrouted.Add(1)
		return nil, nil
	}
	copies := make([]Message, len(qs))
	for i, q := range qs {
		if q.full(1) {
			return nil, fmt.Errorf("%w: publish to %q: queue %q at MaxMessages %d", ErrFull, topic, q.name, q.eff.Load().maxMessages)
		}
		copies[i] = m
		copies[i].Queue = q.name
		if m.DedupID != "" {
			copies[i].DedupID = m.DedupID + "/" + q.name
		}
	}
	ids, err := e.enqueueBatch(ctx, copies, &m)
	if err == nil || errors.Is(err, ErrDuplicate) {
		e.ctr.published.Add(1)
	}
	return ids, err
}

// bound returns the queues bound to topic, by name. Lock-free.
func (e *Engine) bound(topic string) []*queue { return (*e.queues.topics.Load())[topic] }
