package ringwal

import (
	"fmt"
	"time"

	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/sched"
)

// This file is the failure path: what happens to a delivery that failed,
// by a Nack, an expired lease, a crash loop or a TTL. Classification has
// happened before. Here the key's breaker is told, and the retry policy
// decides between a retry after backoff and the dead-letter store. Held
// messages wait out an open breaker here, and TTLs expire.

// fail handles a failed delivery of a busy, formerly leased record.
func (e *Engine) fail(slot uint32, r *rec, cat classify.Category, cause error, now int64, wait bool) error {
	if key := r.key; key != "" {
		paused := cat == classify.RateLimited && e.pauseForRetryAfter(key, cause, now)
		e.settleBreaker(r, cat, paused)
		e.keyLeaseEnded(r.ks, now)
	}
	e.observeHandling(r)
	text := failureText(cause.Error())
	f := dlq.Failure{At: time.Unix(0, now), Category: cat, Error: text}
	prev := r.fails.Load()
	h := prev.with(f)
	if r.ticket.IsProbe() {
		// A failed probe of the half-open breaker: the target is still
		// down, and the hold MaxHold bounds goes on (from when this
		// message was first held) rather than start again.
		h.heldSince = prev.since()
	}
	r.fails.Store(h)
	r.crashes.Store(0)
	attempts := int(r.attempts())
	p := e.categoryPolicy(e.queueOf(r), cat, r.maxAttempts())
	id := r.id.Load()
	if !p.ShouldRetry(attempts, time.Duration(now-r.enqueuedAt)) {
		// The failure list already ends with f; the dead-letter record logs it.
		return e.moveToDeadLetters(slot, r, f, wait)
	}
	if r.expired(now) {
		// The TTL ended during this delivery (its timer found the message
		// leased and left it to this failure): no retry may go out. The
		// dead-letter record carries the TTL's verdict, so f is logged on
		// its own first, or a reopen would lose it from the failure list.
		rec := failureRecord(id, f)
		rec.Attempt = int32(attempts) // the attempt it ended: replay's newFailure
		_, ferr := e.logRecord(&rec, false)
		if err := e.expire(slot, r, now, wait); err != nil {
			return err
		}
		return ferr
	}
	delay := p.Delay(cause, attempts, prev.lastDelay())
	h.delay = delay // h is this record's; readers never look at its delay
	e.ctr.retried.Add(1)
	// From the clock itself: the cached one may lag, and a retry must not
	// go out before its delay (classify.After promises exactly d).
	until := addSat(e.preciseNow(), int64(delay))
	rec := nackRecord(id, f, uint32(attempts), until)
	lg, err := e.logRecord(&rec, wait)
	e.delay(slot, r, until)
	if err != nil {
		return err
	}
	return lg.wait()
}

// deadLetter moves a busy record to the dead-letter store under cat, the
// verdict (a TTL, a crash loop) being a failure of its own that ends the
// message's failures.
func (e *Engine) deadLetter(slot uint32, r *rec, cat classify.Category, text string, now int64, wait bool) error {
	f := dlq.Failure{At: time.Unix(0, now), Category: cat, Error: failureText(text)}
	r.fails.Store(r.fails.Load().with(f))
	return e.moveToDeadLetters(slot, r, f, wait)
}

