package classify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Jitter selects how Backoff randomises a delay. The first four kinds are
// those of the AWS Architecture Blog post "Exponential Backoff and Jitter"
// (Marc Brooker, 2015), with its fixed factor 2 generalised to
// RetryPolicy.Multiplier; ProportionalJitter is the "±10 %" of a written
// retry schedule. Let v = min(Max, Base·Multiplier^(attempt-1)) and
// p = RetryPolicy.JitterFraction:
//
//	NoJitter            v
//	FullJitter          random in [0, v]
//	EqualJitter         v/2 + random in [0, v/2]
//	DecorrelatedJitter  min(Max, random in [Base, prev·(Multiplier+1)])
//	ProportionalJitter  min(Max, random in [v·(1-p), v·(1+p)])
//
// Decorrelated jitter ignores the attempt number and grows from the
// previous delay; at the default Multiplier 2 its factor is the post's 3.
type Jitter uint8

// The jitter kinds. NoJitter is the zero value.
const (
	// NoJitter uses the exponential delay as is. Synchronised clients stay
	// synchronised, so prefer a jittered kind for anything shared.
	NoJitter Jitter = iota
	// FullJitter draws uniformly from [0, v]: the least total work for
	// competing clients, at the price of occasional near-zero delays.
	FullJitter
	// EqualJitter keeps half of v and draws the other half: never less
	// than v/2, so a retry is never immediate.
	EqualJitter
	// DecorrelatedJitter draws from [Base, 3·prev] (at Multiplier 2),
	// capped at Max: it spreads well and needs the previous delay.
	DecorrelatedJitter
	// ProportionalJitter draws from v ± JitterFraction·v, capped at Max:
	// each delay stays near the schedule written down ("1 s, 2 s, 4 s, 8 s
	// with ±10 % jitter" is Base 1s, Multiplier 2, MaxAttempts 5,
	// JitterFraction 0.1), spread just enough that clients that failed
	// together do not retry together. A delay at Max only moves down, so
	// leave Max at 0 (no cap) for a schedule that ends before it.
	ProportionalJitter
)

var jitterNames = [...]string{"none", "full", "equal", "decorrelated", "proportional"}

// DefaultJitterFraction is the spread ProportionalJitter uses when
// RetryPolicy.JitterFraction is zero: ±10 %.
const DefaultJitterFraction = 0.1

// String returns "none", "full", "equal", "decorrelated" or "proportional".
func (j Jitter) String() string {
	if int(j) < len(jitterNames) {
		return jitterNames[j]
	}
	return fmt.Sprintf("jitter(%d)", uint8(j))
}

// DefaultMultiplier is the growth factor used when RetryPolicy.Multiplier
// is zero.
const DefaultMultiplier = 2

// RetryPolicy says how often and how soon a failed message is tried again.
// The zero value delivers once and never retries. The engine picks the
// policy by the failure's category (DefaultPolicy, overridden by
// Options.Policies); a message's own MaxAttempts, if set, replaces the
// policy's.
type RetryPolicy struct {
	// MaxAttempts counts deliveries, not retries: 3 means at most three
	// handlings, then the dead-letter queue. 0 or less means 1: deliver
	// once, never retry. For "until MaxElapsed", use a large number.
	MaxAttempts int
	// Base is the delay after the first failed delivery (before jitter).
	// 0 means retry at once.
	Base time.Duration
	// Max caps every delay. 0 means no cap (the delay saturates at the
	// largest time.Duration).
	Max time.Duration
	// Multiplier is the growth per attempt: the n-th failure waits
	// Base·Multiplier^(n-1). 0 means DefaultMultiplier (2); values in
	// (0, 1) are treated as 1 (a constant delay).
	Multiplier float64
	// Jitter randomises each delay; see Jitter.
	Jitter Jitter
	// JitterFraction is ProportionalJitter's spread, as a fraction of the
	// delay: 0.1 draws each delay from ±10 % around it. 0 means
	// DefaultJitterFraction (±10 %); at most 1. The other kinds ignore it.
	JitterFraction float64
	// MaxElapsed stops retrying once this much time has passed since the
	// message was enqueued, whatever MaxAttempts says; 0 means no limit.
	// See ShouldRetry.
	MaxElapsed time.Duration
}

