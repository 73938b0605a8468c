package classify

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedSchedule is the seed design's retry spec, "1 s, 2 s, 4 s, 8 s with
// ±10 % jitter", as one policy literal: five deliveries, so four delays.
var seedSchedule = RetryPolicy{
	MaxAttempts:    5,
	Base:           time.Second,
	Multiplier:     2,
	Jitter:         ProportionalJitter,
	JitterFraction: 0.10,
}

// TestProportionalJitterKeepsTheWrittenSchedule draws each of the seed
// schedule's delays many times from a seeded source and checks that every
// draw lies within ±10 % of 1 s, 2 s, 4 s and 8 s, that the draws reach
// both ends of that band (the spread is used, not just allowed), and that
// their mean is the written delay; after the fourth delay the policy gives
// up.
func TestProportionalJitterKeepsTheWrittenSchedule(t *testing.T) {
	require.NoError(t, seedSchedule.Validate())
	r := rand.New(rand.NewPCG(29, 10))
	for attempt, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		attempt++ // the attempt-th delivery failed
		require.True(t, seedSchedule.ShouldRetry(attempt, 0), "attempt %d is retried", attempt)
		lo, hi := want*9/10, want*11/10
		minD, maxD, sum := time.Duration(math.MaxInt64), time.Duration(0), 0.0
		const draws = 20000
		for range draws {
			d := seedSchedule.BackoffRand(attempt, 0, r)
			if d < lo || d > hi {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, lo, hi)
			}
			minD, maxD, sum = min(minD, d), max(maxD, d), sum+float64(d)
		}
		band := float64(hi - lo)
		assert.Less(t, float64(minD-lo), band/100, "attempt %d: the draws reach the band's low end", attempt)
		assert.Less(t, float64(hi-maxD), band/100, "attempt %d: the draws reach the band's high end", attempt)
		assert.InDelta(t, 1, sum/draws/float64(want), 0.005, "attempt %d: the mean is the written delay", attempt)
	}
	assert.False(t, seedSchedule.ShouldRetry(5, 0), "the fifth failure is the last")
}

// TestProportionalJitterFraction: a zero fraction means ±10 %, a fraction
// of 1 spreads over [0, 2v], Max caps the draw, and Normalize shows the
// effective fraction only for the proportional kind.
func TestProportionalJitterFraction(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	tests := []struct {
		name    string
		p       RetryPolicy
		attempt int
		lo, hi  time.Duration
	}{
		{"zero fraction is ±10 %", RetryPolicy{Base: 10 * time.Second, Jitter: ProportionalJitter}, 1, 9 * time.Second, 11 * time.Second},
		{"fraction 1", RetryPolicy{Base: 10 * time.Second, Jitter: ProportionalJitter, JitterFraction: 1}, 1, 0, 20 * time.Second},
		{"fraction 0.5, third attempt", RetryPolicy{Base: time.Second, Jitter: ProportionalJitter, JitterFraction: 0.5}, 3, 2 * time.Second, 6 * time.Second},
		{"Max caps the draw", RetryPolicy{Base: 10 * time.Second, Max: 10 * time.Second, Jitter: ProportionalJitter}, 1, 9 * time.Second, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 5000 {
				d := tt.p.BackoffRand(tt.attempt, 0, r)
				if d < tt.lo || d > tt.hi {
					t.Fatalf("%v outside [%v, %v]", d, tt.lo, tt.hi)
				}
			}
		})
	}
	assert.Equal(t, DefaultJitterFraction, RetryPolicy{Jitter: ProportionalJitter}.Normalize().JitterFraction)
	assert.Zero(t, RetryPolicy{Jitter: EqualJitter}.Normalize().JitterFraction, "other kinds ignore it")
	huge := RetryPolicy{Base: time.Duration(math.MaxInt64 / 2), Multiplier: 4, Jitter: ProportionalJitter, JitterFraction: 1}
	for range 100 {
		assert.GreaterOrEqual(t, huge.BackoffRand(3, 0, r), time.Duration(0), "a saturated delay does not overflow")
	}
}
