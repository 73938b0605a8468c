package watermill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ringwal/ringwal"
)

// ErrSubscriberClosed is returned by Subscribe and SubscribeInitialize
// after Close.
var ErrSubscriberClosed = errors.New("ringwal watermill: subscriber closed")

// DefaultLeaseTimeout is SubscriberConfig.LeaseTimeout's default.
const DefaultLeaseTimeout = 30 * time.Second

// SubscriberConfig configures a Subscriber. The zero value is ready to use.
type SubscriberConfig struct {
	// ConsumerGroup: subscribers of one group share a queue and compete
	// for its messages; every group gets each message once. "" = the
	// topic's own queue, shared the same way by every subscriber without a
	// group.
	ConsumerGroup string
	// QueueName names the queue that holds a group's copy of a topic. nil
	// = DefaultQueueName.
	QueueName func(topic, group string) string
	// QueueOptions declares a queue that does not exist yet (the topic is
	// added to its Topics). A queue that exists keeps its options; only the
	// topic is bound to it if it is not yet.
	QueueOptions ringwal.QueueOptions
	// LeaseTimeout is the lease of a delivered message, renewed every third
	// of it until the message is acked or nacked, so that a handler has no
	// deadline. A queue this subscriber declares gets it as its
	// QueueOptions.LeaseTimeout unless QueueOptions sets one; an existing
	// queue's declared LeaseTimeout wins. Set it no longer than the
	// engine's Options.LeaseTimeout when the queue is declared elsewhere
	// without one. 0 = DefaultLeaseTimeout.
	LeaseTimeout time.Duration
	// Logger receives errors the subscriber cannot return (a failed Ack,
	// a failed lease renewal). nil = none.
	Logger wm.LoggerAdapter
}

// DefaultQueueName is the queue of a topic's consumer group: the topic's
// name without a group, topic + "@" + group with one.
func DefaultQueueName(topic, group string) string {
	if group == "" {
		return topic
	}
	return topic + "@" + group
}

// Subscriber is a watermill message.Subscriber over a ringwal engine. Each
// Subscribe call delivers one message at a time on its channel: the next
// comes once the last is acked or nacked. It is safe for concurrent use;
// Close does not close the engine.
type Subscriber struct {
	e   *ringwal.Engine
	cfg SubscriberConfig

	closing context.Context // ended by Close: every subscription stops
	close   context.CancelFunc
	wg      sync.WaitGroup // the subscriptions' goroutines, owned by Close
	mu      sync.Mutex     // closed and wg.Add against Close
	closed  bool
}

var (
	_ message.Subscriber           = (*Subscriber)(nil)
	_ message.SubscribeInitializer = (*Subscriber)(nil)
)

// NewSubscriber returns a Subscriber over e.
func NewSubscriber(e *ringwal.Engine, cfg SubscriberConfig) (*Subscriber, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: NewSubscriber without an engine", ringwal.ErrInvalid)
	}
	if cfg.LeaseTimeout < 0 {
		return nil, fmt.Errorf("%w: negative LeaseTimeout %v", ringwal.ErrInvalid, cfg.LeaseTimeout)
	}
	if cfg.LeaseTimeout == 0 {
		cfg.LeaseTimeout = DefaultLeaseTimeout
	}
	if cfg.QueueName == nil {
		cfg.QueueName = DefaultQueueName
	}
	if cfg.Logger == nil {
		cfg.Logger = wm.NopLogger{}
	}
	closing, cancel := context.WithCancel(context.Background())
	return &Subscriber{e: e, cfg: cfg, closing: closing, close: cancel}, nil
}

// SubscribeInitialize binds the subscriber's queue for topic, so that
// messages published from now on wait there for a Subscribe.
func (s *Subscriber) SubscribeInitialize(topic string) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrSubscriberClosed
	}
	_, _, err := s.bind(topic)
	return err
}

// bind makes sure the queue of topic for this subscriber's group exists
// and binds topic, and returns it with the lease to keep on its messages:
// the queue's declared LeaseTimeout, or the subscriber's. A queue that
// exists keeps its options; a new one takes QueueOptions.
func (s *Subscriber) bind(topic string) (*ringwal.Queue, time.Duration, error) {
	name := s.cfg.QueueName(topic, s.cfg.ConsumerGroup)
	o, exists := s.cfg.QueueOptions, false
	for _, qi := range s.e.Queues() {
		if qi.Name == name {
			o, exists = qi.Options, true
			break
		}
	}
	if !exists && o.LeaseTimeout == 0 {
		o.LeaseTimeout = s.cfg.LeaseTimeout
	}
	lease := cmp.Or(o.LeaseTimeout, s.cfg.LeaseTimeout)
	bound := slices.Contains(o.Topics, topic)
	if exists && bound {
		return s.e.Queue(name), lease, nil
	}
	if !bound {
		o.Topics = append(slices.Clone(o.Topics), topic)
	}
	if err := s.e.DeclareQueue(name, o); err != nil {
		return nil, 0, fmt.Errorf("declare queue %q for topic %q: %w", name, topic, err)
	}
	return s.e.Queue(name), lease, nil
}

