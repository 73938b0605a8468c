package sched

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/pad"
	"github.com/ringwal/ringwal/ring"
)

// DefaultTimerCapacity is the feed ring's capacity when TimerOptions leaves
// it at zero: 4096 slots of 32 bytes, 128 KiB. A producer that finds the
// feed half full wakes the owner, so a burst larger than the feed spills
// only when the owner cannot drain it in time (see Schedule).
const DefaultTimerCapacity = 4096

// drainBatch is how many requests the owner pops from the feed at a time.
const drainBatch = 256

// Sentinels of Timers.sleepUntil. Any other value is the due offset (from
// Timers.start) before which a newly scheduled entry must wake the owner.
const (
	ownerBusy = math.MinInt64 // processing: it will see the feed anyway
	ownerIdle = math.MaxInt64 // waiting with nothing pending: any entry wakes it
)

// DefaultCompactAbove is the wheel size below which Timers does not
// compact when TimerOptions leaves CompactAbove at zero.
const DefaultCompactAbove = 1 << 16

// TimerOptions configures Timers; the zero value is ready to use.
type TimerOptions struct {
	Tick     time.Duration // wheel resolution; 0 = DefaultTick
	Capacity int           // feed ring capacity (rounded up to a power of two); 0 = DefaultTimerCapacity
	// Live, if set, tells entries that can still matter from those whose
	// subject moved on (cancellation is lazy). Once the wheel holds more
	// than CompactAbove entries and twice as many as after the last
	// compaction, the owner drops the entries Live rejects (Wheel.Compact),
	// so that a stream of cancelled timers cannot grow the wheel without
	// bound. It runs on the owner goroutine.
	Live         func(Entry) bool
	CompactAbove int // 0 = DefaultCompactAbove
}

// timerRequest is what producers hand to the owner through the feed. at is
// the due time as nanoseconds since Timers.start (what Wheel stores), not a
// time.Time: 24 bytes with no pointer, so a feed slot is 32 bytes and the
// ring neither clears popped slots nor holds anything for the garbage
// collector to scan.
type timerRequest struct {
	at int64
	e  Entry
}

// Timers is the goroutine that owns a Wheel. Producers hand it entries
// through a lock-free MPSC ring; it drains the ring into the wheel, fires
// what is due and sleeps on the Clock until the next due time or until a
// producer schedules something earlier.
//
// Only the owner goroutine touches the wheel, so the wheel needs no lock.
// fire runs on that goroutine, one entry at a time; a slow fire delays every
// later timer, so it should hand the entry off (push to a ring) rather than
// do the work.
type Timers struct {
	clock clock.Clock
	fire  func(at time.Time, e Entry)
	feed  *ring.Ring[timerRequest]
	start time.Time // the wheel's tick 0; due times travel as offsets from it
	half  int       // a push that leaves this many in the feed wakes the owner

	_ pad.Line
	// sleepUntil is written by the owner and compare-and-swapped by
	// producers; on its own line so that owner bookkeeping (wheelLen) does
	// not bounce it.
	sleepUntil pad.Int64

	wake     chan struct{} // capacity 1: a pending token is enough
	wheelLen atomic.Int64  // entries in the wheel, published by the owner

	// spill holds requests that found the feed full: a rare slow path that
	// may lock and allocate so that no entry is ever lost.
	spillMu  sync.Mutex
	spill    []timerRequest
	spillLen atomic.Int64
	spilled  atomic.Uint64 // entries ever spilled (Spilled)

	lifeMu  sync.Mutex
	started bool
	stopped bool
	stop    chan struct{}
	done    chan struct{}

	live         func(Entry) bool
	compactAbove int

	// Owned by the goroutine once started.
	wheel     *Wheel
	batch     []timerRequest
	spare     []timerRequest
	compacted int // wheel length after the last compaction
}

// NewTimers returns stopped Timers that call fire, on their own goroutine,
// for every scheduled entry once c reaches its time. The wheel's tick 0 is
// c.Now(). Call Start to run them and Stop to end them.
func NewTimers(c clock.Clock, o TimerOptions, fire func(at time.Time, e Entry)) *Timers {
	if c == nil {
		c = clock.Real()
	}
	if o.Capacity <= 0 {
		o.Capacity = DefaultTimerCapacity
	}
	if fire == nil {
		fire = func(time.Time, Entry) {}
	}
	if o.CompactAbove <= 0 {
		o.CompactAbove = DefaultCompactAbove
	}
	w := NewWheel(o.Tick, c.Now())
	feed := ring.New[timerRequest](o.Capacity)
	t := &Timers{
		clock: c,
		fire:  fire,
		feed:  feed,
		start: w.start,
		half:  max(feed.Cap()/2, 1),
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		wheel: w,
		batch: make([]timerRequest, drainBatch),

		live:         o.Live,
		compactAbove: o.CompactAbove,
	}
	t.sleepUntil.Store(ownerBusy)
	return t
}

