package fleet

import (
	"context"
	"sync"

	"github.com/ringwal/ringwal"
)

// consumer is one Run (or Queue(name).Run): it runs on every shard that
// serves here while it lasts, starting on a shard when it is won and
// stopping before it is handed over.
type consumer struct {
	queue   string
	named   bool // Queue(name).Run rather than Run
	workers int
	h       ringwal.Handler
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // its runs on shards
}

func (c *consumer) stop() { c.cancel() }

// startRun starts c on s, which serves. m.mu held. The run stops when c
// ends or s starts leaving; s.runs lets the releaser wait for it (and so
// for its handlers) before the engine closes.
func (s *shard) startRun(c *consumer) {
	if c.ctx.Err() != nil {
		return
	}
	rctx, cancel := context.WithCancel(c.ctx)
	stopWithShard := context.AfterFunc(s.ctx, cancel)
	s.runs.Add(1)
	c.wg.Add(1)
	eng := s.eng
	go func() {
		defer c.wg.Done()
		defer s.runs.Done()
		defer stopWithShard()
		defer cancel()
		var err error
		if c.named {
			err = eng.Queue(c.queue).Run(rctx, c.workers, c.h)
		} else {
			err = eng.Run(rctx, c.workers, c.h)
		}
		if err != nil && rctx.Err() == nil {
			s.m.o.Logger.Warn("fleet: a shard's run ended", "shard", s.n, "err", err)
		}
	}()
}

// Run processes the default queue of every shard serving here with
// workers goroutines per shard calling h, as ringwal.Engine.Run does,
// until ctx ends or the member closes; it follows ownership: a shard won
// later gets its workers, a shard handed over loses them first (its
// handlers in progress finish and settle before its engine closes). It
// returns nil then, or an error wrapping ErrInvalid for bad arguments and
// ErrClosed on a closed member.
func (m *Member) Run(ctx context.Context, workers int, h ringwal.Handler) error {
	return m.run(ctx, &consumer{workers: workers, h: h})
}

func (m *Member) run(ctx context.Context, c *consumer) error {
	switch {
	case ctx == nil:
		return invalidf("Run: nil ctx")
	case c.workers < 1 || c.workers > 1<<16:
		return invalidf("Run: workers %d outside 1 to 65536", c.workers)
	case c.h == nil:
		return invalidf("Run: nil handler")
	}
	c.ctx, c.cancel = context.WithCancel(ctx)
	defer c.cancel()
	m.mu.Lock()
	if m.isClosing() {
		m.mu.Unlock()
		return ErrClosed
	}
	m.consumers[c] = struct{}{}
	for _, s := range m.local {
		if s.state.Load() == shardServing {
			s.startRun(c)
		}
	}
	m.mu.Unlock()
	<-c.ctx.Done()
	m.mu.Lock()
	delete(m.consumers, c)
	m.mu.Unlock()
	c.wg.Wait()
	return nil
}

// Queue is a named queue across the fleet: what it enqueues carries its
// name, and its Run consumes that queue on every shard serving here.
type Queue struct {
	m    *Member
	name string
}

// Queue returns the fleet's queue name; "" is the default queue. Each
// shard declares it, with zero QueueOptions (or those of
// Options.Engine.Queues), when a message first names it there.
func (m *Member) Queue(name string) *Queue { return &Queue{m: m, name: name} }

// Name is the queue's name.
func (q *Queue) Name() string { return q.name }

// Enqueue is Member.Enqueue into this queue.
func (q *Queue) Enqueue(ctx context.Context, msg ringwal.Message) (ID, error) {
	msg.Queue = q.name
	return q.m.Enqueue(ctx, msg)
}

// EnqueueBatch is Member.EnqueueBatch into this queue.
func (q *Queue) EnqueueBatch(ctx context.Context, msgs []ringwal.Message) ([]ID, error) {
	cp := make([]ringwal.Message, len(msgs))
	for i, msg := range msgs {
		msg.Queue = q.name
		cp[i] = msg
	}
	return q.m.EnqueueBatch(ctx, cp)
}

// Run is Member.Run over this queue.
func (q *Queue) Run(ctx context.Context, workers int, h ringwal.Handler) error {
	return q.m.run(ctx, &consumer{queue: q.name, named: true, workers: workers, h: h})
}
