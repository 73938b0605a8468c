package ringwal

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/ring"
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
	// Allocating a tier's ring faults in its pages: a goroutine does it
	// while the loop below orders the messages.
	grown := make(chan struct{})
	go func() {
		defer close(grown)
		for t := range ring.NumTiers {
			if rs.tiers&(1<<t) != 0 {
				e.tiers.Tier(t)
			}
		}
	}()
	defer func() { <-grown }()
	// Tiers are FIFO in the order messages became ready, which is what
	// Peek reports too; IDs break ties (and order the rest). Replay left
	// the messages in their IDs' home slots, so slot order is mostly ID
	// order, wrapped around where IDs pass the slab's size.
	// An ordered key's messages go last and in ID order: the first placed
	// becomes the key's head, the rest wait in its queue behind it.
	s := rs.slab
	order := make([]uint32, 0, rs.count)
	var ordered []uint32
	for c, sts := range rs.states {
		for j, st := range sts {
			if st == 0 {
				continue
			}
			slot := uint32(c)<<slabChunkBits | uint32(j)
			r := s.at(slot)
			r.at = readySince(uint32(st), r.at, now) // from here on, when it is ready (a delayed one's due time)
			if e.keyOrdered(r.key) {
				ordered = append(ordered, slot)
			} else {
				order = append(order, slot)
			}
		}
	}
	sortRotated(order, func(a, b uint32) int {
		ra, rb := s.at(a), s.at(b)
		if c := cmp.Compare(ra.at, rb.at); c != 0 {
			return c
		}
		return cmp.Compare(ra.id.Load(), rb.id.Load())
	})
	sortRotated(ordered, func(a, b uint32) int { return cmp.Compare(s.at(a).id.Load(), s.at(b).id.Load()) })
	order = append(order, ordered...)
	// Every message enters the slab here (dead-lettered ones leave it
	// again, counted as they go).
	e.ctr.added.Add(int64(len(order)))
	var notes []wal.Record
	for _, slot := range order {
		r := s.at(slot)
		st := rs.state(slot)
		id := r.id.Load()
		// Set now that the message is known to live: keyForPlacement
		// counts it against its key.
		r.ks = e.keyForPlacement(r.key)
		if st == stLeased {
			e.recovered.crashed++
			crashes := r.crashes.Load() + 1
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
				notes = append(notes, requeueRecord(id, now, r.attempts(), crashes))
			}
		}
		if r.expired(now) {
			// Its TTL timer would fire at once.
			if err := e.expire(slot, r, now, false); err != nil {
				return err
			}
			continue
		}
		if exp := r.expiresAt(); exp != 0 {
			e.hk.schedule(exp, schedTTL(id))
		}
		due := int64(0)
		if st == stDelayed && r.at > now {
			due = r.at
		}
		e.place(slot, r, due, r.at, now)
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

// sortRotated sorts order by compare. Restore's order is usually sorted
// already, or sorted but for a rotation (slot order of IDs that wrap
// around the slab): both are recognised in one pass, a rotation undone
// in place, and only anything else is sorted.
func sortRotated(order []uint32, compare func(a, b uint32) int) {
	k := 0 // where the one descent is
	for i := 1; i < len(order); i++ {
		if compare(order[i-1], order[i]) > 0 {
			if k != 0 {
				slices.SortFunc(order, compare)
				return
			}
			k = i
		}
	}
	if k == 0 {
		return
	}
	if compare(order[len(order)-1], order[0]) > 0 {
		slices.SortFunc(order, compare)
		return
	}
	// order is B A with A and B sorted and A before B: reversing each
	// and then the whole gives A B.
	slices.Reverse(order[:k])
	slices.Reverse(order[k:])
	slices.Reverse(order)
}

// readySince is when a recovered message in state st became (or, placed
// at now, becomes) ready, given its at as replay left it: a delayed one at
// its due time, one leased at a crash now, a pending one when its records
// say (see applyEnqueue and applyRequeue). For a delayed one not yet due
// it only orders.
func readySince(st uint32, at, now int64) int64 {
	switch {
	case st == stDelayed:
		return at
	case st == stLeased || at == 0:
		return now
	}
	return at
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