// Normalize returns p with its zero and out-of-range fields replaced by
// what they mean (MaxAttempts ≥ 1, Multiplier ≥ 1, Max > 0). Every method
// uses it, so defaults live in this one place; call it to display the
// effective policy.
func (p RetryPolicy) Normalize() RetryPolicy {
	if p.MaxAttempts < 1 {
		p.MaxAttempts = 1
	}
	switch {
	case p.Multiplier == 0 || math.IsNaN(p.Multiplier):
		p.Multiplier = DefaultMultiplier
	case p.Multiplier < 1:
		p.Multiplier = 1
	}
	if p.Base < 0 {
		p.Base = 0
	}
	if p.Max <= 0 {
		p.Max = math.MaxInt64
	}
	if p.MaxElapsed < 0 {
		p.MaxElapsed = 0
	}
	if p.Jitter == ProportionalJitter {
		switch {
		case p.JitterFraction == 0 || math.IsNaN(p.JitterFraction):
			p.JitterFraction = DefaultJitterFraction
		case p.JitterFraction < 0:
			p.JitterFraction = 0
		case p.JitterFraction > 1:
			p.JitterFraction = 1
		}
	}
	return p
}

// Validate reports a policy that Normalize would have to guess about:
// negative durations or attempts, a NaN, infinite or negative Multiplier,
// an undeclared Jitter, a JitterFraction outside [0, 1], or Base above a
// non-zero Max. The error wraps
// ErrInvalid. The engine validates Options.Policies in Open.
func (p RetryPolicy) Validate() error {
	var why string
	switch {
	case p.MaxAttempts < 0:
		why = "MaxAttempts is negative"
	case p.Base < 0 || p.Max < 0 || p.MaxElapsed < 0:
		why = "a duration is negative"
	case math.IsNaN(p.Multiplier) || math.IsInf(p.Multiplier, 0) || p.Multiplier < 0:
		why = "Multiplier is not a finite number ≥ 0"
	case int(p.Jitter) >= len(jitterNames):
		why = "Jitter is not a declared kind"
	case !(p.JitterFraction >= 0 && p.JitterFraction <= 1): // also NaN
		why = "JitterFraction is not in [0, 1]"
	case p.Max > 0 && p.Base > p.Max:
		why = "Base is above Max"
	default:
		return nil
	}
	return fmt.Errorf("retry policy %+v: %s: %w", p, why, ErrInvalid)
}

// ShouldRetry reports whether a message whose attempts-th delivery just
// failed, elapsed after it was enqueued, may be delivered again: attempts
// < MaxAttempts and, if MaxElapsed is set, elapsed < MaxElapsed. A caller
// that wants to refuse a retry which would only fire after the budget can
// pass elapsed plus the chosen delay.
func (p RetryPolicy) ShouldRetry(attempts int, elapsed time.Duration) bool {
	p = p.Normalize()
	if attempts >= p.MaxAttempts {
		return false
	}
	return p.MaxElapsed == 0 || elapsed < p.MaxElapsed
}

// Backoff returns the delay before the next delivery after the attempt-th
// delivery failed. Attempt 1 is the first delivery; values below 1 count
// as 1. The prev argument is the delay returned for the previous failure,
// 0 for none; only DecorrelatedJitter reads it. The result lies in [0, Max] (see
// Jitter for each kind's range). Randomness comes from math/rand/v2's
// global source: safe for concurrent use, no allocation. Use BackoffRand
// to inject a source.
func (p RetryPolicy) Backoff(attempt int, prev time.Duration) time.Duration {
	return p.BackoffRand(attempt, prev, nil)
}

// BackoffRand is Backoff drawing from r; a nil r means math/rand/v2's
// global source. A *rand.Rand is not safe for concurrent use, so a shared
// r needs the caller's lock; tests pass a seeded one for reproducible
// sequences.
func (p RetryPolicy) BackoffRand(attempt int, prev time.Duration, r *rand.Rand) time.Duration {
	p = p.Normalize()
	if p.Jitter == DecorrelatedJitter {
		// The post's sleep = min(cap, random_between(base, sleep*3)),
		// starting from sleep = base.
		if prev < p.Base {
			prev = p.Base
		}
		hi := mulCap(prev, p.Multiplier+1, math.MaxInt64)
		return min(p.Max, p.Base+randN(hi-p.Base, r))
	}
	if attempt < 1 {
		attempt = 1
	}
	v := mulCap(p.Base, math.Pow(p.Multiplier, float64(attempt-1)), p.Max)
	switch p.Jitter {
	case FullJitter:
		return randN(v, r)
	case EqualJitter:
		half := v / 2
		return half + randN(half, r)
	case ProportionalJitter:
		d := mulCap(v, p.JitterFraction, v) // ≤ v, so v-d ≥ 0
		hi := v + d
		if hi < v { // overflowed
			hi = math.MaxInt64
		}
		return min(p.Max, v-d+randN(hi-(v-d), r))
	}
	return v
}

