package ringwal

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/fold"
	"github.com/ringwal/ringwal/internal/wal"
	"github.com/ringwal/ringwal/ring"
)

// Get returns what the engine knows of id: its state, message, attempts
// and last failure. A dead-lettered message has State Dead; an unknown,
// acked or purged ID returns ErrNotFound. Safe for concurrent use: it
// holds a live message's record for a moment (an Ack or Extend of it
// waits that long) and takes locks only for an ID that is not live.
func (e *Engine) Get(id ID) (Info, error) {
	if err := e.errIfClosed(); err != nil {
		return Info{}, err
	}
	if info, ok := e.lookup(id); ok {
		return info, nil
	}
	// Missed in both: a Redrive may be moving id from the dead-letter
	// store to the slab. Wait those out, then look once more.
	e.awaitRedrives()
	if info, ok := e.lookup(id); ok {
		return info, nil
	}
	return Info{}, fmt.Errorf("%w: message %d", ErrNotFound, id)
}

// awaitRedrives waits until the Redrives under way have ended. A caller
// that missed an ID in both the slab and the dead-letter store may have
// looked while a Redrive moved it from one to the other. It looks again
// after this. Misses are rare, so this lock is too.
func (e *Engine) awaitRedrives() {
	e.redriveMu.Lock()
	//lint:ignore SA2001 a barrier, not a critical section
	e.redriveMu.Unlock()
}

// ownIDSettled is slab.ownID that, when id is not in the slab, waits out
// the Redrives under way and looks once more: id may have been on its
// way out of the dead-letter store (see awaitRedrives).
func (e *Engine) ownIDSettled(id uint64, allowed uint32) (slot uint32, prev word, found, ok bool) {
	if slot, prev, found, ok = e.slab.ownID(id, allowed); !found {
		e.awaitRedrives()
		slot, prev, found, ok = e.slab.ownID(id, allowed)
	}
	return slot, prev, found, ok
}

// lookup describes id from the slab, else from the dead-letter store.
func (e *Engine) lookup(id ID) (Info, bool) {
	if slot, prev, found, ok := e.slab.ownID(id, liveStates); found && ok {
		r := e.slab.at(slot)
		info := r.info(prev.state())
		info.Message.Queue = e.queueOf(r).name
		r.putBack(prev) // a read leaves the generation alone
		e.notePause(&info)
		return info, true
	}
	if d, ok := e.dead.Get(id); ok {
		return deadInfo(d), true
	}
	return Info{}, false
}

func deadInfo(d DeadLetter) Info {
	info := Info{ID: d.ID, State: Dead, Message: d.Message, Attempts: d.Attempts, LastCategory: d.Category}
	if n := len(d.Failures); n > 0 {
		info.LastError = d.Failures[n-1].Error
	}
	return info
}

// Requeue makes a leased, held or delayed message pending now; its lease,
// if any, becomes stale (the attempt stays counted) and its Run handler's
// ctx ends. A pending message is left as it is; one whose TTL passed while
// it was leased is dead-lettered as Expired instead. A dead letter is
// ErrInvalid (use Redrive); an unknown, acked or purged ID ErrNotFound.
// It returns once its record is as durable as the mode promises. Safe for
// concurrent use.
func (e *Engine) Requeue(id ID) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	slot, prev, found, ok := e.ownIDSettled(id, 1<<stLeased|1<<stHeld|1<<stDelayed)
	if !found {
		if _, dead := e.dead.Get(id); dead {
			return fmt.Errorf("%w: message %d is dead-lettered; use Redrive", ErrInvalid, id)
		}
		return fmt.Errorf("%w: message %d", ErrNotFound, id)
	}
	if !ok {
		return nil // pending already
	}
	r := e.slab.at(slot)
	if prev.state() == stLeased {
		e.keyLeaseEnded(r.ks, e.now())
		// Counted once out of Leased (see Nack).
		defer e.ctr.requeuedLeased.Add(1)
		if r.key != "" {
			// The delivery ends without a verdict on the target.
			e.breakers.Release(r.ticket)
		}
		if c := r.cancel.Load(); c != nil {
			(*c)()
		}
	}
	now := e.now()
	if r.expired(now) {
		// Its TTL timer found it leased and left it to whoever ends
		// the lease: a requeue must not make an expired message pending.
		return e.expire(slot, r, now, true)
	}
	r.crashes.Store(0)
	e.ctr.requeued.Add(1)
	// Logged before the message is visible, so that its next lease is
	// logged after this record (see logRecord).
	rec := requeueRecord(id, now, r.attempts(), 0)
	lg, err := e.logRecord(&rec, true)
	e.makeReady(slot, r, now)
	if err != nil {
		return err
	}
	return lg.wait()
}

