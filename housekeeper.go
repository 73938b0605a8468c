package ringwal

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/ring"
	"github.com/ringwal/ringwal/sched"
	"github.com/ringwal/ringwal/wal"
)

// Timer kinds carried in sched.Entry.Kind. Due, lease and recheck entries
// name a slot and generation (stale once the record moves on); TTL entries
// name the message ID, since a TTL outlives the record's transitions.
const (
	timerDue     uint8 = iota + 1 // a delayed or retried message becomes ready
	timerLease                    // an extended lease may have ended (the others are found by scanLeases)
	timerTTL                      // a message's TTL ends
	timerRecheck                  // a key's breaker may admit its held messages
)

const (
	// maintenanceEvery is how often (in clock time) the housekeeper sweeps
	// dedup entries and dead-letter retention and considers a checkpoint.
	maintenanceEvery = time.Second
	// feedCapacity bounds timer requests waiting for the housekeeper.
	feedCapacity = 1 << 16
	// compactMin is the wheel size below which stale entries are not worth
	// a sweep.
	compactMin = 1 << 16
)

type timerReq struct {
	at int64
	en sched.Entry
}

// housekeeper is the goroutine that owns the timing wheel (see engine.go's
// goroutine list). Other goroutines reach it only through schedule (an
// MPSC ring) and deadLettered.
type housekeeper struct {
	e     *Engine
	wheel *sched.Wheel
	feed  *ring.Ring[timerReq]

	overflowMu sync.Mutex // requests that found the feed full (rare)
	overflow   []timerReq
	overflowed atomic.Bool

	wake   chan struct{}
	wakeAt atomic.Int64 // when the owner will look at the feed next, unix ns
	stopC  chan struct{}
	doneC  chan struct{}
	once   sync.Once
	runnin atomic.Bool

	dlMu    sync.Mutex
	dlQueue []DeadLetter

	lastMaintenance int64
	compactedLen    int
	deadLogged      [numCategories]uint64 // per-category totals at the last summary
	nextLeaseScan   int64
}

func newHousekeeper(e *Engine) *housekeeper {
	h := &housekeeper{
		e:     e,
		wheel: sched.NewWheel(time.Millisecond, e.clock.Now()),
		feed:  ring.New[timerReq](feedCapacity),
		wake:  make(chan struct{}, 1),
		stopC: make(chan struct{}),
		doneC: make(chan struct{}),
	}
	h.wakeAt.Store(math.MinInt64) // until it runs, everything signals
	// Set here, not in run: time may move (a test's fake clock) before the
	// goroutine first runs.
	h.lastMaintenance = e.now()
	h.nextLeaseScan = h.lastMaintenance + int64(e.opts.LeaseTimeout)
	return h
}

func (h *housekeeper) start() {
	h.runnin.Store(true)
	go h.run()
}

// stop ends the goroutine and waits for it; safe to call more than once or
// before start.
func (h *housekeeper) stop() {
	h.once.Do(func() {
		close(h.stopC)
		if h.runnin.Load() {
			<-h.doneC
		}
	})
}

// schedule asks for en to fire at at (unix ns). Safe for concurrent use;
// lock-free unless the feed is full.
func (h *housekeeper) schedule(at int64, en sched.Entry) {
	req := timerReq{at: at, en: en}
	if !h.feed.TryPush(req) {
		h.overflowMu.Lock()
		h.overflow = append(h.overflow, req)
		h.overflowed.Store(true)
		h.overflowMu.Unlock()
		h.signal()
		return
	}
	if at < h.wakeAt.Load() || h.feed.Len() > feedCapacity/2 {
		h.signal()
	}
}

func (h *housekeeper) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// deadLettered queues a new dead letter for Options.OnDeadLetter.
func (h *housekeeper) deadLettered(d DeadLetter) {
	if h.e.opts.OnDeadLetter == nil {
		return
	}
	h.dlMu.Lock()
	h.dlQueue = append(h.dlQueue, d)
	h.dlMu.Unlock()
	h.signal()
}

func (h *housekeeper) run() {
	defer close(h.doneC)
	e := h.e
	timer := e.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		h.drain()
		now := e.clock.Now()
		h.wheel.Advance(now, h.fire)
		h.dispatchDeadLetters()
		nowNs := now.UnixNano()
		if nowNs-h.lastMaintenance >= int64(maintenanceEvery) {
			h.maintain(nowNs)
			h.lastMaintenance = nowNs
		}
		if nowNs >= h.nextLeaseScan {
			h.nextLeaseScan = h.scanLeases(nowNs)
		}
		next := min(h.lastMaintenance+int64(maintenanceEvery), h.nextLeaseScan)
		if at, ok := h.wheel.NextAt(); ok && at.UnixNano() < next {
			next = at.UnixNano()
		}
		h.wakeAt.Store(next)
		// A request pushed before wakeAt was published may not have
		// signalled: look once more before sleeping.
		if h.feed.Len() > 0 || h.overflowed.Load() {
			continue
		}
		if !h.arm(timer, next) {
			continue // due already: another pass
		}
		select {
		case <-timer.C():
		case <-h.wake:
			timer.Stop()
		case <-h.stopC:
			return
		}
	}
}

