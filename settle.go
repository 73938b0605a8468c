package ringwal

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/sched"
	"github.com/ringwal/ringwal/wal"
)

// acquireLease moves the record a lease names from Leased to stBusy.
func (e *Engine) acquireLease(l Lease) (*rec, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	r := e.slab.lookup(l.slot)
	if r == nil || l.gen == 0 {
		return nil, ErrStaleLease
	}
	for {
		w := r.word.Load()
		if wordGen(w) != l.gen {
			return nil, ErrStaleLease
		}
		switch wordState(w) {
		case stLeased:
			if r.word.CompareAndSwap(w, withState(w, stBusy)) {
				return r, nil
			}
		case stBusy: // an Extend of this very lease; wait it out
		default:
			return nil, ErrStaleLease
		}
	}
}

// Ack settles a delivery as done: the message is forgotten. Ack returns
// once its record is as durable as Options.Durability promises: an acked
// message is not delivered again after a killed process (Write, Fsync) or
// a power loss (Fsync only). A stale lease gets ErrStaleLease. Safe for
// concurrent use.
func (e *Engine) Ack(l Lease) error {
	r, err := e.acquireLease(l)
	if err != nil {
		return err
	}
	now := e.now()
	id := r.id.Load()
	if r.msg.Key != "" {
		e.breakers.Done(r.ticket, true)
	}
	if sampled(id) {
		e.metrics.observeHandling(e.preciseNow() - r.leasedAt.Load())
	}
	e.release(r)
	if e.log != nil {
		rec := wal.Record{Kind: wal.KindAck, ID: id, Time: now}
		if err := e.log.Append(&rec); err != nil {
			return fmt.Errorf("ringwal: ack %d: %w", id, mapWALError(err))
		}
	}
	return nil
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

// fail handles a failed delivery of a busy, formerly leased record.
func (e *Engine) fail(slot uint32, r *rec, cat classify.Category, cause error, now int64, wait bool) error {
	if r.msg.Key != "" {
		e.settleBreaker(r, cat)
	}
	if sampled(r.id.Load()) {
		e.metrics.observeHandling(e.preciseNow() - r.leasedAt.Load())
	}
	text := cause.Error()
	r.hist.Store(r.hist.Load().with(dlq.Failure{At: time.Unix(0, now), Category: cat, Error: text}))
	r.crashes.Store(0)
	attempts := int(r.attempts())
	p := e.categoryPolicy(cat, r.msg.MaxAttempts)
	if !p.ShouldRetry(attempts, time.Duration(now-r.enqueuedAt)) {
		return e.deadLetter(slot, r, cat, text, now, wait)
	}
	if r.expired(now) {
		// The TTL ended during this delivery (its timer found the message
		// leased and left it to this failure): no retry may go out.
		return e.expire(slot, r, now, wait)
	}
	delay := p.Delay(cause, attempts, time.Duration(r.prevDelay.Load()))
	r.prevDelay.Store(int64(delay))
	id := r.id.Load()
	e.ctr.retried.Add(1)
	// From the clock itself: the cached one may lag, and a retry must not
	// go out before its delay (classify.After promises exactly d).
	until := addSat(e.preciseNow(), int64(delay))
	lg, err := e.logRecord(&wal.Record{Kind: wal.KindNack, ID: id, Time: now, Attempt: int32(attempts),
		Category: uint8(cat), Text: text, Until: until}, wait)
	e.delay(slot, r, until)
	if err != nil {
		return err
	}
	return lg.wait()
}

// appendRecord logs rec, waiting as the durability mode promises when wait
// is true (a caller's mutation) and never when it is false (the
// housekeeper's, which must not stall timers).
func (e *Engine) appendRecord(rec *wal.Record, wait bool) error {
	lg, err := e.logRecord(rec, wait)
	if err != nil {
		return err
	}
	return lg.wait()
}

// logRecord appends rec without waiting and returns what appendRecord
// would have waited for. A mutation logs its record first, then makes its
// change visible, then waits: another goroutine that acts on the change
// (a Redrive of a fresh dead letter, a Dequeue of a requeued message) then
// logs its record after this one, so replay sees them in the order they
// happened.
func (e *Engine) logRecord(rec *wal.Record, wait bool) (logged, error) {
	if e.log == nil {
		return logged{}, nil
	}
	lg := logged{kind: rec.Kind, id: rec.ID}
	var err error
	if wait {
		lg.commit, err = e.log.AppendCommit(rec)
	} else {
		err = e.log.AppendNoWait(rec)
	}
	if err != nil {
		return logged{}, lg.wrap(err)
	}
	return lg, nil
}

// logged is a record appended by logRecord, not yet waited for.
type logged struct {
	commit wal.Commit
	kind   wal.Kind
	id     uint64
}

func (lg logged) wait() error {
	if err := lg.commit.Wait(); err != nil {
		return lg.wrap(err)
	}
	return nil
}

func (lg logged) wrap(err error) error {
	return fmt.Errorf("ringwal: logging %v of %d: %w", lg.kind, lg.id, mapWALError(err))
}

// deadLetter moves a busy record to the dead-letter store under cat.
func (e *Engine) deadLetter(slot uint32, r *rec, cat classify.Category, text string, now int64, wait bool) error {
	h := r.hist.Load().ending(dlq.Failure{At: time.Unix(0, now), Category: cat, Error: text})
	id := r.id.Load()
	entry := h.deadLetter(id, cat, r.msg, int(r.attempts()), now)
	// Logged before the dead letter is visible: an operator's Review,
	// Purge or Redrive of it must follow it in the log.
	lg, logErr := e.logRecord(&wal.Record{Kind: wal.KindDeadLetter, ID: id, Time: now, Attempt: int32(entry.Attempts),
		Category: uint8(cat), Text: text}, wait)
	if err := e.dead.Add(entry); err != nil {
		// Only a duplicate ID can fail, which would be an engine bug; keep
		// the message rather than lose it.
		e.opts.Logger.Error("ringwal: dead-letter store refused a message", "id", id, "err", err)
		r.word.Store(withState(r.word.Load(), stBusy))
		e.delay(slot, r, now+int64(time.Minute))
		return err
	}
	e.ctr.deadLettered[categoryIndex(cat)].Add(1)
	if cat == classify.Expired {
		e.ctr.expired.Add(1)
	}
	e.release(r)
	e.hk.deadLettered(entry)
	e.opts.Logger.Debug("ringwal: dead-lettered", "id", id, "category", cat.String(), "key", entry.Key, "attempts", entry.Attempts)
	if logErr != nil {
		return logErr
	}
	return lg.wait()
}

// hold sets a busy record aside while its key's breaker is open.
func (e *Engine) hold(slot uint32, r *rec) {
	key := r.msg.Key
	rf := r.release(slot, stHeld)
	keyID, first := e.held.add(key, rf)
	if first {
		e.scheduleRecheck(key, keyID)
	}
}

// holdRecheckMin spaces out rechecks of a key whose breaker is half-open
// with its probes out, so that held messages do not spin.
const holdRecheckMin = 50 * time.Millisecond

func (e *Engine) scheduleRecheck(key string, keyID uint64) {
	now := e.now()
	at := e.breakers.ReadyAt(key).UnixNano()
	if at < now+int64(holdRecheckMin) {
		at = now + int64(holdRecheckMin)
	}
	e.hk.schedule(at, sched.Entry{ID: keyID, Kind: timerRecheck})
}

// releaseHeld makes every held message of a key pending again, in the
// order they were held.
func (e *Engine) releaseHeld(keyID uint64) {
	refs := e.held.take(keyID)
	now := e.now()
	for _, rf := range refs {
		r := e.slab.at(rf.slot)
		if r.acquire(rf.gen, stHeld) {
			e.makeReady(rf.slot, r, now)
		}
	}
}

// settleBreaker reports a failed delivery's outcome to its key's breaker:
// categories that speak of the target's health count as failures, a
// Permanent error means the target answered (a success for the breaker),
// and the rest (Poison, Unknown, Expired) say nothing about the target.
func (e *Engine) settleBreaker(r *rec, cat classify.Category) {
	switch {
	case classify.CountsAgainstBreaker(cat):
		e.breakers.Done(r.ticket, false)
	case cat == classify.Permanent:
		e.breakers.Done(r.ticket, true)
	default:
		e.breakers.Release(r.ticket)
	}
}

// onBreakerChange releases a key's held messages once its breaker closes.
func (e *Engine) onBreakerChange(key string, from, to breaker.State) {
	e.opts.Logger.Info("ringwal: breaker state changed", "key", key, "from", from.String(), "to", to.String())
	if id, ok := e.held.idOf(key); ok && to == breaker.Closed {
		e.hk.schedule(e.now(), sched.Entry{ID: id, Kind: timerRecheck})
	}
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
	r.leaseExpiry = expiry
	id := r.id.Load()
	// Logged while the record is ours, before whatever settles the lease.
	err = e.appendRecord(&wal.Record{Kind: wal.KindExtend, ID: id, Time: now, Until: expiry}, false)
	// Same generation: the lease stays valid.
	r.word.Store(withState(r.word.Load(), stLeased))
	e.hk.schedule(expiry, sched.Entry{ID: uint64(l.slot), Gen: l.gen, Kind: timerLease})
	return err
}

// expireLease is the housekeeper's handling of a lease-expiry timer.
func (e *Engine) expireLease(en sched.Entry, now int64) {
	slot := uint32(en.ID)
	r := e.slab.at(slot)
	if !r.acquire(en.Gen, stLeased) {
		return // settled, or Extend is running and will reschedule
	}
	if r.leaseExpiry > now {
		r.word.Store(withState(r.word.Load(), stLeased)) // extended: its own timer fires later
		return
	}
	e.expireBusyLease(slot, r, now)
}

// expireBusyLease fails a record whose lease ended; the caller owns it.
func (e *Engine) expireBusyLease(slot uint32, r *rec, now int64) {
	if c := r.cancel.Load(); c != nil {
		(*c)()
	}
	e.ctr.leaseExpiries.Add(1)
	cause := fmt.Errorf("lease expired (LeaseTimeout %v)", e.opts.LeaseTimeout)
	if err := e.fail(slot, r, classify.Timeout, cause, now, false); err != nil {
		e.opts.Logger.Warn("ringwal: logging a lease expiry failed", "err", err)
	}
}

// addSat is a+b for due times (unix ns), saturating instead of wrapping:
// a duration of hundreds of years must not make something due at once.
func addSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
