package clock

import "time"

// Clock is the source of time for everything in ringwal that waits or
// measures. Implementations are safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Since returns the time elapsed since t.
	Since(t time.Time) time.Duration
	// NewTimer creates a Timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
	// NewTicker creates a Ticker that fires every d (d must be > 0).
	NewTicker(d time.Duration) Ticker
	// Sleep blocks for d.
	Sleep(d time.Duration)
}

// Timer is the subset of *time.Timer that ringwal uses, as an interface so
// that Fake can provide its own.
type Timer interface {
	// C is the channel on which the fire time is delivered.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was active.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether it was active.
	Reset(d time.Duration) bool
}

// Ticker is the subset of *time.Ticker that ringwal uses.
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

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) Since(t time.Time) time.Duration { return time.Since(t) }
func (realClock) Sleep(d time.Duration)           { time.Sleep(d) }
func (realClock) NewTimer(d time.Duration) Timer  { return realTimer{time.NewTimer(d)} }
func (realClock) NewTicker(d time.Duration) Ticker {
	return realTicker{time.NewTicker(d)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }
