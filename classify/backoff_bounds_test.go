package classify

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestBackoffNeverNegative: a zero Base times an infinite growth
// factor (a huge attempt, or Multiplier +Inf, which Normalize keeps) is
// NaN in float64; the delay must still be 0, never a negative duration.
func TestBackoffNeverNegative(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name    string
		p       RetryPolicy
		attempt int
		prev    time.Duration
	}{
		{"zero base, huge attempt", RetryPolicy{}, 5000, 0},
		{"zero base, MaxInt attempt", RetryPolicy{Multiplier: 3}, math.MaxInt, 0},
		{"zero base, +Inf multiplier", RetryPolicy{Multiplier: math.Inf(1)}, 2, 0},
		{"zero base, +Inf multiplier, decorrelated", RetryPolicy{Multiplier: math.Inf(1), Jitter: DecorrelatedJitter}, 2, 0},
		{"base, +Inf multiplier", RetryPolicy{Base: time.Second, Multiplier: math.Inf(1)}, 2, 0},
		{"base, +Inf multiplier, capped", RetryPolicy{Base: time.Second, Max: time.Minute, Multiplier: math.Inf(1)}, 3, 0},
		{"huge multiplier", RetryPolicy{Base: time.Second, Multiplier: math.MaxFloat64}, 3, 0},
		{"decorrelated huge prev", RetryPolicy{Base: time.Second, Jitter: DecorrelatedJitter, Multiplier: math.MaxFloat64}, 3, math.MaxInt64},
		{"negative prev", RetryPolicy{Base: time.Second, Jitter: DecorrelatedJitter}, 3, math.MinInt64},
	}
	for _, tt := range tests {
		for _, j := range []Jitter{NoJitter, FullJitter, EqualJitter, DecorrelatedJitter, ProportionalJitter} {
			p := tt.p
			if p.Jitter == NoJitter {
				p.Jitter = j
			}
			n := p.Normalize()
			for range 100 {
				d := p.BackoffRand(tt.attempt, tt.prev, r)
				if d < 0 || d > n.Max {
					t.Fatalf("%s, %s: Backoff(%d, %v) = %v, outside [0, %v]", tt.name, p.Jitter, tt.attempt, tt.prev, d, n.Max)
				}
			}
		}
	}
}

// FuzzReviewParseCategory: ParseCategory never panics, and whatever it
// accepts round-trips through String and the text marshalling.
func FuzzReviewParseCategory(f *testing.F) {
	for _, c := range Categories() {
		f.Add(c.String())
	}
	f.Add("Rate-Limited")
	f.Add("")
	f.Add("category(3)")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCategory(s)
		if err != nil {
			return
		}
		if !c.Valid() {
			t.Fatalf("ParseCategory(%q) = undeclared %d", s, c)
		}
		b, err := c.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Category
		if err := back.UnmarshalText(b); err != nil || back != c {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, c, b, back, err)
		}
	})
}
