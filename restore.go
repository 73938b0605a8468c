package ringwal

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/wal"
)

// restore places the replayed messages into the slab, tiers and wheel, in
// ID order so that each tier keeps its FIFO order. Messages leased at a
// crash come back pending with that attempt counted, or are dead-lettered
// as Poison once they were leased at CrashLoopLimit consecutive crashes.
func (e *Engine) restore(rs *replayState) error {
	// Tiers are FIFO: place messages in ID order. The log mostly has them
	// so already; a snapshot lists them by slot.
	order := make([]int32, 0, rs.count)
	for i := int32(0); i < rs.n; i++ {
		if rs.at(i).id != 0 {
			order = append(order, i)
		}
	}
	byID := func(a, b int32) int { return cmp.Compare(rs.at(a).id, rs.at(b).id) }
	if !slices.IsSortedFunc(order, byID) {
		slices.SortFunc(order, byID)
	}
	now := e.now()
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
		r.fill(&m.msg, m.enqueuedAt, m.expiresAt, uint32(m.attempts), m.crashes, m.hist, e.keyForPlacement(m.msg.Key))
		e.ctr.added.Add(1)
		if m.expiresAt != 0 {
			e.hk.schedule(m.expiresAt, schedTTL(id))
		}
		switch m.state {
		case stLeased:
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
			notes = append(notes, requeueRecord(id, now, uint32(m.attempts), crashes))
			e.place(slot, r, 0, now)
		case stDelayed:
			e.place(slot, r, m.nextAt, now)
		default:
			e.place(slot, r, 0, now)
		}
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
