package ringwal

import (
	"sync"
	"time"

	"github.com/ringwal/ringwal/internal/sched"
)

// The housekeeper is the engine's one timer owner: a sched.Timers
// goroutine (which owns the timing wheel, fed through an MPSC ring) whose
// fire callback does what each entry asks. Besides the message timers
// (due, lease, TTL, breaker recheck) it carries its own periodic entries:
// the maintenance pass and the lease scan (maintenance.go), and a
// notification entry that calls Options.OnDeadLetter off the caller's
// goroutine. With nothing due it sleeps until the next entry: an idle
// engine wakes about once per maintenanceEvery.

// Timer kinds carried in sched.Entry.Kind. Due, lease and recheck entries
// name a slot and generation (stale once the record moves on); TTL entries
// name the message ID, since a TTL outlives the record's transitions.
const (
	timerDue         uint8 = iota + 1 // a delayed or retried message becomes ready
	timerLease                        // an extended lease may have ended (the others are found by scanLeases)
	timerTTL                          // a message's TTL ends
	timerRecheck                      // a key's breaker may admit its held messages
	timerNotify                       // new dead letters wait for Options.OnDeadLetter
	timerMaintain                     // the periodic maintenance pass
	timerLeaseScan                    // the lease scan
	timerKey                          // a key's pause ended or its tokens are due (ID: the key's id)
	timerMaxHold                      // a held message reached its key's MaxHold
	timerResumeAll                    // a Pause of all delivery ended
	timerQueueResume                  // a queue's Pause ended (ID: the queue's number)
	timerSchedule                     // a schedule's tick is due (ID: the schedule's id, Gen: its generation)
)

const (
	// maintenanceEvery is how often (in clock time) the maintenance pass
	// runs.
	maintenanceEvery = time.Second
	// feedCapacity bounds timer requests waiting for the housekeeper
	// before they spill to its slow path: 128 KiB at 32 B a slot. A
	// schedule that leaves it half full wakes the housekeeper to drain
	// it (sched.Timers.Schedule), so only a burst of more than 2048
	// timers faster than one drain, or a housekeeper busy firing, spills.
	feedCapacity = 1 << 12
)

type housekeeper struct {
	e      *Engine
	timers *sched.Timers

	dlMu    sync.Mutex
	dlQueue []DeadLetter // for Options.OnDeadLetter

	// Owned by the timer goroutine.
	deadLogged [numCategories]uint64 // per-category totals at the last summary
	// evictLogged is ctr.deadEvicted at the last summary.
	evictLogged uint64
}

func newHousekeeper(e *Engine) *housekeeper {
	h := &housekeeper{e: e}
	h.timers = sched.NewTimers(e.clock, sched.TimerOptions{
		Tick:     time.Millisecond,
		Capacity: feedCapacity,
		Live:     h.liveTimer,
	}, h.fire)
	// Scheduled here, not when the goroutine starts: time may move (a
	// test's fake clock) before it first runs.
	now := e.clock.Now().UnixNano()
	h.schedule(now+int64(maintenanceEvery), sched.Entry{Kind: timerMaintain})
	h.schedule(now+int64(e.opts.LeaseTimeout), sched.Entry{Kind: timerLeaseScan})
	return h
}

// start starts the timer goroutine.
func (h *housekeeper) start() { h.timers.Start() }

// stop ends the goroutine and waits for it; safe to call more than once or
// before start, never from fire.
func (h *housekeeper) stop() { h.timers.Stop() }

// schedule asks for en to fire at at (unix ns), never before. Safe for
// concurrent use; lock-free unless the feed is full.
func (h *housekeeper) schedule(at int64, en sched.Entry) {
	h.timers.Schedule(time.Unix(0, at), en)
}

// deadLettered queues a new dead letter for Options.OnDeadLetter, which
// the timer goroutine calls. Safe for concurrent use.
func (h *housekeeper) deadLettered(d DeadLetter) {
	if h.e.opts.OnDeadLetter == nil {
		return
	}
	h.dlMu.Lock()
	h.dlQueue = append(h.dlQueue, d)
	first := len(h.dlQueue) == 1
	h.dlMu.Unlock()
	if first {
		h.schedule(0, sched.Entry{Kind: timerNotify}) // due at once
	}
}

// fire does what a timer entry asks; it runs on the timer goroutine.
func (h *housekeeper) fire(at time.Time, en sched.Entry) {
	e := h.e
	// The wheel never fires early, so the time is at least at. It reads
	// the clock itself, not the engine's cache. The cache may lag, and an
	// entry judged not yet due by it would be dropped: a lease or a TTL
	// that then never ends. And an idle engine must not keep the cache
	// ticking.
	now := max(e.clock.Now().UnixNano(), at.UnixNano())
	if namesRecord(en.Kind) && !e.slab.at(uint32(en.ID)).names(en) {
		return // its message has moved on (the entry's own checks follow)
	}
	switch en.Kind {
	case timerDue:
		e.becomeDue(uint32(en.ID), en.Gen, now)
	case timerLease:
		e.expireLease(en, now)
	case timerTTL:
		e.expireTTL(en.ID, now)
	case timerRecheck:
		e.releaseHeld(en.ID)
	case timerNotify:
		h.notifyDeadLetters()
	case timerMaintain:
		h.maintain(now)
		h.schedule(now+int64(maintenanceEvery), en)
	case timerLeaseScan:
		h.schedule(e.scanLeases(now), en)
	case timerKey:
		e.recheckKey(en.ID, now)
	case timerMaxHold:
		e.expireHold(uint32(en.ID), en.Gen, now)
	case timerResumeAll:
		e.endPauseAll(now)
	case timerQueueResume:
		e.endQueuePause(uint16(en.ID), now)
	case timerSchedule:
		e.scheduleDue(en)
	}
}

// notifyDeadLetters calls Options.OnDeadLetter for the queued dead letters.
func (h *housekeeper) notifyDeadLetters() {
	h.dlMu.Lock()
	q := h.dlQueue
	h.dlQueue = nil
	h.dlMu.Unlock()
	for _, d := range q {
		h.e.opts.OnDeadLetter(d)
	}
}

// liveTimer reports whether a timer entry can still matter (the wheel's
// compaction drops the others).
func (h *housekeeper) liveTimer(en sched.Entry) bool {
	e := h.e
	switch {
	case en.Kind == timerTTL:
		_, ok := e.slab.find(en.ID)
		return ok
	case namesRecord(en.Kind):
		return e.slab.at(uint32(en.ID)).names(en)
	}
	return true // the key rechecks and the housekeeper's own entries
}

// namesRecord reports whether entries of kind name a record by slot,
// generation and message ID (entryFor) rather than by message or key ID.
func namesRecord(kind uint8) bool {
	return kind == timerDue || kind == timerLease || kind == timerMaxHold
}

func schedTTL(id uint64) sched.Entry { return sched.Entry{ID: id, Kind: timerTTL} }
