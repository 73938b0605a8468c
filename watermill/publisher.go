package watermill

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ringwal/ringwal"
)

// ErrPublisherClosed is returned by Publish after Close.
var ErrPublisherClosed = errors.New("ringwal watermill: publisher closed")

// PublisherConfig configures a Publisher. The zero value is ready to use.
type PublisherConfig struct {
	// Key gives a message its ringwal Message.Key: the downstream target
	// whose breaker, rate limit and KeyPolicy apply, and, with an Ordered
	// KeyPolicy (ringwal.Options.KeyPolicy decides which keys are
	// ordered), the partition whose order holds, a Nack included.
	// KeyFromMetadata takes it from a metadata entry. nil = no key.
	Key func(topic string, msg *message.Message) string
}

// KeyFromMetadata is a PublisherConfig.Key that takes the key from the
// metadata entry called name ("" when the message has none).
func KeyFromMetadata(name string) func(topic string, msg *message.Message) string {
	return func(_ string, msg *message.Message) string { return msg.Metadata.Get(name) }
}

// Publisher is a watermill message.Publisher over a ringwal engine. It is
// safe for concurrent use; Close does not close the engine.
type Publisher struct {
	e   *ringwal.Engine
	cfg PublisherConfig

	mu     sync.RWMutex // Close excludes Publish, so none is under way once Close returns
	closed bool
}

var _ message.Publisher = (*Publisher)(nil)

// NewPublisher returns a Publisher over e.
func NewPublisher(e *ringwal.Engine, cfg PublisherConfig) (*Publisher, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: NewPublisher without an engine", ringwal.ErrInvalid)
	}
	return &Publisher{e: e, cfg: cfg}, nil
}

// Publish puts each message into every queue bound to topic (one
// Engine.Publish per message, all of its copies or none, in the order
// given), and returns once each is as durable as the engine's Durability
// promises. The message's context bounds the wait for room. It stops at the
// first error, which names the message's UUID: the messages before it are
// published. A topic no queue binds takes the messages and drops them (the
// engine counts them in Stats.UnroutedPublishes), as a broker with no
// subscription does.
func (p *Publisher) Publish(topic string, messages ...*message.Message) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrPublisherClosed
	}
	for _, msg := range messages {
		key := ""
		if p.cfg.Key != nil {
			key = p.cfg.Key(topic, msg)
		}
		if _, err := p.e.Publish(msg.Context(), topic, toRingwal(msg, key)); err != nil {
			return fmt.Errorf("publish message %s to topic %q: %w", msg.UUID, topic, err)
		}
	}
	return nil
}

// Close makes later Publish calls fail with ErrPublisherClosed, once the
// calls under way have returned. It leaves the engine open; a second Close
// returns nil.
func (p *Publisher) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return nil
}