// Subscribe binds the queue of topic (see SubscribeInitialize) and
// delivers its messages on the returned channel, one at a time, until ctx
// ends, Close is called or the engine closes; then the channel is closed. A
// message handed out and not yet acked or nacked then goes back to its
// queue at once, for the next subscriber. Each message's Context ends when
// it is acked or nacked, or when the subscription stops.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSubscriberClosed
	}
	q, lease, err := s.bind(topic)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.closing, cancel)
	out := make(chan *message.Message)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(out)
		defer stop()
		defer cancel()
		s.consume(ctx, q, lease, out)
	}()
	return out, nil
}

// consume is a subscription's loop: lease the next message, hand it out,
// settle it, until ctx ends or the engine closes.
func (s *Subscriber) consume(ctx context.Context, q *ringwal.Queue, lease time.Duration, out chan<- *message.Message) {
	for {
		d, err := q.Dequeue(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ringwal.ErrClosed) {
				return
			}
			s.cfg.Logger.Error("ringwal dequeue failed", err, wm.LogFields{"queue": q.Name()})
			select { // not a busy loop on a persistent error
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if !s.deliver(ctx, q, d, lease, out) {
			return
		}
	}
}

// deliver hands d out on out and settles it: Ack on the message's Ack,
// Requeue on its Nack or when ctx ends first. Its lease is renewed every
// third of lease meanwhile. It reports whether the subscription goes on.
func (s *Subscriber) deliver(ctx context.Context, q *ringwal.Queue, d ringwal.Delivery, lease time.Duration, out chan<- *message.Message) bool {
	msg := fromRingwal(d)
	msgCtx, done := context.WithCancel(ctx)
	defer done()
	msg.SetContext(msgCtx)
	renew := time.NewTicker(lease / 3)
	defer renew.Stop()
	fields := logFields{queue: q.Name(), uuid: msg.UUID, id: d.ID}

	handed := false
	for !handed {
		select {
		case out <- msg:
			handed = true
		case <-renew.C:
			s.extend(d, lease, fields)
		case <-ctx.Done():
			s.requeue(d, fields)
			return false
		}
	}
	for {
		select {
		case <-msg.Acked():
			s.ack(d, fields)
			return true
		case <-msg.Nacked():
			s.requeue(d, fields)
			return true
		case <-renew.C:
			s.extend(d, lease, fields)
		case <-ctx.Done():
			// An Ack given before the stop is kept: select picks at random
			// among ready cases, so ask again rather than requeue it.
			select {
			case <-msg.Acked():
				s.ack(d, fields)
			default:
				s.requeue(d, fields)
			}
			return false
		}
	}
}

// logFields names a delivery in a log line; the map watermill's logger
// takes is built only when a line is logged, not per message.
type logFields struct {
	queue, uuid string
	id          ringwal.ID
}

func (f logFields) log() wm.LogFields {
	return wm.LogFields{"queue": f.queue, "message_uuid": f.uuid, "ringwal_id": f.id}
}

// ack settles d as done. A failure is logged: the message is then
// delivered again (at least once).
func (s *Subscriber) ack(d ringwal.Delivery, fields logFields) {
	if err := s.e.Ack(d.Lease); err != nil && !errors.Is(err, ringwal.ErrClosed) {
		s.cfg.Logger.Error("ringwal ack failed: the message will be delivered again", err, fields.log())
	}
}

// extend renews d's lease. A failure is logged: the lease may run out, and
// then the message is delivered again (at least once).
func (s *Subscriber) extend(d ringwal.Delivery, lease time.Duration, fields logFields) {
	if err := s.e.Extend(d.Lease, lease); err != nil && !errors.Is(err, ringwal.ErrClosed) {
		s.cfg.Logger.Error("ringwal lease renewal failed", err, fields.log())
	}
}

// requeue puts d back to Pending now, recording no failure and no
// backoff (the delivery still counts toward the queue's MaxAttempts, as
// every delivery does). Requeue goes by ID, so the lease is checked first: if it has
// ended (it expired and the message may be someone else's now) nothing is
// done. A closed engine needs nothing: a leased message comes back Pending
// on the next Open.
func (s *Subscriber) requeue(d ringwal.Delivery, fields logFields) {
	if err := s.e.Extend(d.Lease, time.Second); err != nil {
		if !errors.Is(err, ringwal.ErrClosed) {
			s.cfg.Logger.Error("ringwal nack of a lease already ended", err, fields.log())
		}
		return
	}
	if err := s.e.Requeue(d.ID); err != nil && !errors.Is(err, ringwal.ErrClosed) {
		s.cfg.Logger.Error("ringwal requeue failed: the message comes back when its lease ends", err, fields.log())
	}
}

// Close stops every subscription, puts the messages they hold back to
// their queues, closes their channels and returns once their goroutines
// have ended. It leaves the engine open; a second Close returns nil.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.close()
	s.wg.Wait()
	return nil
}
