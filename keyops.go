package ringwal

import (
	"fmt"
	"iter"
	"slices"
	"time"
)

// The public per-key and delivery controls: pauses, Cancel, Messages.

// pauseEnd turns a caller's until into a pause's end: zero is "until
// resumed".
func pauseEnd(until time.Time) int64 {
	if until.IsZero() {
		return untilResumed
	}
	return until.UnixNano()
}

// PauseKey holds back delivery of key's messages until until (zero: until
// ResumeKey); they wait aside, spending no attempts, and other keys are not
// touched. A pause never shortens one already in force. It is logged and
// survives a restart. An empty key, an until in the past or one after
// 2262-04-11 (see Message.Deadline) is ErrInvalid; a new pause while
// Options.MaxPausedKeys keys are paused is ErrFull (extending a key's
// pause in force is not). Enqueue of the key's messages continues. Safe
// for concurrent use.
func (e *Engine) PauseKey(key string, until time.Time) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	if key == "" || len(key) > maxKeyLen {
		return invalidf("PauseKey: key must be 1 to %d bytes", maxKeyLen)
	}
	if err := checkInstant("PauseKey until", until); err != nil {
		return err
	}
	now := e.preciseNow()
	end := pauseEnd(until)
	if end <= now {
		return invalidf("PauseKey %q until %v: in the past", key, until)
	}
	changed, err := e.pauseKey(key, end, now)
	if err != nil {
		return err
	}
	if !changed {
		return nil // a longer pause is in force
	}
	rec := pauseRecord(key, end, now)
	return e.appendRecord(&rec, true)
}

// ResumeKey ends key's pause (an operator's or a Retry-After's) and lets
// its messages go. A key that is not paused is left as it is. It is logged.
// Safe for concurrent use.
func (e *Engine) ResumeKey(key string) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	if key == "" {
		return invalidf("ResumeKey: empty key")
	}
	now := e.preciseNow()
	if !e.resumeKey(key, now) {
		return nil
	}
	rec := resumeRecord(key, now)
	return e.appendRecord(&rec, true)
}