// DeadLetters returns the dead letters matching q, ordered by dead-letter
// time then ID; page with q.After and q.Limit. A malformed q is
// ErrInvalid. It copies what it returns under the store's read lock
// (O(c·log n + k + s), see internal/dlqstore.Store): pass a Limit to bound it; to find
// one by ID use DeadLetter, to count CountDeadLetters. Safe for
// concurrent use.
func (e *Engine) DeadLetters(q dlq.Query) ([]DeadLetter, error) {
	return e.deadLettersAfter(q, deadPlace{})
}

// deadPlace is a place (DeadAt, ID) in the dead letters' order, where a
// bulk verb's next page starts; the zero deadPlace is before them all (no
// dead letter has a zero DeadAt).
type deadPlace struct {
	at time.Time
	id ID
}

// deadLettersAfter is DeadLetters(q) resumed just after the place after
// in its order, whatever is there now (dlqstore.Store.QueryAfter); from
// q's start for the zero place.
func (e *Engine) deadLettersAfter(q dlq.Query, after deadPlace) ([]DeadLetter, error) {
	if err := e.errIfClosed(); err != nil {
		return nil, err
	}
	var out []DeadLetter
	var err error
	if after.at.IsZero() {
		out, err = e.dead.Query(q)
	} else {
		out, err = e.dead.QueryAfter(q, after.at, after.id)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return out, nil
}

// DeadLetter returns the dead letter with that ID; an ID that is not a
// dead letter (unknown, live, acked, purged, evicted) is ErrNotFound. It
// finds it through the store's ID index: O(1), holding the store's read
// lock for a map lookup and the copy of that one entry's failures. Safe
// for concurrent use.
func (e *Engine) DeadLetter(id ID) (DeadLetter, error) {
	if err := e.errIfClosed(); err != nil {
		return DeadLetter{}, err
	}
	d, ok := e.dead.Get(id)
	if !ok {
		return DeadLetter{}, fmt.Errorf("%w: no dead letter %d", ErrNotFound, id)
	}
	return d, nil
}

// DeadLetterKeys returns how many dead letters each key has, for every key
// that has some (dead letters without a key are not listed). The counts
// are kept as dead letters come and go: O(k) for k such keys, holding the
// store's read lock while it copies k counts and no dead letter. Safe for
// concurrent use.
func (e *Engine) DeadLetterKeys() (map[string]int, error) {
	if err := e.errIfClosed(); err != nil {
		return nil, err
	}
	return e.dead.KeyCounts(), nil
}

// CountDeadLetters returns how many dead letters q matches, as many as
// DeadLetters(q) would return, without copying any. It also returns a
// mark. Set q.Through to it, and PurgeDeadLetters(q) removes exactly the
// dead letters counted (less any removed since), never one that arrived
// after the count. A malformed q is ErrInvalid. A q that filters by
// categories or one key only is O(c) from the kept counts. Any other walks
// the matching dead letters under the store's read lock, allocating
// nothing; that walk is O(c·log n + m), as internal/dlqstore.Store says.
// Safe for concurrent use.
func (e *Engine) CountDeadLetters(q dlq.Query) (n int, mark uint64, err error) {
	if err := e.errIfClosed(); err != nil {
		return 0, 0, err
	}
	n, mark, err = e.dead.CountQuery(q)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return n, mark, nil
}

// Redrive makes a dead-lettered message pending again under the same ID,
// with its attempts and failure history reset, its TTL and EnqueuedAt
// counted from now, and its Delay not applied again. An ID that is not a
// dead letter (unknown, live, acked or purged) is ErrNotFound; ErrFull
// when no slot is free for it (the dead letter stays). It returns once
// its records are as durable as the mode promises. Safe for concurrent
// use.
func (e *Engine) Redrive(id ID) error {
	op, err := e.startRedrive(id)
	if err != nil {
		return err
	}
	return op.finish()
}

// startRedrive is Redrive up to its record's place in the log. The
// returned op waits for the log and then makes the message ready, or puts
// the dead letter back if the log failed. So a bulk redrive waits for the
// log once for many. The read lock that keeps Get's miss
// path consistent is held only here: from here the message is in the
// slab.
func (e *Engine) startRedrive(id ID) (pendingOp, error) {
	if err := e.errIfClosed(); err != nil {
		return pendingOp{}, err
	}
	// Held from leaving the dead-letter store to being found in the slab
	// (or back in the store): Get's miss path waits on it.
	e.redriveMu.RLock()
	defer e.redriveMu.RUnlock()
	locked := true
	got, ok := e.dead.Get(id)
	if !ok {
		return pendingOp{}, fmt.Errorf("%w: no dead letter %d", ErrNotFound, id)
	}
	// Back to its queue, declared again if it was deleted meanwhile.
	q, err := e.queueNamed(got.Message.Queue, true)
	if err != nil {
		return pendingOp{}, err
	}
	q.run()
	// From the clock itself: the TTL counts from here, and the cached
	// clock may lag.
	now := e.preciseNow()
	// From leaving the store until the record counts as pending (it does
	// once committing), Stats must know a message is in transit.
	e.ctr.moves.begin()
	d, ok := e.dead.Remove(id)
	if !ok {
		e.ctr.moves.end()
		return pendingOp{}, fmt.Errorf("%w: no dead letter %d", ErrNotFound, id)
	}
	slot, ok := e.slab.claimNear(id)
	if !ok {
		_ = e.dead.Add(d)
		e.ctr.moves.end()
		return pendingOp{}, fmt.Errorf("%w: no free slot near %d to redrive into", ErrFull, id)
	}
	r := e.slab.at(slot)
	// The same message with its attempts and history reset, counted from
	// now; its Delay is not applied again.
	m := d.Message
	m.Delay = 0
	ks := e.keyForPlacement(m.Key)
	r.fill(&m, q.num, now, 0, 0, nil, ks)
	q.enter()
	e.ctr.added.Add(1)
	// Counted as pending from here (a memory-only engine publishes it from
	// committing as well); a failed write below is a move of its own back
	// to the store.
	r.commit(e.counts)
	e.ctr.moves.end()
	undo := func(err error) error {
		if !locked { // a failed commit, after startRedrive returned
			e.redriveMu.RLock()
			defer e.redriveMu.RUnlock()
		}
		e.ctr.moves.begin()
		_ = e.dead.Add(d) // before the record goes: Get finds one or the other
		r.uncommit()
		ks.unenter()
		r.free(e.counts)
		q.leave()
		e.ctr.added.Add(-1)
		e.ctr.moves.end()
		e.space.signal()
		return fmt.Errorf("ringwal: redrive %d: %w", id, mapWALError(err))
	}
	var c wal.Commit
	if e.log != nil {
		// Redrive then the whole message: the log alone can rebuild it even
		// if a checkpoint saw it in neither the slab nor the DLQ.
		recs := make([]wal.Record, 2)
		recs[0] = redriveRecord(id, now)
		enqueueRecord(&recs[1], r, id)
		if c, err = e.log.AppendBatchCommit(recs); err != nil {
			return pendingOp{}, undo(err)
		}
	}
	locked = false
	return pendingOp{logged: logged{commit: c}, then: func(err error) error {
		if err != nil {
			return undo(err)
		}
		e.ctr.redriven.Add(1)
		e.uniqueBack(r, id) // live again: its DedupID refuses repeats again, unless another took it
		if exp := r.expiresAt(); exp != 0 {
			e.hk.schedule(exp, schedTTL(id))
		}
		e.place(slot, r, 0, 0, now)
		return nil
	}}, nil
}

// MarkReviewed flags a dead letter as seen by an operator, with a note
// (replacing any earlier one). An ID that is not a dead letter is
// ErrNotFound. Reviewed dead letters are removed after
// Options.DeadLetterRetention. Safe for concurrent use.
func (e *Engine) MarkReviewed(id ID, note string) error {
	op, err := e.startReview(id, note)
	if err != nil {
		return err
	}
	return op.finish()
}

// startReview is MarkReviewed up to its record's place in the log.
func (e *Engine) startReview(id ID, note string) (pendingOp, error) {
	if err := e.errIfClosed(); err != nil {
		return pendingOp{}, err
	}
	now := e.now()
	if err := e.dead.MarkReviewed(id, note, time.Unix(0, now)); err != nil {
		return pendingOp{}, fmt.Errorf("%w: dead letter %d: %w", ErrNotFound, id, err)
	}
	e.ctr.deadReviewed.Add(1)
	rec := reviewRecord(id, now, note)
	lg, err := e.logRecord(&rec, true)
	return pendingOp{logged: lg}, err
}

// PurgeDeadLetters deletes the dead letters matching q (an empty q
// matches every one) and returns how many it deleted; with q.Through set
// to CountDeadLetters' mark, exactly those it counted. A malformed q is
// ErrInvalid. It holds the store's write lock while it selects and
// removes them (O(c·log n + k + s)). If the log refuses the purge records, the dead letters are
// gone from memory all the same: it returns their count with the error.
// Safe for concurrent use.
func (e *Engine) PurgeDeadLetters(q dlq.Query) (int, error) {
	if err := e.errIfClosed(); err != nil {
		return 0, err
	}
	e.deadLeaveMu.RLock()
	defer e.deadLeaveMu.RUnlock()
	gone, err := e.dead.Purge(q)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	e.ctr.deadPurged.Add(uint64(len(gone)))
	if e.log != nil && len(gone) > 0 {
		now := e.now()
		recs := make([]wal.Record, len(gone))
		for i, d := range gone {
			recs[i] = purgeRecord(d.ID, now)
		}
		if err := e.log.AppendBatch(recs); err != nil {
			return len(gone), fmt.Errorf("ringwal: purge: %w", mapWALError(err))
		}
	}
	return len(gone), nil
}

// PurgeDeadLetter deletes one dead letter for good: what the console's
// "purge selected" does to each row picked, where a query could not single
// one out. An ID that is not a dead letter (unknown, live, redriven,
// purged) is ErrNotFound. It returns once its purge record is as durable
// as the mode promises; if the log refuses it, the dead letter is gone from
// memory all the same (as with PurgeDeadLetters) and the error says so.
// Safe for concurrent use: a redrive or purge of the same ID at the same
// time takes it once, and the other gets ErrNotFound.
func (e *Engine) PurgeDeadLetter(id ID) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	e.deadLeaveMu.RLock()
	if _, ok := e.dead.Remove(id); !ok {
		e.deadLeaveMu.RUnlock()
		return fmt.Errorf("%w: no dead letter %d", ErrNotFound, id)
	}
	if f := deadLetterRemoved.Load(); f != nil {
		(*f)()
	}
	e.ctr.deadPurged.Add(1)
	rec := purgeRecord(id, e.now())
	lg, err := e.logRecord(&rec, true)
	e.deadLeaveMu.RUnlock()
	if err != nil {
		return err // its error says which purge
	}
	return lg.wait()
}

