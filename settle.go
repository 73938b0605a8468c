package ringwal

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ringwal/ringwal/internal/wal"
)

// acquireLease owns the record a lease names, waiting out a concurrent
// owner (an Extend of this very lease, a reader).
// It returns the record's slot too.
func (e *Engine) acquireLease(l Lease) (uint32, *rec, error) {
	rf, ours := e.leaseKey.ref(l)
	r, err := e.ownLeased(rf, ours)
	return rf.slot, r, err
}

// ownLeased is acquireLease of a lease already decoded (leaseKey.ref).
func (e *Engine) ownLeased(rf ref, ours bool) (*rec, error) {
	if err := e.errIfClosed(); err != nil {
		return nil, err
	}
	r := e.slab.lookup(rf.slot)
	if !ours || r == nil || rf.gen == 0 || !r.own(rf.gen, stLeased) {
		return nil, ErrStaleLease
	}
	return r, nil
}

// Ack settles a delivery as done: the message is forgotten. Ack returns
// once its record is as durable as Options.Durability promises: an acked
// message is not delivered again after a killed process (Write, Fsync) or
// a power loss (Fsync only). A stale lease gets ErrStaleLease.
//
// If the ack cannot be logged, as on a full disk, the message is pending
// again with its attempt counted, and the error is returned. An ack that
// did not reach the log has not happened, and a later checkpoint must not
// drop the message. Safe for concurrent use. A Run worker acks without
// this wait; see Run.
func (e *Engine) Ack(l Lease) error {
	return e.ack(l, true)
}

// ackLater is a Run worker's Ack: the same settlement, but the ack record
// is appended without waiting for it (logLater): it is durable with the
// next group commit, and a crash before that redelivers the message. An
// ordered key's ack waits all the same: its next message must not go out
// while this one could still come back.
func (e *Engine) ackLater(l Lease) error {
	return e.ack(l, false)
}

func (e *Engine) ack(l Lease, wait bool) error {
	_, r, err := e.acquireLease(l)
	if err != nil {
		return err
	}
	now := e.now()
	if e.log != nil {
		return e.ackLogged(r, now, wait)
	}
	id, ks := e.settleDone(r, nil)
	e.keyLeaseEnded(ks, now)
	e.keyGone(ks, id, now)
	return nil
}

// ackLogged is ack with a log: the ack record, and the message put back
// if it cannot be written. It is apart so that a memory-only ack does not
// zero the put-back copy. As every mutation, it logs the ack's record
// while it owns the record. Then it makes the ack visible by freeing the
// record, and then it waits. So a checkpoint that sees the message gone
// finds its ack in the log at or after the snapshot's cut, or fails if
// that write does.
func (e *Engine) ackLogged(r *rec, now int64, wait bool) error {
	id, ks := r.id.Load(), r.ks
	rec := ackRecord(id, now)
	var c wal.Commit
	var err error
	if wait || (ks != nil && ks.policy.Ordered) {
		c, err = e.log.AppendCommit(&rec)
	} else {
		err = e.logLater(&rec)
	}
	var back unacked
	e.settleDone(r, &back)
	if err == nil {
		err = c.Wait()
	}
	if err != nil {
		e.unack(id, &back, ks)
		e.keyLeaseEnded(ks, now) // the lease is over; the message stays
		return fmt.Errorf("ringwal: ack %d: %w", id, mapWALError(err))
	}
	e.ackDurable(&back)
	// After the ack is logged: an ordered key's next message must not go
	// out while this one could still come back.
	e.keyLeaseEnded(ks, now)
	e.keyGone(ks, id, now)
	return nil
}

// settleDone settles an owned, leased record as acked (breaker, handling
// latency) and frees it. It returns the message's ID and key state, and
// fills back (when not nil) with what it takes to put the message back
// should the ack not reach the log. With back set, the message stays
// counted in its queue until the log answers (ackDurable or unack): a
// DeleteQueue meanwhile must not find the queue empty, nor its cap a
// free place, while the message may yet come back.
func (e *Engine) settleDone(r *rec, back *unacked) (uint64, *keyState) {
	id, ks := r.id.Load(), r.ks
	if n := r.queue; n != 0 {
		e.queues.at(n).acked.Add(1)
	}
	if r.key != "" {
		e.breakers.Done(r.ticket, true)
	}
	e.observeHandling(r)
	if back != nil {
		r.keepFor(back)
		back.leaving = e.uniqueLeaving(r, id)
		e.freeRecord(r)
	} else {
		e.release(r)
	}
	return id, ks
}

// ackDurable ends the queue count of a message whose ack the log took
// (settleDone kept it), and its unique DedupID's entry.
func (e *Engine) ackDurable(back *unacked) {
	if back.queue != 0 {
		e.queues.at(back.queue).leave()
	}
	if back.leaving != nil {
		e.dedup.left(back.more.dedupID, back.leaving)
	}
}