// Delay is the wait before the next delivery after err failed the
// attempt-th delivery: RetryAfter(err) if err carries one (an After
// wrapper or a server's Retry-After hint, used exactly, even beyond Max,
// because the target asked for it), else Backoff(attempt, prev).
func (p RetryPolicy) Delay(err error, attempt int, prev time.Duration) time.Duration {
	if d, ok := RetryAfter(err); ok {
		return d
	}
	return p.Backoff(attempt, prev)
}

// mulCap returns min(d·f, limit), computed in float64 so that a large
// attempt number saturates instead of overflowing. A zero d stays 0 even
// for an infinite f (0·Inf is NaN, which would convert to a negative
// duration).
func mulCap(d time.Duration, f float64, limit time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	x := float64(d) * f
	if !(x < float64(limit)) { // also NaN
		return limit
	}
	return time.Duration(x)
}

// randN returns a uniform duration in [0, n]; n ≥ 0.
func randN(n time.Duration, r *rand.Rand) time.Duration {
	if n <= 0 {
		return 0
	}
	// n+1 fits in a uint64 even for n = MaxInt64.
	if r == nil {
		return time.Duration(rand.Uint64N(uint64(n) + 1))
	}
	return time.Duration(r.Uint64N(uint64(n) + 1))
}

// defaultPolicies is the table in DefaultPolicy's comment.
var defaultPolicies = [numCategories]RetryPolicy{
	Unknown:     {MaxAttempts: 3, Base: 2 * time.Second, Max: 30 * time.Second, Multiplier: 2, Jitter: FullJitter},
	Transient:   {MaxAttempts: 5, Base: time.Second, Max: time.Minute, Multiplier: 2, Jitter: EqualJitter},
	Timeout:     {MaxAttempts: 5, Base: 2 * time.Second, Max: 2 * time.Minute, Multiplier: 2, Jitter: EqualJitter},
	RateLimited: {MaxAttempts: 6, Base: 5 * time.Second, Max: 5 * time.Minute, Multiplier: 2, Jitter: DecorrelatedJitter},
	Resource:    {MaxAttempts: 4, Base: 10 * time.Second, Max: 10 * time.Minute, Multiplier: 3, Jitter: DecorrelatedJitter},
	Permanent:   {MaxAttempts: 1},
	Poison:      {MaxAttempts: 1},
	Expired:     {MaxAttempts: 1},
}

// DefaultPolicy returns the built-in retry policy for category c (Unknown's
// for an undeclared c). MaxAttempts counts deliveries; the delays listed
// are before jitter, for failures 1, 2, 3, ...:
//
//	category      attempts  base  ×  max   jitter        delays
//	Transient        5      1s    2  1m    equal         1s 2s 4s 8s
//	Timeout          5      2s    2  2m    equal         2s 4s 8s 16s
//	RateLimited      6      5s    2  5m    decorrelated  5s..15s, then ×3 of the last, ≤ 5m
//	Resource         4      10s   3  10m   decorrelated  10s..40s, then ×4 of the last, ≤ 10m
//	Unknown          3      2s    2  30s   full          [0,2s] [0,4s]
//	Permanent        1      -                            no retry
//	Poison           1      -                            no retry
//	Expired          1      -                            no retry
//
// Transient follows the seed design's 1s-2s-4s-8s; equal jitter keeps each
// delay within [v/2, v]. The seed's exact "±10 %" is ProportionalJitter
// (see the RetryPolicy example), which an Options.Policies entry can set.
// Timeout waits longer because the target was slow, not down. RateLimited
// starts later and honours the target's Retry-After through Delay, which
// replaces the backoff when the error carries a hint. Resource exhaustion
// is local and slow to clear, so it backs off hardest and gives up soonest.
// Unknown is conservative: a few attempts, in case the error is permanent.
// None sets MaxElapsed.
func DefaultPolicy(c Category) RetryPolicy {
	if !c.Valid() {
		c = Unknown
	}
	return defaultPolicies[c]
}