// deadLetterRemoved, when set (tests only), is called by
// PurgeDeadLetter between the dead letter's removal and its purge record.
var deadLetterRemoved atomic.Pointer[func()]

// evictDeadLetters removes the oldest dead letters past
// Options.MaxDeadLetters, reviewed ones first. Each is counted
// (Stats.DeadLettersEvicted) and logged at Debug; the first since Open is
// logged at Warn too, and the housekeeper's summary says how many each
// pass. Each is journaled with a purge record, as a purge is, so that a
// reopen does not bring it back. The records do not wait for the log. A
// crash before they are written brings the evicted letters back, and Open
// evicts them again: the same ones, the oldest. A store under its bound costs one read
// lock; an eviction O(log n). Safe for concurrent use.
func (e *Engine) evictDeadLetters(now int64) {
	if e.dead.Len() <= e.opts.MaxDeadLetters {
		return
	}
	e.deadLeaveMu.RLock()
	defer e.deadLeaveMu.RUnlock()
	gone := e.dead.Evict(e.opts.MaxDeadLetters)
	if len(gone) == 0 {
		return
	}
	if e.ctr.deadEvicted.Add(uint64(len(gone))) == uint64(len(gone)) {
		e.opts.Logger.Warn("ringwal: dead-letter store at MaxDeadLetters: evicting the oldest dead letters, reviewed ones first",
			"max_dead_letters", e.opts.MaxDeadLetters)
	}
	for _, d := range gone {
		e.logPurgeNoWait(d.ID, now)
		e.opts.Logger.Debug("ringwal: dead letter evicted", "id", d.ID, "category", d.Category.String(),
			"key", d.Key, "reviewed", d.Reviewed, "dead_at", d.DeadAt)
	}
}