// unack puts back a message whose ack record could not be logged, pending
// now, as a requeue would. It logs the records that rebuild the message,
// a snapshot's, before the message is visible again. The reason: a
// checkpoint that ran while the ack was on its way saw the message gone.
// It may have let the log drop the enqueue record, so the log alone must
// be able to bring the message back. If that write fails too (the disk
// still refuses), the message is in memory only until a checkpoint
// succeeds, and the error is logged.
func (e *Engine) unack(id uint64, u *unacked, ks *keyState) {
	slot, ok := e.slab.claimNear(id)
	if !ok {
		// The log still holds it: a restart brings it back.
		e.opts.Logger.Error("ringwal: no slot to put back a message whose ack failed; it returns at the next Open", "id", id)
		if u.leaving != nil {
			e.dedup.left(u.more.dedupID, u.leaving)
		}
		return
	}
	r := e.slab.at(slot)
	m := u.message()
	r.fill(&m, u.queue, u.enqueuedAt, u.attempts, u.crashes, u.fails, ks)
	e.uniqueBack(r, id)
	e.ctr.added.Add(1)
	now := e.now()
	r.at = now // as makeReady sets it: the requeue record says so
	var lr liveRecords
	e.liveRecordsOf(r, stPending, &lr, now)
	recs := make([]wal.Record, 0, 4)
	_ = lr.emit(func(rec *wal.Record) error { recs = append(recs, *rec); return nil })
	c, err := e.log.AppendBatchCommit(recs)
	e.makeReady(slot, r, now)
	if u.leaving != nil {
		// Pending again, its DedupID's entry its own: a repeat waiting
		// on the ack judges it now.
		e.dedup.stayed(u.more.dedupID, u.leaving)
	}
	if err == nil {
		err = c.Wait()
	}
	if err != nil {
		e.opts.Logger.Error("ringwal: could not log a message put back after its ack failed; it is kept in memory until a checkpoint succeeds", "id", id, "err", err)
	}
}

// AckBatch acks every lease in ls as Ack would, one after the other, but
// waits for the log once. The ack records go into the log as one batch:
// after a crash either all of them are in it or none. AckBatch returns
// once that batch is as durable as Options.Durability promises. It is Ack
// for consumers that take messages with DequeueBatch.
//
// A stale lease does not stop the others: every lease that is still valid
// is acked, and the error then wraps ErrStaleLease and says how many of
// the leases were stale and the indexes in ls of the first eight. A lease
// that appears twice in ls is acked once; its second appearance is stale.
// After Close, AckBatch acks nothing and returns ErrClosed (also for an
// empty ls, which otherwise returns nil). If Close starts while AckBatch
// runs, the leases not yet settled are left to Close (which gives them
// back as pending) and the error wraps ErrClosed. If the batch cannot be
// logged, its messages are pending again, as for Ack, and the error says
// so. Safe for concurrent use; no allocation per lease.
func (e *Engine) AckBatch(ls []Lease) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	if len(ls) == 0 {
		return nil
	}
	b := ackBatches.Get().(*ackBatch)
	b.recs, b.done = b.recs[:0], b.done[:0]
	defer putAckBatch(b)
	now := e.now()
	var stale staleLeases
	closedAt := -1
	for i, l := range ls {
		rf, ours := e.leaseKey.ref(l)
		if b.holds(e.slab.lookup(rf.slot)) {
			stale.add(i) // a repeat of a lease acked above: ours already
			continue
		}
		r, err := e.ownLeased(rf, ours)
		if err != nil {
			if errors.Is(err, ErrStaleLease) {
				stale.add(i)
				continue
			}
			closedAt = i // ErrClosed: Close has taken over the rest
			break
		}
		b.done = append(b.done, ackedLease{r: r, id: r.id.Load(), ks: r.ks})
		if e.log != nil {
			b.recs = append(b.recs, ackRecord(r.id.Load(), now))
		}
	}
	// Logged while the records are ours, then freed, then waited for (see
	// ackLogged).
	var c wal.Commit
	var logErr error
	if len(b.recs) > 0 {
		c, logErr = e.log.AppendBatchCommit(b.recs)
	}
	for i := range b.done {
		d := &b.done[i]
		back := &d.back
		if e.log == nil {
			back = nil
		}
		e.settleDone(d.r, back)
		d.r = nil
	}
	if logErr == nil {
		logErr = c.Wait()
	}
	if logErr != nil {
		logErr = fmt.Errorf("ringwal: ack batch of %d: %w", len(b.recs), mapWALError(logErr))
	}
	for i := range b.done {
		d := &b.done[i]
		if logErr != nil {
			e.unack(d.id, &d.back, d.ks)
			e.keyLeaseEnded(d.ks, now)
			continue
		}
		e.ackDurable(&d.back)
		e.keyLeaseEnded(d.ks, now)
		e.keyGone(d.ks, d.id, now)
	}
	if closedAt < 0 && stale.n == 0 {
		return logErr
	}
	var errs []error
	if logErr != nil {
		errs = append(errs, logErr)
	}
	if closedAt >= 0 {
		errs = append(errs, fmt.Errorf("ringwal: ack batch: closed at lease %d of %d: %w", closedAt, len(ls), ErrClosed))
	}
	if stale.n > 0 {
		errs = append(errs, stale.err(len(ls)))
	}
	return errors.Join(errs...)
}

