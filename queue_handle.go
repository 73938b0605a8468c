package ringwal

import (
	"context"
	"fmt"
)

// Queue is a handle on a named queue (Engine.Queue): its verbs are the
// engine's, applied to that queue. A handle is cheap; the queue it names
// is declared, with zero QueueOptions, on its first use if it is not
// declared yet. All methods are safe for concurrent use.
type Queue struct {
	e    *Engine
	name string
}

// Queue returns a handle on the queue called name ("" is the default
// queue). It declares nothing by itself, and allocates nothing once the
// queue is declared. Safe for concurrent use.
func (e *Engine) Queue(name string) *Queue {
	if name == "" {
		return &e.defaultQueue.handle
	}
	if v, ok := e.queues.byName.Load(name); ok {
		return &v.(*queue).handle
	}
	return &Queue{e: e, name: name}
}

// Name returns the queue's name.
func (q *Queue) Name() string { return q.name }

// resolve returns the queue, declaring it if needed, with its delivery
// machinery set up.
func (q *Queue) resolve() (*queue, error) {
	if err := q.e.errIfClosed(); err != nil {
		return nil, err
	}
	r, err := q.e.queueNamed(q.name, true)
	if err != nil {
		return nil, err
	}
	r.run()
	return r, nil
}

// route sets m's queue to this one; a message naming another queue is
// ErrInvalid.
func (q *Queue) route(m *Message) error {
	if m.Queue != "" && m.Queue != q.name {
		return invalidf("message for queue %q enqueued on queue %q", m.Queue, q.name)
	}
	m.Queue = q.name
	return nil
}

// Enqueue is Engine.Enqueue into this queue; m.Queue must be "" or the
// queue's name. A queue at its QueueOptions.MaxMessages makes it wait.
func (q *Queue) Enqueue(ctx context.Context, m Message) (ID, error) {
	if err := q.route(&m); err != nil {
		return 0, err
	}
	return q.e.Enqueue(ctx, m)
}

// TryEnqueue is Engine.TryEnqueue into this queue: ErrFull (naming the
// queue) when the queue is at its MaxMessages.
func (q *Queue) TryEnqueue(m Message) (ID, error) {
	if err := q.route(&m); err != nil {
		return 0, err
	}
	return q.e.TryEnqueue(m)
}

// EnqueueBatch is Engine.EnqueueBatch into this queue; each message's
// Queue must be "" or the queue's name.
func (q *Queue) EnqueueBatch(ctx context.Context, ms []Message) ([]ID, error) {
	routed := make([]Message, len(ms))
	for i := range ms {
		routed[i] = ms[i]
		if err := q.route(&routed[i]); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	return q.e.EnqueueBatch(ctx, routed)
}

// Dequeue leases the next message of this queue, as Engine.Dequeue does
// for the default queue (a ctx that has already ended gets its error, and
// nothing is taken).
func (q *Queue) Dequeue(ctx context.Context) (Delivery, error) {
	r, err := q.resolve()
	if err != nil {
		return Delivery{}, err
	}
	return q.e.dequeue(ctx, r.run())
}

// TryDequeue is Engine.TryDequeue on this queue.
func (q *Queue) TryDequeue() (Delivery, bool) {
	r, err := q.resolve()
	if err != nil {
		return Delivery{}, false
	}
	return q.e.tryDequeue(r.run())
}

// DequeueBatch is Engine.DequeueBatch on this queue (a ctx that has
// already ended gets its error, and nothing is taken).
func (q *Queue) DequeueBatch(ctx context.Context, max int) ([]Delivery, error) {
	r, err := q.resolve()
	if err != nil {
		return nil, err
	}
	return q.e.dequeueBatch(ctx, r.run(), max)
}

// Run is Engine.Run on this queue: workers handle its messages only.
func (q *Queue) Run(ctx context.Context, workers int, h Handler) error {
	r, err := q.resolve()
	if err != nil {
		return err
	}
	return q.e.run(ctx, r.run(), workers, h)
}