// Peek returns up to n pending messages in the order Dequeue would hand
// them out now, without leasing anything; nil when n <= 0 or the engine
// is closed. First those whose Deadline is within DeadlineSlack, earliest
// first; then the tiers in the scheduler's order (weighted or strict, from
// its current place), each tier in its queue's order (the order its
// messages became ready). Aging, and what consumers racing each other do,
// are not predicted; a pending message kept aside by its key (Waiting) is
// not listed until it goes back in line.
//
// Peek reads the fronts of the deadline heap, of each tier's ring and of
// its spill queue, never the backlog. It costs O(n × tiers) work and
// allocation. It also passes over up to peekLimit entries per queue that
// no longer name a pending message: leased out of order by their
// deadline, cancelled or requeued. A message behind more of those is
// missed until they are popped, as Stats.OldestPending is. It takes no
// engine-wide lock. It holds the deadline heap's mutex while it lists at
// most n+peekLimit entries, and a spill queue's while it copies as many
// refs. It holds each listed message's record for a moment, as Get does. What moves while it reads may be
// missed or seen out of place: a moment's view. Safe for concurrent use.
func (e *Engine) Peek(n int) []Info {
	return e.peek(&e.defaultDelivery, n)
}

// peek is Peek in rt's queue.
func (e *Engine) peek(rt *queueDelivery, n int) []Info {
	if n <= 0 || e.errIfClosed() != nil {
		return nil
	}
	n = min(n, e.slab.size()) // no more are live: n is the caller's, maybe huge
	now := e.now()
	var out []Info
	var listed map[ID]bool // the urgent ones, which their tiers also hold
	if dl := rt.sched.Deadlines(); dl.Len() > 0 {
		slack := addSat(now, int64(e.opts.DeadlineSlack))
		for _, en := range dl.Due(slack, n+peekLimit, e.validEntry, nil) {
			if len(out) == n {
				return out
			}
			if info, ok := e.peekRef(ref{slot: uint32(en.ID), gen: en.Gen}); ok {
				if listed == nil {
					listed = make(map[ID]bool)
				}
				out = append(out, info)
				listed[info.ID] = true
			}
		}
	}
	need := n - len(out)
	if need == 0 {
		return out
	}
	var tiers [ring.NumTiers][]Info
	var backlog [ring.NumTiers]int
	for t := range tiers {
		spilled := rt.spilled.Load()&(1<<t) != 0
		if rt.tiers.LenOf(t) == 0 && !spilled {
			continue
		}
		budget := need + peekLimit // entries this tier may look at
		take := func(rf ref) bool {
			budget--
			if info, ok := e.peekRef(rf); ok && !listed[info.ID] {
				tiers[t] = append(tiers[t], info)
			}
			return len(tiers[t]) < need && budget > 0
		}
		rt.tiers.Peek(t, budget, take)
		if spilled && len(tiers[t]) < need && budget > 0 {
			// Behind the ring in line. Copied under the queue's lock and
			// read after it: a record is owned before that lock is taken
			// (pushTier), never after.
			q := &rt.spill[t]
			q.mu.Lock()
			refs := slices.Clone(q.refs[q.head:min(len(q.refs), q.head+budget)])
			q.mu.Unlock()
			for _, rf := range refs {
				if !take(rf) {
					break
				}
			}
		}
		backlog[t] = len(tiers[t])
	}
	for _, t := range rt.sched.Picker().Preview(backlog, need) {
		out = append(out, tiers[t][0])
		tiers[t] = tiers[t][1:]
	}
	return out
}

// peekRef describes the pending message rf names, holding its record for
// the moment of the read; false if rf no longer names a pending message.
func (e *Engine) peekRef(rf ref) (Info, bool) {
	r := e.slab.lookup(rf.slot)
	if r == nil || !r.own(rf.gen, stPending) {
		return Info{}, false
	}
	info := r.info(stPending)
	info.Message.Queue = e.queueOf(r).name
	r.keep(e.counts, stPending)
	e.notePause(&info)
	return info, true
}

// headersContain reports whether needle (lower-cased) occurs in one of
// m's header names or values: what dlq.Query.Text searches in a dead
// letter's message.
func headersContain(m *Message, needle string) bool {
	for k, v := range m.Headers {
		if fold.Contains(k, needle) || fold.Contains(v, needle) {
			return true
		}
	}
	return false
}
