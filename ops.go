package ringwal

import (
	"fmt"
	"sort"
	"time"

	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/ring"
	"github.com/ringwal/ringwal/wal"
)

// Get returns what the engine knows of id: its state, message, attempts
// and last failure. A dead-lettered message has State Dead; an unknown,
// acked or purged ID returns ErrNotFound. Safe for concurrent use: it
// holds a live message's record for a moment (an Ack or Extend of it
// waits that long) and takes locks only for an ID that is not live.
func (e *Engine) Get(id ID) (Info, error) {
	if err := e.usable(); err != nil {
		return Info{}, err
	}
	if info, ok := e.lookup(id); ok {
		return info, nil
	}
	// Missed in both: a Redrive may be moving id from the dead-letter
	// store to the slab. Wait those out, then look once more (misses are
	// rare, so this lock is too).
	e.redriveMu.Lock()
	//lint:ignore SA2001 a barrier, not a critical section
	e.redriveMu.Unlock()
	if info, ok := e.lookup(id); ok {
		return info, nil
	}
	return Info{}, fmt.Errorf("%w: %d", ErrNotFound, id)
}

// lookup describes id from the slab, else from the dead-letter store.
func (e *Engine) lookup(id ID) (Info, bool) {
	if slot, prev, found, ok := e.slab.ownID(uint64(id), liveStates); found && ok {
		r := e.slab.at(slot)
		info := r.info(prev.state())
		r.putBack(prev) // a read leaves the generation alone
		e.notePause(&info)
		return info, true
	}
	if d, ok := e.dead.Get(uint64(id)); ok {
		return deadInfo(d), true
	}
	return Info{}, false
}

