package ringwal

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/pad"
)

// coarseTick is the resolution of the engine's cached clock.
const coarseTick = time.Millisecond

// coarseAskEvery is how many ticks pass between the ticker's questions
// "is anyone reading?" (see coarseClock). An unread clock parks after
// coarseAskEvery to 2*coarseAskEvery ticks (16-32 ms); a reader answers a
// question with one CAS, so under traffic that is one CAS per 16 ms in the
// whole process. Smaller would park sooner after sporadic traffic (each
// wake-up costs up to 2*coarseAskEvery ticks of CPU) at the price of more
// CASes; larger the reverse. Neither end matters much: 16 is a middle.
const coarseAskEvery = 16

// coarseClock caches the wall clock at millisecond resolution. Reading the
// clock costs 25-50 ns on the virtual machines this runs on, and the hot
// path needs a timestamp at enqueue, dequeue and ack: one atomic load
// instead keeps that path within a small multiple of a channel hand-off.
// Timestamps are usually at most coarseTick behind. They lag more when
// the ticker goroutine waits to be scheduled on a busy machine. So due
// times that a caller sets (Delay, TTL, a nack's backoff, Extend) count
// from the clock itself. Only lease expiries, set on the hot path, count
// from the cache, with a margin (effectiveOptions.leaseSlop).
//
// # Parking when idle
//
// A ticker waking every millisecond costs a few per cent of a core. An
// engine nobody uses must not cost that: it is linked into every replica
// of a service. So the ticker parks when nobody reads the cache,
// with no cost to the reader but one predictable branch. The cached value
// ns encodes the protocol in its sign:
//
//   - ns > 0: the time in unix ns; the fast path returns it (one load).
//   - ns < 0: the time negated. Every coarseAskEvery ticks the ticker
//     stores the time negated, asking "is anyone reading?", and keeps the
//     sign on the ticks in between. The first reader to see it negates it
//     back with one CAS (readers never write otherwise), answering "yes".
//   - ns == 0: parked. When the ticker asks again and finds its previous
//     question unanswered, nobody read for coarseAskEvery ticks: it stores
//     0, stops its ticker and blocks. The first reader to see 0 reads the
//     clock itself, stores that time and wakes the ticker. That costs a
//     mutex, a clock read and a channel send: about a microsecond, once
//     per idle spell. Readers that come after it see that time and the
//     fast path again.
//
// Guarantees: a read returns a time the clock showed at most a tick (plus
// the ticker's scheduling lag) before the read, the same bound as without
// parking. The values read, by any goroutines, never decrease unless the
// wall clock itself is stepped back. Each time stored was read from the
// clock after the previous store took effect. The ticker stores only
// while it runs, and a waking reader only while it is parked. The two
// hand over through the park store and the wake channel. Wakers take
// wakeMu so that a reader that saw a park long ago cannot store its stale
// reading into a later park (an ABA that a bare CAS on 0 would allow).
//
// The clock is assumed to read after 1970 (ns > 0). An earlier wall clock
// reads as 1 ns past the epoch.
//
// # Goroutine
//
// The engine's clock ticker is one goroutine, which newCoarseClock starts
// and the Engine owns. It runs while the engine is read. It parks while
// the engine is not: blocked on a channel, no timer armed, no CPU. It
// returns when close is called (Engine.Close, or Open failing). After close, readers
// read the clock itself on every call (the slow path), so a timestamp
// taken while closing is not stale.
type coarseClock struct {
	_  pad.Line
	ns atomic.Int64 // see the type comment: >0 time, <0 question, 0 parked
	_  [pad.CacheLine - 8]byte

	src    coarseSource
	wakeMu sync.Mutex    // serialises the wakers; see the type comment
	wake   chan struct{} // cap 1: one token per park, sent by the waker
	closed atomic.Bool   // set by the ticker as it exits
	stop   chan struct{}
	done   chan struct{}

	// Counters of the ticker's work, for tests (which wait on them instead
	// of sleeping) and for a debugger; one add per tick costs nothing.
	ticks atomic.Uint64 // ticks handled (stores made by the ticker)
	parks atomic.Uint64 // times parked (counted once the ticker is stopped)
	wakes atomic.Uint64 // times a reader woke it
}

// coarseSource is where a coarseClock reads the time and gets its ticks:
// the wall clock in an engine, a clock.Fake in this package's tests (which
// then move time and ticks by hand instead of sleeping).
type coarseSource interface {
	Now() time.Time
	NewTicker(d time.Duration) clock.Ticker
}

// wallSource is the coarseSource of an engine: package time.
type wallSource struct{}

func (wallSource) Now() time.Time { return time.Now() }
func (wallSource) NewTicker(d time.Duration) clock.Ticker {
	return wallTicker{time.NewTicker(d)}
}

type wallTicker struct{ t *time.Ticker }