// ackBatch is AckBatch's scratch: the records to log, and what each acked
// lease needs once the log has answered.
type ackBatch struct {
	recs []wal.Record
	done []ackedLease
}

type ackedLease struct {
	r    *rec // owned until settled
	id   uint64
	ks   *keyState
	back unacked
}

// holds reports whether r is a record this batch owns already. It looks
// only when r is busy (owned by someone), so a batch without repeats pays
// one load per lease.
func (b *ackBatch) holds(r *rec) bool {
	if r == nil || r.load().state() != stBusy {
		return false
	}
	for i := range b.done {
		if b.done[i].r == r {
			return true
		}
	}
	return false
}

// ackBatches holds AckBatch's scratch between calls.
var ackBatches = sync.Pool{New: func() any { return new(ackBatch) }}

// putAckBatch returns scratch to ackBatches unless a huge batch grew it;
// it drops the references it holds first.
func putAckBatch(b *ackBatch) {
	if cap(b.done) > 1<<12 {
		return
	}
	clear(b.recs)
	clear(b.done)
	ackBatches.Put(b)
}

// staleLeases counts AckBatch's stale leases and keeps the first indexes.
type staleLeases struct {
	n     int
	first [8]int
}

func (s *staleLeases) add(i int) {
	if s.n < len(s.first) {
		s.first[s.n] = i
	}
	s.n++
}

func (s *staleLeases) err(of int) error {
	idx := s.first[:min(s.n, len(s.first))]
	more := ""
	if s.n > len(idx) {
		more = ", ..."
	}
	return fmt.Errorf("ringwal: ack batch: %d of %d leases stale (indexes %s%s): %w",
		s.n, of, strings.Trim(fmt.Sprint(idx), "[]"), more, ErrStaleLease)
}

// release frees a busy record's slot for reuse: its message leaves the
// slab (acked, cancelled, dead-lettered), and with it a unique DedupID's
// claim (unique.go).
func (e *Engine) release(r *rec) {
	q := e.queueOf(r)
	e.free(r)
	q.leave()
}

// free is release but for the queue's count, which the caller ends.
func (e *Engine) free(r *rec) {
	e.uniqueGone(r, r.id.Load())
	e.freeRecord(r)
}

// freeRecord is free but for a unique DedupID's entry, which the caller
// ends (uniqueGone, or uniqueLeaving and the log's answer).
func (e *Engine) freeRecord(r *rec) {
	r.free(e.counts)
	e.ctr.freed.Add(1)
	e.space.signal() // after freed: a woken WaitIdle's Stats count it (waitidle.go)
}

// Nack settles a delivery as failed with cause. The cause is classified
// and counted against the key's breaker; only Transient, Timeout,
// RateLimited and Resource count. The message is retried after the
// category policy's backoff, or exactly after classify.After's delay. It
// is dead-lettered once its attempts or the policy's MaxElapsed are spent,
// as Expired if its TTL passed during the delivery. A nil cause is
// recorded as "nack without a cause", Unknown to the default classifier.
// Like Ack, it returns once its record is as durable as the mode promises;
// a stale lease gets ErrStaleLease. Safe for concurrent use.
func (e *Engine) Nack(l Lease, cause error) error {
	slot, r, err := e.acquireLease(l)
	if err != nil {
		return err
	}
	if cause == nil {
		cause = errors.New("nack without a cause")
	}
	cat := e.opts.Classifier.Classify(cause)
	err = e.fail(slot, r, cat, cause, e.now(), true)
	// Counted once the message is out of Leased, as every lease's end is
	// (Stats derives Dequeued from both: never ahead).
	e.ctr.nacked.Add(1)
	return err
}

// Extend makes the lease end d from now (d > 0, else ErrInvalid). It does
// not wait for the log: a lease is never durable (after a crash the
// message comes back pending). A stale lease gets ErrStaleLease. Safe for
// concurrent use.
func (e *Engine) Extend(l Lease, d time.Duration) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	if d <= 0 {
		return invalidf("Extend by %v: must be positive", d)
	}
	rf, ours := e.leaseKey.ref(l)
	r, err := e.ownLeased(rf, ours)
	if err != nil {
		return err
	}
	now := e.preciseNow() // a short Extend must not end early because the cache lags
	expiry := addSat(now, int64(d))
	r.at = expiry
	id := r.id.Load()
	if sampled(id) {
		r.setExtended(true) // its start no longer follows from its end
	}
	// Logged while the record is ours, before whatever settles the lease.
	rec := extendRecord(id, now, expiry)
	err = e.appendRecord(&rec, false)
	r.keep(e.counts, stLeased) // the lease stays valid
	e.hk.schedule(expiry, entryFor(rf, id, timerLease))
	return err
}