// Schedule arranges for fire(at, e) to be called once the clock reaches at
// (at once if at is past), never before.
//
// Safe for concurrent use. Lock-free and allocation-free while the feed
// ring has room; when it is full the entry goes to a mutex-protected spill
// list instead of being lost (Spilled counts those), and never waits for
// the owner. It wakes a sleeping owner when at is earlier than the owner
// needs to wake anyway, or when its push leaves the feed half full, so
// that the owner drains a burst while the feed still has room. Entries
// scheduled after Stop are never fired.
func (t *Timers) Schedule(at time.Time, e Entry) {
	// The offset the wheel will store, as Wheel.Add computes it (at.Sub
	// saturates).
	off := int64(at.Sub(t.start))
	req := timerRequest{at: off, e: e}
	if !t.feed.TryPush(req) {
		t.spillMu.Lock()
		t.spill = append(t.spill, req)
		t.spillLen.Store(int64(len(t.spill)))
		t.spillMu.Unlock()
		t.spilled.Add(1)
		t.signal()
		return
	}
	// Dekker-style hand-shake with the owner's sleep (see run): the push
	// above is ordered before this load, and the owner's store of
	// sleepUntil before its re-check of the feed, so at least one of the
	// two sees the other. A busy owner drains the feed before it sleeps.
	// off is compared below ownerIdle, so that even the latest entry
	// wakes an idle owner.
	s := t.sleepUntil.Load()
	if s == ownerBusy || (min(off, ownerIdle-1) >= s && t.feed.Len() < t.half) {
		return
	}
	if t.sleepUntil.CompareAndSwap(s, ownerBusy) {
		// Only the producer that wins the swap sends: the rest see busy.
		t.signal()
	}
}

// Spilled returns how many entries have found the feed full and gone to
// the spill list since NewTimers: a feed too small for the bursts it gets,
// or an owner slowed by its fire callback. Safe for concurrent use.
func (t *Timers) Spilled() uint64 { return t.spilled.Load() }

func (t *Timers) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Len returns the approximate number of pending entries: queued in the feed
// or spill, or waiting in the wheel. Safe for concurrent use; lock-free.
func (t *Timers) Len() int {
	return t.feed.Len() + int(t.spillLen.Load()) + int(t.wheelLen.Load())
}

// Start starts the owner goroutine. It is a no-op if already started or
// stopped. Safe for concurrent use.
func (t *Timers) Start() {
	t.lifeMu.Lock()
	defer t.lifeMu.Unlock()
	if t.started || t.stopped {
		return
	}
	t.started = true
	go t.run()
}

// Stop stops the owner goroutine and waits until it has returned (and with
// it any fire call in progress). Pending entries are dropped. Idempotent,
// safe for concurrent use, and fine to call without Start. It must not be
// called from fire, which runs on the goroutine it waits for.
func (t *Timers) Stop() {
	t.lifeMu.Lock()
	if !t.stopped {
		t.stopped = true
		close(t.stop)
	}
	started := t.started
	t.lifeMu.Unlock()
	if started {
		<-t.done
	}
}

// run is the owner loop: drain, fire, sleep. It owns t.wheel.
func (t *Timers) run() {
	defer close(t.done)
	var (
		timer clock.Timer // created on first need, then Reset
		armed bool
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		t.sleepUntil.Store(ownerBusy)
		t.drain()
		t.wheel.Advance(t.clock.Now(), t.fire)
		t.compact()
		t.wheelLen.Store(int64(t.wheel.Len()))

		next, pending := t.wheel.NextAt()
		until := int64(ownerIdle)
		if pending {
			// Only an entry due before next needs a wake-up; later ones are
			// handled when the timer for next goes off (or once the feed
			// is half full).
			until = int64(next.Sub(t.start))
		}
		t.sleepUntil.Store(until)
		if t.feed.Len() > 0 || t.spillLen.Load() > 0 {
			continue // a producer raced with the store above
		}

		var timerC <-chan time.Time
		if pending {
			now := t.clock.Now()
			d := next.Sub(now)
			if d <= 0 {
				continue
			}
			if timer == nil {
				timer = t.clock.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			armed = true
			// If the clock moved while the timer was being armed (a fake
			// clock advanced by a test, or a preempted goroutine), the
			// timer is armed that much past next: past next, or more than
			// a tick past it, do not trust it; go round and arm it again
			// from the time it is now.
			if later := t.clock.Now(); !later.Before(next) || later.Sub(now) > time.Duration(t.wheel.tick) {
				continue
			}
			timerC = timer.C()
		} else if armed {
			timer.Stop()
			armed = false
		}

		select {
		case <-t.stop:
			return
		case <-t.wake:
		case <-timerC:
			armed = false
		}
	}
}

// compact drops dead entries once the wheel has grown well past its size
// after the last compaction (see TimerOptions.Live).
func (t *Timers) compact() {
	if n := t.wheel.Len(); t.live != nil && n > t.compactAbove && n > 2*t.compacted {
		t.wheel.Compact(t.live)
		t.compacted = t.wheel.Len()
	}
}

// drain moves everything queued by producers into the wheel.
func (t *Timers) drain() {
	for {
		n := t.feed.PopBatch(t.batch)
		for _, r := range t.batch[:n] {
			t.wheel.addOffset(r.at, r.e)
		}
		if n < len(t.batch) {
			break
		}
	}
	if t.spillLen.Load() == 0 {
		return
	}
	t.spillMu.Lock()
	spilled := t.spill
	t.spill = t.spare[:0] // swap buffers: the producers' slow path reuses ours
	t.spillLen.Store(0)
	t.spillMu.Unlock()
	for _, r := range spilled {
		t.wheel.addOffset(r.at, r.e)
	}
	t.spare = spilled[:0]
}
