package ringwal

import (
	"errors"
	"fmt"

	"github.com/ringwal/ringwal/internal/wal"
)

// This file owns a queue's end: DeleteQueue, its replay, and when a
// deleted queue's number may name another queue.
//
// A number names one queue in the log: records written before a deletion
// still name the deleted queue by it. Given to a new queue at once, a
// replay from a snapshot taken before the deletion would meet the old
// queue's records and the new queue's under one number. So a deleted
// queue's number is retired. It is free again once a checkpoint that
// began after the deletion has completed. Replay then starts from that
// snapshot or a newer one, which holds nothing of the deleted queue. The
// log after it holds at most the deletion record itself, which replay
// then ignores; that record was appended before the checkpoint, but after
// the batch it cut at.
// A replay of a log that holds both queues under one number is right all
// the same: the deletion comes first, and a declaration of a deleted
// queue's number makes a new queue. A memory-only engine has no log: a
// number is free as soon as its queue is deleted.
//
// Numbers are given in order and given again only once all 65,535 have
// been used; a declaration that then finds only retired numbers runs the
// checkpoint that frees them.

// errNumbersRetired: every queue number is taken, some only by deleted
// queues; a checkpoint frees those.
var errNumbersRetired = errors.New("ringwal: every queue number is taken, some by deleted queues")

// DeleteQueue deletes the named queue: its declaration, options, pause
// and counts go, and a later message to that name declares it afresh.
// It refuses, with an error wrapping ErrInvalid that says how many,
// while the queue holds live messages or dead letters (cancel, drain or
// purge them first); the default queue cannot be deleted (ErrInvalid),
// an undeclared name is ErrNotFound. Its consumers (Dequeue, Run) return
// an error wrapping ErrNotFound. It is logged and survives a restart.
// Safe for concurrent use.
func (e *Engine) DeleteQueue(name string) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	if name == "" {
		return invalidf("the default queue cannot be deleted")
	}
	// No Redrive moves a dead letter back into a queue while it is checked.
	e.redriveMu.Lock()
	defer e.redriveMu.Unlock()
	e.deadLeaveMu.Lock()
	defer e.deadLeaveMu.Unlock()
	t := &e.queues
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.byName.Load(name)
	if !ok {
		return notFoundQueue(name)
	}
	q := v.(*queue)
	q.state.Store(queueDeleting)
	live, dead := q.live.Load(), e.dead.QueueLen(name)
	if live != 0 || dead != 0 {
		q.state.Store(queueDeclared)
		return invalidf("queue %q holds %d live messages and %d dead letters", name, live, dead)
	}
	if e.log != nil {
		rec := wal.Record{Kind: wal.KindQueueDelete, Queue: uint32(q.num), Key: name, Time: e.preciseNow()}
		if err := e.log.Append(&rec); err != nil {
			q.state.Store(queueDeclared)
			return fmt.Errorf("ringwal: deleting queue %q: %w", name, mapWALError(err))
		}
	}
	e.forget(q)
	return nil
}

// forget removes a deleted queue from the registry, retires its number
// and wakes its sleepers, which find it deleted; t.mu held.
func (e *Engine) forget(q *queue) {
	t := &e.queues
	q.state.Store(queueDeleted)
	t.rebind(q, q.eff.Load().topics, nil)
	g := &t.gone
	g.Enqueued += q.enqueued.Load()
	g.Acked += q.acked.Load()
	g.DeadLettered += q.deadLettered.Load()
	t.byName.Delete(q.name)
	t.n--
	if e.log == nil {
		t.free(q.num)
	} else {
		t.retired = append(t.retired, q.num)
	}
	if rt := q.rt.Load(); rt != nil {
		rt.ready.signal()
	}
	q.space.signal()
}

// applyQueueDelete replays a deletion. One the snapshot already holds (it
// began after DeleteQueue appended the record: no such queue, or another
// queue by now under the number) changes nothing.
func (e *Engine) applyQueueDelete(rs *replayState, r *wal.Record) {
	if r.Queue == 0 {
		if rs.err == nil {
			rs.err = fmt.Errorf("%w: a deletion of the default queue", wal.ErrCorrupt)
		}
		return
	}
	e.queues.mu.Lock()
	defer e.queues.mu.Unlock()
	q := e.queues.at(uint16(r.Queue))
	if q == nil || q.name != r.Key || q.state.Load() == queueDeleted {
		return
	}
	e.forget(q)
}

// number returns a number no queue has, the one after the last given
// first; t.mu held.
func (t *queueTable) number() (uint16, bool) {
	num := t.next + 1
	for tries := 0; t.at(num) != nil || num == 0; tries++ {
		if tries > wal.MaxQueue {
			return 0, false
		}
		num++
	}
	return num, true
}

// free makes a deleted queue's number available; t.mu held.
func (t *queueTable) free(num uint16) {
	if q := t.at(num); q != nil && q.state.Load() == queueDeleted {
		t.chunks[num>>8].Load()[num&0xff].Store(nil)
	}
}

// takeRetired returns the numbers retired so far, for a checkpoint about
// to begin to free once it completes (releaseRetired).
func (t *queueTable) takeRetired() []uint16 {
	t.mu.Lock()
	defer t.mu.Unlock()
	nums := t.retired
	t.retired = nil
	t.releasing += len(nums)
	return nums
}

// releaseRetired frees nums once the checkpoint that took them completed
// (ok), or keeps them retired for the next one.
func (t *queueTable) releaseRetired(nums []uint16, ok bool) {
	if len(nums) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releasing -= len(nums)
	if !ok {
		t.retired = append(t.retired, nums...)
		return
	}
	for _, num := range nums {
		t.free(num)
	}
}