// moveToDeadLetters moves a busy record whose failure list ends with f,
// the failure that dead-letters it, to the dead-letter store under f's
// category. The dead-letter record carries f, and replay appends it to
// the failure list the log rebuilt: whatever the texts, the last failure
// is never taken for one already there.
//
// The record is logged, the move made visible, then the log waited for.
// It waits when wait is set, and always for an ordered key: the key's
// next message must not go out while this one could still come back
// after a crash. Only then is the key told its head is gone.
func (e *Engine) moveToDeadLetters(slot uint32, r *rec, f dlq.Failure, wait bool) error {
	cat, now := f.Category, f.At.UnixNano()
	h := r.fails.Load()
	id, ks := r.id.Load(), r.ks
	wait = wait || (ks != nil && ks.policy.Ordered)
	m := r.message()
	q := e.queueOf(r)
	m.Queue = q.name
	if q.num != 0 {
		q.deadLettered.Add(1)
	}
	entry := h.deadLetter(id, cat, m, int(r.attempts()), now)
	// Logged before the dead letter is visible: an operator's Review,
	// Purge or Redrive of it must follow it in the log.
	rec := deadLetterRecord(id, f, entry.Attempts, "")
	lg, logErr := e.logRecord(&rec, wait)
	e.ctr.moves.begin() // from the store's Add to the slot's release
	if err := e.dead.Add(entry); err != nil {
		e.ctr.moves.end()
		// Only a duplicate ID can fail, which would be an engine bug; keep
		// the message rather than lose it.
		e.opts.Logger.Error("ringwal: dead-letter store refused a message", "id", id, "err", err)
		e.delay(slot, r, now+int64(time.Minute))
		return err
	}
	e.release(r)
	e.ctr.moves.end()
	e.ctr.deadLettered[categoryIndex(cat)].Add(1)
	if cat == classify.Expired {
		e.ctr.expired.Add(1)
	}
	e.hk.deadLettered(entry)
	e.evictDeadLetters(now) // after the move: an eviction is no move
	e.opts.Logger.Debug("ringwal: dead-lettered", "id", id, "category", cat.String(), "key", entry.Key, "attempts", entry.Attempts)
	err := logErr
	if err == nil && wait {
		err = lg.wait()
	}
	e.keyGone(ks, id, now)
	return err
}

// hold sets a busy record aside while its key's breaker is open, or
// dead-letters it when it has been held its MaxHold already. MaxHold is
// counted from when it was first held. A record is released and held
// again at every half-open probe of its key, and that must not start the
// count again.
func (e *Engine) hold(slot uint32, r *rec, now int64) {
	key := r.key
	maxHold := e.maxHold(r)
	var until int64
	if maxHold > 0 {
		h := r.fails.Load()
		since := h.since()
		if since == 0 {
			since = now
			r.fails.Store(h.holding(now))
		}
		until = addSat(since, int64(maxHold))
		if now >= until {
			e.deadLetterHeld(slot, r, maxHold, now)
			return
		}
	}
	id := r.id.Load()
	rf := r.publish(e.counts, slot, stHeld)
	if until != 0 {
		e.hk.schedule(until, entryFor(rf, id, timerMaxHold))
	}
	keyID, first := e.held.add(key, rf)
	if first {
		e.scheduleRecheck(key, keyID)
	}
}

// maxHold is how long a record of a key may be held behind the key's open
// breaker: its KeyPolicy's MaxHold, else Options.MaxHold (0: forever).
func (e *Engine) maxHold(r *rec) time.Duration {
	if r.ks != nil && r.ks.policy.MaxHold > 0 {
		return r.ks.policy.MaxHold
	}
	return max(e.opts.MaxHold, 0)
}

// expireHold dead-letters a message held past its MaxHold (its timer).
func (e *Engine) expireHold(slot, gen uint32, now int64) {
	r := e.slab.at(slot)
	if !r.own(gen, stHeld) {
		return // released, expired or cancelled meanwhile
	}
	e.deadLetterHeld(slot, r, e.maxHold(r), now)
}

// deadLetterHeld dead-letters a busy record held maxHold behind its key's
// open breaker, with the category of the failure that opened the breaker.
// The category is Transient if the breaker does not know it. Only an
// operator's Reset or the key's eviction between the hold and now can
// bring that about, and the key was failing either way.
func (e *Engine) deadLetterHeld(slot uint32, r *rec, maxHold time.Duration, now int64) {
	cat := classify.Transient
	if c, ok := e.breakers.TripCause(r.key); ok {
		cat = classify.Category(c)
	}
	text := fmt.Sprintf("held longer than MaxHold %v behind the open breaker of key %q", maxHold, r.key)
	_ = e.deadLetter(slot, r, cat, text, now, false)
}

