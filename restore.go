package ringwal

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/wal"
)

// restore places the replayed messages into the slab, tiers and wheel.
// Messages leased at a crash come back pending with that attempt counted,
// or are dead-lettered as Poison once they were leased at CrashLoopLimit
// consecutive crashes. Open returns with what the housekeeper's first
// pass would make of the rest: a message whose TTL ended while the
// engine was closed is dead-lettered as Expired (and logged as any
// expiry), one that came due is pending since its due time, so that Get,
// Stats and Peek read the same right after Open as a moment later.
func (e *Engine) restore(rs *replayState) error {
	now := e.now()
	// Tiers are FIFO in the order messages became ready, which is what
	// Peek reports too; IDs break ties (and order the rest). The log
	// mostly has them so already; a snapshot lists them by slot.
	// An ordered key's messages go last and in ID order: the first placed
	// becomes the key's head, the rest wait in its queue behind it.
	// With a large backlog, allocating the slab's chunks and the tiers'
	// rings (faulting their pages in) is a third of the loop below: a
	// goroutine allocates them ahead of it, on the core replay used for
	// decoding, so that the loop mostly finds them there.
	var stopGrow atomic.Bool
	grown := make(chan struct{})
	go func() {
		defer close(grown)
		var tiers uint
		for i := int32(0); i < rs.n && !stopGrow.Load(); i++ {
			m := rs.at(i)
			if m.id == 0 {
				continue
			}
			e.slab.prepare(m.id)
			// A message not delayed goes into its tier's ring (or, past
			// its TTL, dies: allocating the ring then is a rare waste).
			if t := m.msg.Priority.tier(); m.state != stDelayed && tiers&(1<<t) == 0 {
				tiers |= 1 << t
				e.tiers.Tier(t)
			}
		}
	}()
	defer func() {
		stopGrow.Store(true)
		<-grown
	}()
	order := make([]int32, 0, rs.count)
	for i := int32(0); i < rs.n; i++ {
		if m := rs.at(i); m.id != 0 {
			m.nextAt = m.readySince(now) // from here on, when it is ready (a delayed one's due time)
			m.ordered = e.keyOrdered(m.msg.Key)
			order = append(order, i)
		}
	}
	byReady := func(a, b int32) int {
		ma, mb := rs.at(a), rs.at(b)
		switch {
		case ma.ordered != mb.ordered:
			return boolCompare(ma.ordered, mb.ordered)
		case ma.ordered:
			return cmp.Compare(ma.id, mb.id)
		}
		if c := cmp.Compare(ma.nextAt, mb.nextAt); c != 0 {
			return c
		}
		return cmp.Compare(ma.id, mb.id)
	}
	if !slices.IsSortedFunc(order, byReady) {
		slices.SortFunc(order, byReady)
	}
	var notes []wal.Record
	for _, i := range order {
		m := rs.at(i)
		id := m.id
		slot, ok := e.slab.claimHome(id)
		if !ok {
			if slot, ok = e.slab.claimNear(id); !ok {
				return fmt.Errorf("ringwal: no slot for message %d in a slab of %d: raise MaxMessages", id, e.slab.size())
			}
		}
		r := e.slab.at(slot)
		msg := m.msg.message()
		r.fill(&msg, m.enqueuedAt, uint32(m.attempts), m.crashes, m.hist, e.keyForPlacement(m.msg.Key))
		e.ctr.added.Add(1)
		if m.state == stLeased {
			e.recovered.crashed++
			crashes := m.crashes + 1
			if int(crashes) >= e.opts.CrashLoopLimit {
				e.recovered.poisoned++
				cause := fmt.Sprintf("leased at %d consecutive crashes", crashes)
				if err := e.deadLetter(slot, r, classify.Poison, cause, now, false); err != nil {
					return err
				}
				continue
			}
			r.crashes.Store(crashes)
			if !r.expired(now) {
				notes = append(notes, requeueRecord(id, now, uint32(m.attempts), crashes))
			}
		}
		if r.expired(now) {
			// Its TTL timer would fire at once.
			if err := e.expire(slot, r, now, false); err != nil {
				return err
			}
			continue
		}
		if m.expiresAt != 0 {
			e.hk.schedule(m.expiresAt, schedTTL(id))
		}
		due := int64(0)
		if m.state == stDelayed && m.nextAt > now {
			due = m.nextAt
		}
		e.place(slot, r, due, m.nextAt, now)
	}
	e.restorePauses(rs.pauses, now)
	if rs.maxID > e.nextID.Load() {
		e.nextID.Store(rs.maxID)
	}
	e.ctr.enqueuedBase = e.nextID.Load()
	if len(notes) > 0 {
		if err := e.log.AppendBatch(notes); err != nil {
			return fmt.Errorf("ringwal: logging crash recovery: %w", err)
		}
		e.opts.Logger.Warn("ringwal: messages were leased at a crash", "requeued", len(notes), "poisoned", e.recovered.poisoned)
	}
	return nil
}

// readySince is when a recovered message became (or, placed at now,
// becomes) ready: a delayed one at its due time, one leased at a crash
// now, a pending one when its records say (see applyEnqueue and
// applyRequeue). For a delayed one not yet due it only orders.
func (m *recovered) readySince(now int64) int64 {
	switch {
	case m.state == stDelayed:
		return m.nextAt
	case m.state == stLeased || m.nextAt == 0:
		return now
	}
	return m.nextAt
}

// requeueLeasedOnClose logs every leased message as requeued, so that a
// clean Close is not counted as a crash against them when restore meets
// them again.
func (e *Engine) requeueLeasedOnClose() error {
	now := e.now()
	var recs []wal.Record
	e.slab.each(func(_ uint32, r *rec) {
		w := r.stable()
		if w.state() != stLeased {
			return
		}
		recs = append(recs, requeueRecord(r.id.Load(), now, w.attempts(), r.crashes.Load()))
	})
	if len(recs) == 0 {
		return nil
	}
	return e.log.AppendBatch(recs)
}