func deadInfo(d DeadLetter) Info {
	info := Info{ID: ID(d.ID), State: Dead, Message: d.Message, Attempts: d.Attempts, LastCategory: d.Category}
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
	if err := e.usable(); err != nil {
		return err
	}
	slot, prev, found, ok := e.slab.ownID(uint64(id), 1<<stLeased|1<<stHeld|1<<stDelayed)
	if !found {
		if _, dead := e.dead.Get(uint64(id)); dead {
			return fmt.Errorf("%w: message %d is dead-lettered; use Redrive", ErrInvalid, id)
		}
		return fmt.Errorf("%w: %d", ErrNotFound, id)
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
	rec := requeueRecord(uint64(id), now, r.attempts(), 0)
	lg, err := e.logRecord(&rec, true)
	e.makeReady(slot, r, now)
	if err != nil {
		return err
	}
	return lg.wait()
}

// DeadLetters returns the dead letters matching q, ordered by dead-letter
// time then ID; page with q.After and q.Limit. A malformed q is
// ErrInvalid. Safe for concurrent use.
func (e *Engine) DeadLetters(q dlq.Query) ([]DeadLetter, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	out, err := e.dead.Query(q)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return out, nil
}

// Redrive makes a dead-lettered message pending again under the same ID,
// with its attempts and failure history reset, its TTL and EnqueuedAt
// counted from now, and its Delay not applied again. An ID that is not a
// dead letter (unknown, live, acked or purged) is ErrNotFound; ErrFull
// when no slot is free for it (the dead letter stays). It returns once
// its records are as durable as the mode promises. Safe for concurrent
// use.
func (e *Engine) Redrive(id ID) error {
	if err := e.usable(); err != nil {
		return err
	}
	// Held from leaving the dead-letter store to being found in the slab
	// (or back in the store): Get's miss path waits on it.
	e.redriveMu.RLock()
	defer e.redriveMu.RUnlock()
	if _, ok := e.dead.Get(uint64(id)); !ok {
		// Not a move: Stats need not scan again for it.
		return fmt.Errorf("%w: no dead letter %d", ErrNotFound, id)
	}
	// From leaving the store until the record counts as pending (it does
	// once committing), Stats must know a message is in transit.
	e.ctr.moves.begin()
	moved := false
	defer func() {
		if !moved {
			e.ctr.moves.end()
		}
	}()
	d, ok := e.dead.Remove(uint64(id))
	if !ok {
		return fmt.Errorf("%w: no dead letter %d", ErrNotFound, id)
	}
	// From the clock itself: the TTL counts from here, and the cached
	// clock may lag.
	now := e.preciseNow()
	slot, ok := e.slab.claimNear(uint64(id))
	if !ok {
		_ = e.dead.Add(d)
		return fmt.Errorf("%w: no free slot near %d to redrive into", ErrFull, id)
	}
	r := e.slab.at(slot)
	// The same message with its attempts and history reset, counted from
	// now; its Delay is not applied again.
	m := d.Message
	m.Delay = 0
	ks := e.keyForPlacement(m.Key)
	r.fill(&m, now, 0, 0, nil, ks)
	e.ctr.added.Add(1)
	if e.log != nil {
		r.commit(e.counts)
		// Counted as pending from here; a failed write below is a move of
		// its own back to the store.
		moved = true
		e.ctr.moves.end()
		// Redrive then the whole message: the log alone can rebuild it even
		// if a checkpoint saw it in neither the slab nor the DLQ.
		recs := make([]wal.Record, 2)
		recs[0] = redriveRecord(uint64(id), now)
		enqueueRecord(&recs[1], r, uint64(id))
		if err := e.log.AppendBatch(recs); err != nil {
			e.ctr.moves.begin()
			_ = e.dead.Add(d) // before the record goes: Get finds one or the other
			r.uncommit()
			ks.unenter()
			r.free(e.counts)
			e.ctr.added.Add(-1)
			e.ctr.moves.end()
			return fmt.Errorf("ringwal: redrive %d: %w", id, mapWALError(err))
		}
	}
	e.ctr.redriven.Add(1)
	if exp := r.expiresAt(); exp != 0 {
		e.hk.schedule(exp, schedTTL(uint64(id)))
	}
	e.place(slot, r, 0, 0, now)
	return nil
}

// MarkReviewed flags a dead letter as seen by an operator, with a note
// (replacing any earlier one). An ID that is not a dead letter is
// ErrNotFound. Reviewed dead letters are removed after
// Options.DeadLetterRetention. Safe for concurrent use.
func (e *Engine) MarkReviewed(id ID, note string) error {
	if err := e.usable(); err != nil {
		return err
	}
	now := e.now()
	if err := e.dead.MarkReviewed(uint64(id), note, time.Unix(0, now)); err != nil {
		return fmt.Errorf("%w: dead letter %d: %w", ErrNotFound, id, err)
	}
	rec := reviewRecord(uint64(id), now, note)
	return e.appendRecord(&rec, true)
}

// PurgeDeadLetters deletes the dead letters matching q (an empty q
// matches every one) and returns how many it deleted. A malformed q is
// ErrInvalid. If the log refuses the purge records, the dead letters are
// gone from memory all the same: it returns their count with the error.
// Safe for concurrent use.
func (e *Engine) PurgeDeadLetters(q dlq.Query) (int, error) {
	if err := e.usable(); err != nil {
		return 0, err
	}
	gone, err := e.dead.Purge(q)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
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

// Peek returns up to n pending messages in the order Dequeue would hand
// them out now (deadlines within the slack first, then the tiers'
// weighted order), without leasing anything; nil when n <= 0 or the
// engine is closed. It scans the engine, so it is meant for inspection,
// not for the hot path. Safe for concurrent use.
func (e *Engine) Peek(n int) []Info {
	if n <= 0 || e.usable() != nil {
		return nil
	}
	type cand struct {
		info     Info
		readyAt  int64
		deadline int64
	}
	var tiers [ring.NumTiers][]cand
	var urgent []cand
	now := e.now()
	slack := now + int64(e.opts.DeadlineSlack)
	e.slab.each(func(_ uint32, r *rec) {
		if r.load().state() != stPending {
			return
		}
		prev, ok := r.ownAny(1 << stPending)
		if !ok {
			return
		}
		c := cand{info: r.info(stPending), readyAt: r.at, deadline: r.deadline()}
		r.putBack(prev)
		if c.deadline != 0 && c.deadline <= slack {
			urgent = append(urgent, c)
			return
		}
		t := c.info.Message.Priority.tier()
		tiers[t] = append(tiers[t], c)
	})
	sort.Slice(urgent, func(i, j int) bool { return urgent[i].deadline < urgent[j].deadline })
	candidates := len(urgent)
	for t := range tiers {
		candidates += len(tiers[t])
	}
	out := make([]Info, 0, min(n, candidates)) // n is the caller's, maybe huge
	for _, c := range urgent {
		if len(out) == n {
			return out
		}
		out = append(out, c.info)
	}
	for t := range tiers {
		sort.Slice(tiers[t], func(i, j int) bool {
			a, b := tiers[t][i], tiers[t][j]
			if a.readyAt != b.readyAt {
				return a.readyAt < b.readyAt
			}
			return a.info.ID < b.info.ID
		})
	}
	var backlog [ring.NumTiers]int
	for t := range tiers {
		backlog[t] = len(tiers[t])
	}
	for _, t := range e.sched.Picker().Preview(backlog, n-len(out)) {
		out = append(out, tiers[t][0].info)
		tiers[t] = tiers[t][1:]
	}
	return out
}