// arm sets timer to fire at next (unix ns) and reports false if next has
// already come. Timers are relative, so the clock is read right before
// arming and again after: if it moved in between (a test's fake clock
// advancing, a descheduled goroutine), the timer may be armed late by that
// much, and it is armed again from the newer reading.
func (h *housekeeper) arm(timer clock.Timer, next int64) bool {
	for {
		before := h.e.clock.Now().UnixNano()
		if before >= next {
			timer.Stop()
			return false
		}
		timer.Reset(time.Duration(max(next-before, int64(time.Microsecond))))
		if moved := h.e.clock.Now().UnixNano() - before; moved < int64(armSlack) {
			return true
		}
	}
}

// armSlack is how far the clock may move while arming before arm tries
// again: far below the wheel's tick, far above a clock read.
const armSlack = 100 * time.Microsecond

// drain moves requests from the feed (and overflow) into the wheel.
func (h *housekeeper) drain() {
	var buf [256]timerReq
	for {
		n := h.feed.PopBatch(buf[:])
		for _, req := range buf[:n] {
			h.wheel.Add(time.Unix(0, req.at), req.en)
		}
		if n < len(buf) {
			break
		}
	}
	if h.overflowed.Load() {
		h.overflowMu.Lock()
		reqs := h.overflow
		h.overflow = nil
		h.overflowed.Store(false)
		h.overflowMu.Unlock()
		for _, req := range reqs {
			h.wheel.Add(time.Unix(0, req.at), req.en)
		}
	}
}

func (h *housekeeper) fire(at time.Time, en sched.Entry) {
	e := h.e
	// The wheel never fires early, so it is at least at. The cached clock
	// may lag behind it, and an entry judged not yet due by that clock
	// would be dropped (a lease, a TTL that then never ends).
	now := max(e.now(), at.UnixNano())
	switch en.Kind {
	case timerDue:
		slot := uint32(en.ID)
		r := e.slab.at(slot)
		if !r.acquire(en.Gen, stDelayed) {
			return
		}
		if r.expired(now) {
			_ = e.deadLetter(slot, r, classify.Expired, "ttl expired while delayed", now, false)
			return
		}
		e.makeReady(slot, r, now)
	case timerLease:
		e.expireLease(en, now)
	case timerTTL:
		e.expireTTL(en.ID, now)
	case timerRecheck:
		e.releaseHeld(en.ID)
	}
}

func (h *housekeeper) dispatchDeadLetters() {
	h.dlMu.Lock()
	q := h.dlQueue
	h.dlQueue = nil
	h.dlMu.Unlock()
	for _, d := range q {
		h.e.opts.OnDeadLetter(d)
	}
}

// maintain runs the periodic sweeps.
func (h *housekeeper) maintain(now int64) {
	e := h.e
	h.logDeadLetters()
	if e.opts.DedupWindow > 0 {
		e.dedup.sweep(now, int64(e.opts.DedupWindow))
	}
	if ids := e.dead.Sweep(time.Unix(0, now)); len(ids) > 0 && e.log != nil {
		for _, id := range ids {
			rec := wal.Record{Kind: wal.KindPurge, ID: id, Time: now}
			_ = e.log.AppendNoWait(&rec)
		}
		e.opts.Logger.Info("ringwal: dead-letter retention removed entries", "count", len(ids))
	}
	if n := h.wheel.Len(); n > compactMin && n > 2*h.compactedLen {
		h.wheel.Compact(h.liveTimer)
		h.compactedLen = h.wheel.Len()
	}
	if dl := e.sched.Deadlines(); dl.Len() > compactMin {
		dl.Compact(e.validEntry)
	}
	if e.log != nil && e.opts.CheckpointBytes > 0 && e.log.Size() > e.opts.CheckpointBytes {
		if err := e.Checkpoint(); err != nil {
			e.opts.Logger.Warn("ringwal: automatic checkpoint failed", "err", err)
		}
	}
}

// logDeadLetters summarises, at Info, the messages dead-lettered since the
// last maintenance pass: one line per pass, never one per message.
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
func (h *housekeeper) scanLeases(now int64) int64 {
	e := h.e
	lt := int64(e.opts.LeaseTimeout)
	earliest := now + lt
	e.slab.each(func(slot uint32, r *rec) {
		// A reader (Get, Peek, Stats) may hold the record stBusy for a
		// moment: wait for a stable state rather than skip a lease.
		w := r.stableWord()
		if wordState(w) != stLeased || !r.acquire(wordGen(w), stLeased) {
			return
		}
		if exp := r.leaseExpiry; exp > now {
			r.word.Store(w)
			earliest = min(earliest, exp)
			return
		}
		e.expireBusyLease(slot, r, now)
	})
	return max(earliest, now+max(lt/64, int64(time.Millisecond)))
}

// liveTimer reports whether a timer entry can still matter.
func (h *housekeeper) liveTimer(en sched.Entry) bool {
	e := h.e
	switch en.Kind {
	case timerTTL:
		_, ok := e.slab.find(en.ID)
		return ok
	case timerRecheck:
		return true
	}
	w := e.slab.at(uint32(en.ID)).word.Load()
	return wordGen(w) == en.Gen
}

func schedTTL(id uint64) sched.Entry { return sched.Entry{ID: id, Kind: timerTTL} }
