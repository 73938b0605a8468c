package ringwal

import (
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/sched"
)

// The maintenance tasks, each a named function that the housekeeper's
// periodic entries run on the timer goroutine (and that tests call
// directly).

// maintain runs the periodic pass: every maintenanceEvery.
func (h *housekeeper) maintain(now int64) {
	e := h.e
	h.logDeadLetters()
	e.sweepDedup(now)
	e.sweepRetention(now)
	e.keys.sweep()
	e.compactDeadlines()
	e.checkpointIfDue()
	e.sampleHistory(now)
}

// logDeadLetters summarises, at Info, the messages dead-lettered since the
// last summary: one line per pass, never one per message.
func (h *housekeeper) logDeadLetters() {
	var attrs []any
	total := uint64(0)
	for _, cat := range classify.Categories() {
		i := categoryIndex(cat)
		n := h.e.ctr.deadLettered[i].Load()
		if d := n - h.deadLogged[i]; d > 0 {
			attrs = append(attrs, cat.String(), d)
			total += d
		}
		h.deadLogged[i] = n
	}
	if total > 0 {
		h.e.opts.Logger.Info("ringwal: messages dead-lettered", append([]any{"count", total}, attrs...)...)
	}
	if n := h.e.ctr.deadEvicted.Load(); n != h.evictLogged {
		h.e.opts.Logger.Warn("ringwal: dead letters evicted at MaxDeadLetters, oldest first",
			"count", n-h.evictLogged, "max_dead_letters", h.e.opts.MaxDeadLetters)
		h.evictLogged = n
	}
}

// sweepDedup forgets DedupIDs older than the dedup window.
func (e *Engine) sweepDedup(now int64) {
	if e.opts.DedupWindow > 0 {
		e.dedup.sweep(now, int64(e.opts.DedupWindow))
	}
}

// sweepRetention removes reviewed dead letters past
// Options.DeadLetterRetention (and unreviewed ones past
// Options.UnreviewedRetention, if set), logging a purge record for each.
func (e *Engine) sweepRetention(now int64) {
	e.deadLeaveMu.RLock()
	defer e.deadLeaveMu.RUnlock()
	ids := e.dead.Sweep(time.Unix(0, now))
	if len(ids) == 0 {
		return
	}
	e.ctr.deadPurged.Add(uint64(len(ids)))
	for _, id := range ids {
		e.logPurgeNoWait(id, now)
	}
	e.opts.Logger.Info("ringwal: dead-letter retention removed entries", "count", len(ids))
}

// logPurgeNoWait journals dead letter id's removal by the engine itself
// (retention, the bound) as a purge, without waiting for the log: a crash
// before the write brings the dead letter back, and the same rule removes
// it again.
func (e *Engine) logPurgeNoWait(id uint64, now int64) {
	if e.log != nil {
		rec := purgeRecord(id, now)
		_ = e.log.AppendNoWait(&rec)
	}
}

// compactDeadlines drops stale entries from the deadline heap once it is
// large (entries are dropped lazily as consumers meet them otherwise).
func (e *Engine) compactDeadlines() {
	e.eachRun(func(rt *queueDelivery) {
		if dl := rt.sched.Deadlines(); dl.Len() > sched.DefaultCompactAbove {
			dl.Compact(e.validEntry)
		}
	})
}

// checkpointIfDue runs a checkpoint once the log has grown past
// Options.CheckpointBytes.
func (e *Engine) checkpointIfDue() {
	if e.log == nil || e.opts.CheckpointBytes <= 0 || e.log.Size() <= e.opts.CheckpointBytes {
		return
	}
	if err := e.Checkpoint(); err != nil {
		e.opts.Logger.Warn("ringwal: automatic checkpoint failed", "err", err)
	}
}

// scanLeases expires every lease due by now and returns when to scan next.
//
// Leases have no timer each: at a million deliveries a second, scheduling
// and cancelling a timer per lease would cost more than the delivery. All
// leases last LeaseTimeout, so one granted after this scan expires after
// now+LeaseTimeout; the next scan is at the earliest expiry seen, or
// then, whichever comes first. Under a stream of expiring leases scans
// are spaced at least LeaseTimeout/64 apart, bounding both their cost and
// how late an expiry can be. Extend schedules a timer of its own.
func (e *Engine) scanLeases(now int64) int64 {
	lt := e.minLease.Load() // the shortest of any queue
	earliest := now + lt
	e.slab.each(func(slot uint32, r *rec) {
		// A reader (Get, Peek, Stats) may own the record for a moment:
		// wait for a stable state rather than skip a lease.
		w := r.stable()
		if w.state() != stLeased || !r.own(w.gen(), stLeased) {
			return
		}
		if exp := r.at; exp > now {
			r.putBack(w)
			earliest = min(earliest, exp)
			return
		}
		e.expireBusyLease(slot, r, now)
	})
	return max(earliest, now+max(lt/64, int64(time.Millisecond)))
}
