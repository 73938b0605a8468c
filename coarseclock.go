package ringwal

import (
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/internal/pad"
)

// coarseTick is the resolution of the engine's cached clock.
const coarseTick = time.Millisecond

// coarseClock caches the wall clock at millisecond resolution. Reading the
// clock costs 25-50 ns on the virtual machines this runs on, and the hot
// path needs a timestamp at enqueue, dequeue and ack: one atomic load
// instead keeps that path within a small multiple of a channel hand-off.
// Timestamps are usually at most coarseTick behind, but more when the
// ticker goroutine waits to be scheduled on a busy machine, so due times
// that a caller sets (Delay, TTL, a nack's backoff, Extend) count from the
// clock itself, and only lease expiries, set on the hot path, count from
// the cache with a margin (Engine.leaseSlop).
//
// Its goroutine (the engine's clock ticker) is stopped by Close.
type coarseClock struct {
	_    pad.Line
	ns   atomic.Int64
	_    [pad.CacheLine - 8]byte
	stop chan struct{}
	done chan struct{}
}

func newCoarseClock() *coarseClock {
	c := &coarseClock{stop: make(chan struct{}), done: make(chan struct{})}
	c.ns.Store(time.Now().UnixNano())
	go c.run()
	return c
}

func (c *coarseClock) run() {
	defer close(c.done)
	t := time.NewTicker(coarseTick)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			_ = now
			c.ns.Store(time.Now().UnixNano())
		case <-c.stop:
			return
		}
	}
}

func (c *coarseClock) close() {
	close(c.stop)
	<-c.done
}