func (w wallTicker) C() <-chan time.Time   { return w.t.C }
func (w wallTicker) Stop()                 { w.t.Stop() }
func (w wallTicker) Reset(d time.Duration) { w.t.Reset(d) }

// newCoarseClock starts a coarse clock over the wall clock; the caller
// owns its goroutine and must call close once.
func newCoarseClock() *coarseClock { return newCoarseClockOn(wallSource{}) }

// newCoarseClockOn starts a coarse clock over src; the caller must call
// close once.
func newCoarseClockOn(src coarseSource) *coarseClock {
	c := &coarseClock{
		src:  src,
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	c.ns.Store(c.read())
	// The ticker is created here, not in run, so that a test's fake source
	// has it armed when this returns.
	go c.run(src.NewTicker(coarseTick))
	return c
}

// read reads the source, as unix ns > 0.
func (c *coarseClock) read() int64 { return max(c.src.Now().UnixNano(), 1) }

// now returns the cached time in unix ns. It is the hot path: one atomic
// load and a branch taken only when the ticker asked or parked. Safe for
// concurrent use; lock-free except when it wakes a parked ticker, and
// never allocates.
func (c *coarseClock) now() int64 {
	if v := c.ns.Load(); v > 0 {
		return v
	}
	return c.slowNow()
}

// slowNow answers the ticker's question, or wakes it. Kept out of now so
// that now inlines. Safe for concurrent use.
func (c *coarseClock) slowNow() int64 {
	for {
		v := c.ns.Load()
		switch {
		case v > 0:
			return v // another reader answered first
		case v < 0:
			// Answer "yes": the same time, unmarked. If this CAS succeeds
			// after an ABA (the value changed and came back), the value is
			// still -v's negation, so the answer is still right.
			if c.ns.CompareAndSwap(v, -v) {
				return -v
			}
		default:
			if c.closed.Load() {
				return c.read()
			}
			if t, ok := c.wakeUp(); ok {
				return t
			}
		}
	}
}

// wakeUp stores the time and wakes the ticker if it is still parked; it
// reports false if it no longer is (the caller looks again).
func (c *coarseClock) wakeUp() (int64, bool) {
	c.wakeMu.Lock()
	defer c.wakeMu.Unlock()
	// Holding wakeMu, 0 means parked now, and stays so until the store
	// below: only a waker (which needs wakeMu) or the running ticker
	// (which is blocked) changes a 0. The clock is read after seeing 0, so
	// after the ticker's last reading: no time goes backwards.
	if c.ns.Load() != 0 || c.closed.Load() {
		return 0, false
	}
	t := c.read()
	c.ns.Store(t)
	c.wakes.Add(1)
	select {
	case c.wake <- struct{}{}:
	default: // cannot happen (one token per park), and must not block
	}
	return t, true
}

// run is the ticker goroutine; see the type comment. t is its ticker.
func (c *coarseClock) run(t clock.Ticker) {
	defer close(c.done)
	defer t.Stop()
	n := 0 // ticks since the last question
	for {
		select {
		case <-t.C():
		case <-c.stop:
			c.shut()
			return
		}
		n++
		ask := n == coarseAskEvery
		if ask {
			n = 0
		}
		parked := c.tick(ask)
		c.ticks.Add(1)
		if !parked {
			continue
		}
		// Parked: no timer armed, so the goroutine costs nothing until a
		// reader wakes it. A tick that fired before Stop may still sit in
		// the channel; drop it so that the count restarts cleanly.
		t.Stop()
		select {
		case <-t.C():
		default:
		}
		c.parks.Add(1) // after Stop: a test that sees it may Reset-wait
		select {
		case <-c.wake:
			// The waker stored a fresh time; the next store is a tick
			// from now, and the count of ticks restarts with it.
			t.Reset(coarseTick)
			n = 0
		case <-c.stop:
			c.shut()
			return
		}
	}
}

// tick stores the time, as a question if ask, and reports whether it
// parked instead (ask, and the previous question was not answered).
// Called only by the ticker goroutine while it runs.
func (c *coarseClock) tick(ask bool) (parked bool) {
	now := c.read()
	for {
		old := c.ns.Load()
		var v int64
		switch {
		case ask && old < 0:
			v = 0 // nobody read since the last question
		case ask, old < 0:
			v = -now // ask, or keep asking
		default:
			v = now
		}
		// Only readers race this, and only by answering (old < 0 to
		// -old), which makes this CAS fail and the loop look again.
		if c.ns.CompareAndSwap(old, v) {
			return v == 0
		}
	}
}

// shut leaves the clock closed: from now on readers read the source.
// Called by the ticker goroutine as it exits.
func (c *coarseClock) shut() {
	c.wakeMu.Lock()
	c.closed.Store(true)
	c.ns.Store(0)
	c.wakeMu.Unlock()
}

// close stops the ticker goroutine and waits for it to return. Call it
// once; reads stay safe afterwards (they read the clock).
func (c *coarseClock) close() {
	close(c.stop)
	<-c.done
}
