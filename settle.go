package ringwal

import (
	"errors"
	"fmt"
	"time"

	"github.com/ringwal/ringwal/sched"
)

// acquireLease owns the record a lease names, waiting out a concurrent
// owner (an Extend of this very lease, a reader).
func (e *Engine) acquireLease(l Lease) (*rec, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	r := e.slab.lookup(l.slot)
	if r == nil || l.gen == 0 || !r.own(l.gen, stLeased) {
		return nil, ErrStaleLease
	}
	return r, nil
}

// Ack settles a delivery as done: the message is forgotten. Ack returns
// once its record is as durable as Options.Durability promises: an acked
// message is not delivered again after a killed process (Write, Fsync) or
// a power loss (Fsync only). A stale lease gets ErrStaleLease. If the ack
// cannot be logged (a full disk), the message is pending again, its
// attempt counted, and the error is returned: an ack that did not reach
// the log has not happened, and a later checkpoint must not drop the
// message. Safe for concurrent use.
func (e *Engine) Ack(l Lease) error {
	r, err := e.acquireLease(l)
	if err != nil {
		return err
	}
	now := e.now()
	id := r.id.Load()
	ks := r.ks
	if r.key != "" {
		e.breakers.Done(r.ticket, true)
	}
	e.observeHandling(r)
	if e.log == nil {
		e.release(r)
		e.keyLeaseEnded(ks, now)
		e.keyGone(ks, id, now)
		return nil
	}
	// The slot may be reused as soon as it is released: keep what it takes
	// to put the message back should the ack not reach the log.
	back := unacked{msg: r.message(), enqueuedAt: r.enqueuedAt,
		attempts: r.attempts(), crashes: r.crashes.Load(), hist: r.hist.Load()}
	e.release(r)
	rec := ackRecord(id, now)
	if err := e.log.Append(&rec); err != nil {
		e.unack(id, &back, ks)
		e.keyLeaseEnded(ks, now) // the lease is over; the message stays
		return fmt.Errorf("ringwal: ack %d: %w", id, mapWALError(err))
	}
	// After the ack is logged: an ordered key's next message must not go
	// out while this one could still come back.
	e.keyLeaseEnded(ks, now)
	e.keyGone(ks, id, now)
	return nil
}

// unacked is a message whose ack is on its way to the log.
type unacked struct {
	msg        Message
	enqueuedAt int64
	attempts   uint32
	crashes    int32
	hist       *history
}

// unack puts back a message whose ack record could not be logged, pending
// now, as a requeue would (the log still has it live, so a restart would
// bring it back too).
func (e *Engine) unack(id uint64, u *unacked, ks *keyState) {
	slot, ok := e.slab.claimNear(id)
	if !ok {
		// The log still holds it: a restart brings it back.
		e.opts.Logger.Error("ringwal: no slot to put back a message whose ack failed; it returns at the next Open", "id", id)
		return
	}
	r := e.slab.at(slot)
	r.fill(&u.msg, u.enqueuedAt, u.attempts, u.crashes, u.hist, ks)
	e.ctr.added.Add(1)
	e.makeReady(slot, r, e.now())
}

// release frees a busy record's slot for reuse.
func (e *Engine) release(r *rec) {
	r.free()
	e.ctr.freed.Add(1)
	e.waiting.signalSpace()
}

// Nack settles a delivery as failed with cause: the cause is classified,
// counted against the key's breaker (Transient, Timeout, RateLimited and
// Resource only), and the message is retried after the category policy's
// backoff (or exactly after classify.After's delay), or dead-lettered once
// its attempts or the policy's MaxElapsed are spent (as Expired if its TTL
// passed during the delivery). A nil cause is recorded as "nack without a
// cause" (Unknown to the default classifier). Like Ack, it returns once its
// record is as durable as the mode promises; a stale lease gets
// ErrStaleLease. Safe for concurrent use.
func (e *Engine) Nack(l Lease, cause error) error {
	r, err := e.acquireLease(l)
	if err != nil {
		return err
	}
	if cause == nil {
		cause = errors.New("nack without a cause")
	}
	e.ctr.nacked.Add(1)
	cat := e.opts.Classifier.Classify(cause)
	return e.fail(l.slot, r, cat, cause, e.now(), true)
}

// Extend makes the lease end d from now (d > 0, else ErrInvalid). It does
// not wait for the log: a lease is never durable (after a crash the
// message comes back pending). A stale lease gets ErrStaleLease. Safe for
// concurrent use.
func (e *Engine) Extend(l Lease, d time.Duration) error {
	if err := e.usable(); err != nil {
		return err
	}
	if d <= 0 {
		return invalidf("Extend by %v: must be positive", d)
	}
	r, err := e.acquireLease(l)
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
	r.keep(stLeased) // the lease stays valid
	e.hk.schedule(expiry, sched.Entry{ID: uint64(l.slot), Gen: l.gen, Kind: timerLease})
	return err
}