// pauseForRetryAfter pauses a key whose RateLimited failure carries a
// Retry-After hint, until then: every message of the key waits, spending
// no attempts; other keys are not touched. The pause is logged, so it
// holds across a restart. It reports whether the key is paused until then
// (false without a hint, or when MaxPausedKeys refused the pause).
func (e *Engine) pauseForRetryAfter(key string, cause error, now int64) bool {
	d, ok := classify.RetryAfter(cause)
	if !ok || d <= 0 {
		return false
	}
	until := addSat(e.preciseNow(), int64(d))
	changed, err := e.pauseKey(key, until, now)
	if err != nil {
		e.opts.Logger.Warn("ringwal: key not paused", "key", key, "err", err)
		return false
	}
	if changed {
		rec := pauseRecord(key, until, now)
		_ = e.appendRecord(&rec, false)
	}
	return true
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
// order they were held. Released because the breaker closed, a message's
// hold is over (MaxHold counts afresh if it is ever held again);
// released to a half-open breaker, it goes on.
func (e *Engine) releaseHeld(keyID uint64) {
	key, refs := e.held.take(keyID)
	if len(refs) == 0 {
		return
	}
	now := e.preciseNow() // the timer goroutine: an idle engine's cache stays parked
	closed := e.breakers.State(key) == breaker.Closed
	for _, rf := range refs {
		r := e.slab.at(rf.slot)
		if r.own(rf.gen, stHeld) {
			if h := r.fails.Load(); closed && h.since() != 0 {
				r.fails.Store(h.holding(0))
			}
			e.makeReady(rf.slot, r, now)
		}
	}
}

// settleBreaker reports a failed delivery's outcome to its key's breaker.
// Categories that speak of the target's health count as failures; the
// category is kept as the trip's cause, for MaxHold's dead letters. A
// Permanent error means the target answered: a success for the breaker.
// The rest (Poison, Unknown, Expired) say nothing about the target.
//
// The exception is a RateLimited failure whose Retry-After hint paused the
// key (paused). The target is up and said when to come back, and the
// pause already keeps every message of the key away until then. If they
// counted as well, the 429s of the requests in flight together (5 by
// default) would open the breaker. A 1 s Retry-After would become an open
// timeout of 5 s and more. MaxHold would then dead-letter as rate_limited
// messages the target would have taken. Without a hint, or when the pause
// was refused, the breaker is the key's only protection, and it counts.
func (e *Engine) settleBreaker(r *rec, cat classify.Category, paused bool) {
	switch {
	case paused:
		e.breakers.Release(r.ticket)
	case classify.CountsAgainstBreaker(cat):
		e.breakers.Fail(r.ticket, uint8(cat))
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
		e.hk.schedule(e.preciseNow(), sched.Entry{ID: id, Kind: timerRecheck})
	}
}

// expireLease is the housekeeper's handling of a lease-expiry timer.
func (e *Engine) expireLease(en sched.Entry, now int64) {
	slot := uint32(en.ID)
	r := e.slab.at(slot)
	if !r.own(en.Gen, stLeased) {
		return // settled, or Extend is running and will reschedule
	}
	if r.at > now {
		r.keep(e.counts, stLeased) // extended: its own timer fires later
		return
	}
	e.expireBusyLease(slot, r, now)
}

// expireBusyLease fails a record whose lease ended; the caller owns it.
func (e *Engine) expireBusyLease(slot uint32, r *rec, now int64) {
	if c := r.cancel.Load(); c != nil {
		(*c)()
	}
	cause := fmt.Errorf("lease expired (LeaseTimeout %v)", time.Duration(e.queueOf(r).eff.Load().leaseTimeout))
	err := e.fail(slot, r, classify.Timeout, cause, now, false)
	e.ctr.leaseExpiries.Add(1) // once out of Leased (see Nack)
	if err != nil {
		e.opts.Logger.Warn("ringwal: logging a lease expiry failed", "err", err)
	}
}

// expireTTL dead-letters a message whose TTL ended while it was not leased.
func (e *Engine) expireTTL(id uint64, now int64) {
	slot, prev, found, ok := e.slab.ownID(id, 1<<stPending|1<<stDelayed|1<<stHeld|1<<stWaiting)
	if !found || !ok {
		return // gone, or leased: a failure later re-checks the TTL
	}
	r := e.slab.at(slot)
	if !r.expired(now) {
		r.putBack(prev)
		return
	}
	_ = e.expire(slot, r, now, false)
}

// expire dead-letters a busy record whose TTL has passed, as Expired.
func (e *Engine) expire(slot uint32, r *rec, now int64, wait bool) error {
	return e.deadLetter(slot, r, classify.Expired, fmt.Sprintf("ttl of %v expired", r.ttl()), now, wait)
}
