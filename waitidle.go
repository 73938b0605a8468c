package ringwal

import (
	"context"
	"sync/atomic"
)

// idleWaiters lets WaitIdle sleep until a live message leaves the slab.
// Whoever frees a counted record already signals the engine's space
// sleepers, after its counters moved. So a woken WaitIdle's caller
// reading Stats finds the message counted as gone. The freers are release
// in settle.go (ack, cancel, dead-lettering, expiry), unclaim in
// enqueue.go, and a redrive that could not be logged in ops.go. A waiting
// WaitIdle counts itself among those sleepers. That sends the signal down
// its slow path (sleepers.signal), where it closes this channel. With
// nobody waiting, the verbs pay nothing they did not pay before.
//
// A waiter counts itself, arms the channel (stores it, or finds one
// armed), then reads the counts; a freer moves the counts, then loads the
// sleeper count and, if it is not zero, takes the channel and closes it.
// Sequentially consistent atomics make one of them see the other: either
// the waiter reads the count already down, or the freer finds it waiting
// and wakes it. Every waiter shares one channel, so one close wakes them
// all; each re-arms before it reads again.
type idleWaiters struct {
	c atomic.Pointer[chan struct{}]
}

// arm returns the channel the next wake closes.
func (w *idleWaiters) arm() <-chan struct{} {
	for {
		if p := w.c.Load(); p != nil {
			return *p
		}
		c := make(chan struct{})
		if w.c.CompareAndSwap(nil, &c) {
			return c
		}
	}
}

// wakeAll wakes every waiter: called, through the engine's space
// sleepers (sleepers.signal), by a record that stopped being counted
// while a WaitIdle waits.
func (w *idleWaiters) wakeAll() {
	if p := w.c.Swap(nil); p != nil {
		close(*p)
	}
}

// idle reports whether no record is counted in any class: nothing
// Pending (committing and waiting on its key included), Delayed, Leased
// or Held. The counts must be complete (liveCounts.start).
func (c *liveCounts) idle() bool {
	n := c.byClass()
	for k := 1; k < numClasses; k++ {
		if n[k] != 0 {
			return false
		}
	}
	return true
}

// WaitIdle blocks until no message is Pending, Delayed or Leased, and
// returns nil; it returns ctx.Err() if ctx ends first and ErrClosed if the
// engine closes (or is closed) first.
//
// Held messages, behind an open breaker, are live work that will be
// delivered or dead-lettered, so WaitIdle waits for them too. It also
// waits for pending messages that wait on their key: an ordered key's
// queue, an in-flight or rate cap, a paused key. It waits for the
// messages of a paused queue or of a paused engine too. Those never end
// while the pause lasts, so give WaitIdle a ctx with a deadline when
// pauses may be in force. Dead letters are not work: a store full of
// them is idle.
//
// Idle is a moment: a message enqueued after WaitIdle returned is not
// waited for, and one enqueued concurrently may or may not be. While it
// waits, each counted message that leaves closes the channel it sleeps
// on; an ack, a cancel, a dead-lettering and an expiry all leave. Woken,
// it reads the engine's kept counts and sleeps again while work remains.
// Those are the counts Stats reports; the first call starts them as
// Stats does, at O(MaxMessages) once. It wakes at most once per message
// that leaves or is dequeued, as a dequeue frees room in a tier and
// signals the same sleepers. It does not wake while nothing moves. Safe
// for concurrent use; any number may wait.
func (e *Engine) WaitIdle(ctx context.Context) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	e.counts.start(e.slab)
	// Counted among the space's sleepers while it waits, so that each
	// freed record's signal wakes it; the signal reads that count after
	// the record left the counts. Arm comes before the idle check, so a
	// record freed after the check closes the channel it waits on.
	e.space.n.Add(1)
	defer e.space.n.Add(-1)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		woken := e.ctr.idleWait.arm()
		// Close's done is checked before idleness: a closed engine has
		// given its leases back as pending, and is not idle but closed.
		select {
		case <-e.done:
			return ErrClosed
		default:
		}
		if e.counts.idle() {
			return nil
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return ctx.Err()
		case <-e.done:
			return ErrClosed
		}
	}
}