// KeyPause reports whether key's delivery is paused now (PauseKey, a
// Retry-After) and until when (zero: until ResumeKey); key "" asks about
// a Pause of all delivery. O(1): one registry lookup and the key's lock
// for a moment, never a Stats. Safe for concurrent use.
func (e *Engine) KeyPause(key string) (paused bool, until time.Time) {
	now := e.preciseNow()
	if key == "" {
		end := e.keys.allUntil.Load()
		if end == 0 || now >= end {
			return false, time.Time{}
		}
		if end != untilResumed {
			until = time.Unix(0, end)
		}
		return true, until
	}
	ks := e.keys.lookup(key)
	if ks == nil {
		return false, time.Time{}
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if !ks.pausedAt(now) {
		return false, time.Time{}
	}
	if ks.pausedUntil != untilResumed {
		until = time.Unix(0, ks.pausedUntil)
	}
	return true, until
}

// restorePauses puts back the pauses the log holds.
func (e *Engine) restorePauses(pauses map[string]int64, now int64) {
	for key, until := range pauses {
		switch {
		case until == 0 || until <= now:
		case key == "":
			e.pauseAll(until, now)
		default:
			if _, err := e.pauseKey(key, until, now); err != nil {
				e.opts.Logger.Warn("ringwal: key not paused", "key", key, "err", err)
			}
		}
	}
}

// Cancel removes a message for good: a pending, delayed, held or waiting
// one at once; a leased one has its Run handler's ctx cancelled and its
// lease ended (a later Ack or Nack gets ErrStaleLease). It is logged and
// never comes back after a restart. A dead letter is ErrInvalid (use
// PurgeDeadLetters); an unknown, acked or purged ID ErrNotFound. It
// returns once its record is as durable as the mode promises. Safe for
// concurrent use.
func (e *Engine) Cancel(id ID) error {
	op, err := e.startCancel(id)
	if err != nil {
		return err
	}
	return op.finish()
}

// startCancel is Cancel up to its record's place in the log; the op waits
// for the log and then lets the key's next message go.
func (e *Engine) startCancel(id ID) (pendingOp, error) {
	if err := e.errIfClosed(); err != nil {
		return pendingOp{}, err
	}
	slot, prev, found, ok := e.ownIDSettled(id, liveStates)
	if !found || !ok {
		if _, dead := e.dead.Get(id); dead {
			return pendingOp{}, fmt.Errorf("%w: message %d is dead-lettered; use PurgeDeadLetters", ErrInvalid, id)
		}
		return pendingOp{}, fmt.Errorf("%w: message %d", ErrNotFound, id)
	}
	r := e.slab.at(slot)
	now := e.now()
	ks := r.ks
	if prev.state() == stLeased {
		if r.key != "" {
			e.breakers.Release(r.ticket) // no verdict on the target
		}
		if c := r.cancel.Load(); c != nil {
			(*c)()
		}
		e.keyLeaseEnded(ks, now)
		defer e.ctr.cancelledLeased.Add(1) // once out of Leased (see Nack)
	}
	rec := cancelRecord(id, now)
	lg, err := e.logRecord(&rec, true)
	e.ctr.cancelled.Add(1)
	e.release(r)
	// After the log: an ordered key's next message must not go out while
	// this one could still come back after a crash.
	gone := func(err error) error { e.keyGone(ks, id, now); return err }
	if err != nil {
		return pendingOp{}, gone(err)
	}
	return pendingOp{logged: lg, then: gone}, nil
}

// Filter selects live messages for Messages: by Key ("" = every key) and
// by State (empty = every live state; Dead is never live).
type Filter struct {
	Key    string
	States []State
	// Queue limits the walk to one named queue; "" means every queue (the
	// default queue's name is "" too: filter it by Info.Message.Queue).
	Queue string
	// Through, if not 0, matches only messages whose ID is at most
	// Through: CountMessages' mark, so that CancelMatching acts on the
	// messages counted and never on one enqueued since (IDs only grow; a
	// redriven dead letter keeps its old ID). 0 means no bound.
	Through ID
}

func (f *Filter) match(info *Info) bool {
	if f.Key != "" && info.Message.Key != f.Key {
		return false
	}
	if f.Queue != "" && info.Message.Queue != f.Queue {
		return false
	}
	if f.Through != 0 && info.ID > f.Through {
		return false
	}
	return len(f.States) == 0 || slices.Contains(f.States, info.State)
}

// Messages yields the live messages that match f, without leasing
// anything and without collecting them first (it allocates nothing per
// message beyond the Info it yields). For an ordered key (KeyPolicy.Ordered)
// it yields them in delivery order: the head, then the key's queue.
// Otherwise it walks the engine's record slab, which is enqueue order
// except where IDs wrap around the slab. A message that changes state
// while the walk runs may be seen in either state, or missed. Safe for
// concurrent use; the iterator may be used while the engine runs.
func (e *Engine) Messages(f Filter) iter.Seq[Info] {
	return func(yield func(Info) bool) {
		if e.errIfClosed() != nil {
			return
		}
		if ks := e.orderedKey(f.Key); ks != nil {
			e.orderedMessages(ks, &f, yield)
			return
		}
		for slot := 0; slot < e.slab.size(); slot++ {
			r := e.slab.lookup(uint32(slot))
			if r == nil { // a chunk never used: skip it whole
				slot |= slabChunkSlots - 1
				continue
			}
			info, ok := e.describe(r, func(word, uint64) bool { return true })
			if ok && f.match(&info) && !yield(info) {
				return
			}
		}
	}
}

// describe reads a live record's Info if is (given its word and ID) says
// it is the one the caller means.
func (e *Engine) describe(r *rec, is func(w word, id uint64) bool) (Info, bool) {
	if !r.load().allowed(liveStates) {
		return Info{}, false
	}
	prev, ok := r.ownAny(liveStates)
	if !ok {
		return Info{}, false
	}
	if !is(prev, r.id.Load()) {
		r.putBack(prev)
		return Info{}, false
	}
	info := r.info(prev.state())
	info.Message.Queue = e.queueOf(r).name
	r.putBack(prev)
	e.notePause(&info)
	return info, true
}

func (e *Engine) orderedKey(key string) *keyState {
	if key == "" {
		return nil
	}
	if ks := e.keys.lookup(key); ks != nil && ks.policy.Ordered {
		return ks
	}
	return nil
}

// orderedMessages yields an ordered key's head, then its queue, reading
// one entry at a time under the key's lock (yield runs without it).
func (e *Engine) orderedMessages(ks *keyState, f *Filter, yield func(Info) bool) {
	ks.mu.Lock()
	head, next := ks.headID, ks.popped
	ks.mu.Unlock()
	if head != 0 {
		if slot, found := e.slab.find(head); found {
			isHead := func(_ word, id uint64) bool { return id == head }
			if info, ok := e.describe(e.slab.at(slot), isHead); ok && f.match(&info) && !yield(info) {
				return
			}
		}
	}
	for {
		ks.mu.Lock()
		if next < ks.popped {
			next = ks.popped // the front moved on meanwhile
		}
		i := next - ks.popped
		if i >= uint64(len(ks.queue)) {
			ks.mu.Unlock()
			return
		}
		rf := ks.queue[i].rf
		ks.mu.Unlock()
		next++
		queued := func(w word, _ uint64) bool { return w.names(rf.gen, stWaiting) }
		if info, ok := e.describe(e.slab.at(rf.slot), queued); ok && f.match(&info) && !yield(info) {
			return
		}
	}
}
