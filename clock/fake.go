package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a Clock that only moves when Advance or Set is called. Timers and
// tickers fire synchronously inside Advance, in time order, so a test that
// advances past a deadline observes its effect deterministically (the
// receiver still runs on its own goroutine; use BlockUntil and polling for
// that side).
//
// Fake is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeWaiter
	changed *sync.Cond
}

// NewFake returns a Fake clock set to start. A zero start means a fixed,
// arbitrary instant (2026-01-01 UTC), so that tests are reproducible.
func NewFake(start time.Time) *Fake {
	if start.IsZero() {
		start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	f := &Fake{now: start}
	f.changed = sync.NewCond(&f.mu)
	return f
}

type fakeWaiter struct {
	clock  *Fake
	at     time.Time
	period time.Duration // > 0 for tickers
	ch     chan time.Time
	active bool
}

// Now returns the fake current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns Now().Sub(t).
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// Sleep blocks until the clock has been advanced by d.
func (f *Fake) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	<-f.NewTimer(d).C()
}

// NewTimer returns a Timer that fires when the clock reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWaiter{clock: f, ch: make(chan time.Time, 1)}
	f.arm(w, d)
	return fakeTimer{w}
}

// NewTicker returns a Ticker that fires every d of fake time.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWaiter{clock: f, ch: make(chan time.Time, 1), period: d}
	f.arm(w, d)
	return fakeTicker{w}
}

// arm schedules w at now+d; f.mu must be held.
func (f *Fake) arm(w *fakeWaiter, d time.Duration) {
	w.at = f.now.Add(d)
	if !w.active {
		w.active = true
		f.waiters = append(f.waiters, w)
	}
	f.changed.Broadcast()
	if d <= 0 {
		f.fireDue()
	}
}

// disarm removes w; f.mu must be held. It reports whether w was active.
func (f *Fake) disarm(w *fakeWaiter) bool {
	if !w.active {
		return false
	}
	w.active = false
	for i, o := range f.waiters {
		if o == w {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			break
		}
	}
	f.changed.Broadcast()
	return true
}

// Advance moves the clock forward by d, firing every timer and ticker that
// falls due on the way, in time order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advanceTo(f.now.Add(d))
}

// Set moves the clock to t (never backwards), firing what falls due.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.now) {
		f.advanceTo(t)
	}
}

func (f *Fake) advanceTo(end time.Time) {
	for {
		next := f.nextDue(end)
		if next == nil {
			break
		}
		if next.at.After(f.now) {
			f.now = next.at
		}
		f.fireDue()
	}
	f.now = end
	f.changed.Broadcast()
}

// nextDue returns the earliest active waiter due at or before end.
func (f *Fake) nextDue(end time.Time) *fakeWaiter {
	var best *fakeWaiter
	for _, w := range f.waiters {
		if !w.at.After(end) && (best == nil || w.at.Before(best.at)) {
			best = w
		}
	}
	return best
}

// fireDue fires every waiter due at f.now; f.mu must be held.
func (f *Fake) fireDue() {
	due := f.waiters[:0:0]
	for _, w := range f.waiters {
		if !w.at.After(f.now) {
			due = append(due, w)
		}
	}
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, w := range due {
		select { // like time.Ticker, drop a tick nobody took
		case w.ch <- f.now:
		default:
		}
		if w.period > 0 {
			w.at = w.at.Add(w.period)
			if !w.at.After(f.now) {
				w.at = f.now.Add(w.period)
			}
		} else {
			f.disarm(w)
		}
	}
}

// Waiters returns the number of active timers and tickers.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil blocks until at least n timers or tickers are active, so a test
// can advance only once the goroutine under test is waiting.
func (f *Fake) BlockUntil(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.waiters) < n {
		f.changed.Wait()
	}
}

type fakeTimer struct{ w *fakeWaiter }

func (t fakeTimer) C() <-chan time.Time { return t.w.ch }

func (t fakeTimer) Stop() bool {
	f := t.w.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.disarm(t.w)
}

func (t fakeTimer) Reset(d time.Duration) bool {
	f := t.w.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	was := t.w.active
	f.arm(t.w, d)
	return was
}

type fakeTicker struct{ w *fakeWaiter }

func (t fakeTicker) C() <-chan time.Time { return t.w.ch }

func (t fakeTicker) Stop() {
	f := t.w.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	f.disarm(t.w)
}

func (t fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	f := t.w.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	t.w.period = d
	f.arm(t.w, d)
}
