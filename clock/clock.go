package clock

import "time"

// Clock is the source of time for everything in ringwal that waits or
// measures: the engine's due times, leases and TTLs, the breakers'
// windows, the timing wheel. It is two methods so that a test can supply
// its own; Fake is a ready-made one. Implementations must be safe for
// concurrent use, and Now must never go backwards.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer creates a Timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is the subset of *time.Timer that ringwal uses, as an interface so
// that a fake clock can provide its own. The engine resets and stops a
// timer only from the goroutine that owns it.
type Timer interface {
	// C is the channel on which the fire time is delivered.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was active.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether it was active.
	Reset(d time.Duration) bool
}

// Ticker is what Fake.NewTicker returns: the subset of *time.Ticker a
// test needs.
type Ticker interface {
	// C is the channel on which ticks are delivered.
	C() <-chan time.Time
	// Stop turns the ticker off.
	Stop()
	// Reset changes the period to d and restarts it.
	Reset(d time.Duration)
}

// Real returns the wall clock of package time.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                 { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
