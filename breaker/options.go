package breaker

import (
	"fmt"
	"time"

	"github.com/ringwal/ringwal/clock"
)

// State is a breaker's state. Closed is the zero value.
type State uint8

// The states.
const (
	// Closed lets every call through and counts failures.
	Closed State = iota
	// Open refuses every call until its open timeout ends (ReadyAt).
	Open
	// HalfOpen lets up to MaxProbes trial calls through at a time: enough
	// successes close the breaker, any failure opens it again.
	HalfOpen

	// evicted marks a breaker removed by a sweep; never reported. A
	// ticket or a racing Allow that still holds it sees a state that is
	// not Closed and takes the slow path, which looks the key up again.
	evicted
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// MarshalText implements encoding.TextMarshaler with String, for the admin
// API's JSON.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Defaults for the zero Options.
const (
	DefaultConsecutiveFailures = 5
	DefaultFailureRate         = 0.5
	DefaultMinCalls            = 20
	DefaultWindow              = 10 * time.Second
	DefaultBuckets             = 10
	DefaultOpenTimeout         = 5 * time.Second
	DefaultMaxOpenTimeout      = time.Minute
	DefaultMaxProbes           = 1
	DefaultSuccessThreshold    = 1
	DefaultIdleTTL             = 10 * time.Minute
)

// Options configures a Set. The zero value gives the defaults above.
type Options struct {
	// ConsecutiveFailures trips a closed breaker after that many failures
	// in a row. 0 means DefaultConsecutiveFailures (5); negative disables
	// this rule.
	ConsecutiveFailures int
	// FailureRate trips a closed breaker when at least this share of the
	// calls in the rolling Window failed, once there were MinCalls calls.
	// 0 means DefaultFailureRate (0.5); negative disables this rule.
	FailureRate float64
	// MinCalls is how many calls the window needs before FailureRate
	// applies. 0 or less means DefaultMinCalls (20).
	MinCalls int
	// Window is the span of the rolling window. 0 or less means
	// DefaultWindow (10s).
	Window time.Duration
	// Buckets is how many slices the window is counted in: calls leave the
	// window one bucket (Window/Buckets) at a time. 0 or less means
	// DefaultBuckets (10).
	Buckets int
	// OpenTimeout is how long a breaker stays open after its first trip.
	// It doubles on each further trip without a successful close in
	// between, up to MaxOpenTimeout. 0 or less means DefaultOpenTimeout.
	OpenTimeout time.Duration
	// MaxOpenTimeout caps the grown open timeout. 0 or less means
	// DefaultMaxOpenTimeout (1 min); below OpenTimeout means no growth.
	MaxOpenTimeout time.Duration
	// MaxProbes is how many calls a half-open breaker lets through at a
	// time; each Done or Release frees a slot. The bound is per half-open
	// period: a probe of an earlier period still out does not hold a slot
	// (its result will be ignored). 0 or less means DefaultMaxProbes (1).
	MaxProbes int
	// SuccessThreshold is how many probe successes close a half-open
	// breaker. 0 or less means DefaultSuccessThreshold (1).
	SuccessThreshold int
	// IdleTTL evicts a closed breaker that has recorded no result for this
	// long, so that keys seen once do not accumulate. 0 means
	// DefaultIdleTTL (10 min); negative never evicts.
	IdleTTL time.Duration
	// OnStateChange, if set, is called on every transition. It runs with no
	// breaker lock held, so it may call back into the Set. Calls are made
	// one at a time and in the order the transitions happened. So a call
	// may be made by whichever goroutine is already delivering. It may
	// come after the Allow or Done that caused it has returned. It must
	// not block for long: it delays every other notification.
	OnStateChange func(key string, from, to State)
	// Clock is the time source; nil means clock.Real().
	Clock clock.Clock
}

// withDefaults is the one place zero Options become defaults.
func (o Options) withDefaults() Options {
	if o.ConsecutiveFailures == 0 {
		o.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if o.FailureRate == 0 {
		o.FailureRate = DefaultFailureRate
	}
	if o.MinCalls <= 0 {
		o.MinCalls = DefaultMinCalls
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Buckets <= 0 {
		o.Buckets = DefaultBuckets
	}
	if o.Buckets > int(o.Window) {
		o.Buckets = int(o.Window) // buckets at least 1ns wide
	}
	if o.OpenTimeout <= 0 {
		o.OpenTimeout = DefaultOpenTimeout
	}
	if o.MaxOpenTimeout <= 0 {
		o.MaxOpenTimeout = DefaultMaxOpenTimeout
	}
	if o.MaxOpenTimeout < o.OpenTimeout {
		o.MaxOpenTimeout = o.OpenTimeout
	}
	if o.MaxProbes <= 0 {
		o.MaxProbes = DefaultMaxProbes
	}
	if o.SuccessThreshold <= 0 {
		o.SuccessThreshold = DefaultSuccessThreshold
	}
	if o.IdleTTL == 0 {
		o.IdleTTL = DefaultIdleTTL
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	return o
}

// openTimeout is the open duration after the streak-th consecutive trip:
// OpenTimeout·2^(streak-1), capped at MaxOpenTimeout.
func (o Options) openTimeout(streak int) time.Duration {
	d := o.OpenTimeout
	for i := 1; i < streak && d < o.MaxOpenTimeout; i++ {
		if d > o.MaxOpenTimeout/2 {
			return o.MaxOpenTimeout // doubling would reach the cap (or overflow)
		}
		d *= 2
	}
	return min(d, o.MaxOpenTimeout)
}
