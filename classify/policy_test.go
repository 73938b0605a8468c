package classify

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const samples = 100_000

func TestBackoffNoJitterSequence(t *testing.T) {
	tests := []struct {
		name string
		p    RetryPolicy
		want []time.Duration // for attempts 1, 2, ...
	}{
		{"transient default", DefaultPolicy(Transient).withJitter(NoJitter),
			secs(1, 2, 4, 8, 16, 32, 60, 60)},
		{"multiplier 3, cap 100s", RetryPolicy{Base: time.Second, Max: 100 * time.Second, Multiplier: 3},
			secs(1, 3, 9, 27, 81, 100, 100)},
		{"zero multiplier means 2", RetryPolicy{Base: time.Second, Max: time.Hour},
			secs(1, 2, 4, 8)},
		{"multiplier 1 is constant", RetryPolicy{Base: time.Second, Multiplier: 1},
			secs(1, 1, 1)},
		{"multiplier below 1 is 1", RetryPolicy{Base: time.Second, Multiplier: 0.5},
			secs(1, 1, 1)},
		{"zero base retries at once", RetryPolicy{MaxAttempts: 3}, secs(0, 0, 0)},
		{"max below base caps", RetryPolicy{Base: 10 * time.Second, Max: time.Second}, secs(1, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range tt.want {
				assert.Equal(t, want, tt.p.Backoff(i+1, 0), "attempt %d", i+1)
			}
		})
	}
}

func TestBackoffSaturates(t *testing.T) {
	noCap := RetryPolicy{Base: time.Second}
	assert.Equal(t, time.Duration(math.MaxInt64), noCap.Backoff(1000, 0), "no cap: saturates, no overflow")
	assert.Equal(t, time.Duration(math.MaxInt64), noCap.Backoff(math.MaxInt, 0))
	capped := RetryPolicy{Base: time.Second, Max: time.Minute}
	assert.Equal(t, time.Minute, capped.Backoff(math.MaxInt, 0))
	assert.Equal(t, time.Second, capped.Backoff(0, 0), "attempt below 1 counts as 1")
	assert.Equal(t, time.Second, capped.Backoff(-5, 0))
	dec := RetryPolicy{Base: time.Second, Jitter: DecorrelatedJitter}
	d := dec.Backoff(1, time.Duration(math.MaxInt64))
	assert.GreaterOrEqual(t, d, time.Second, "decorrelated with a huge prev does not overflow")
}

// TestBackoffProperties draws 10^5 delays per jitter kind and attempt and
// checks each against the kind's range from the AWS post.
func TestBackoffProperties(t *testing.T) {
	base, maxD := 100*time.Millisecond, 5*time.Second
	for _, j := range []Jitter{NoJitter, FullJitter, EqualJitter, DecorrelatedJitter, ProportionalJitter} {
		for _, mult := range []float64{2, 1.5, 3} {
			p := RetryPolicy{MaxAttempts: 10, Base: base, Max: maxD, Multiplier: mult, Jitter: j}
			t.Run(j.String(), func(t *testing.T) {
				r := rand.New(rand.NewPCG(1, uint64(mult*10)))
				prev := time.Duration(0)
				var sum [12]float64
				for i := range samples {
					attempt := i%12 + 1
					if attempt == 1 {
						prev = 0
					}
					v := min(maxD, time.Duration(float64(base)*math.Pow(mult, float64(attempt-1))))
					d := p.BackoffRand(attempt, prev, r)
					// Plain checks: testify per sample would dominate the run.
					lo, hi := time.Duration(0), v
					switch j {
					case NoJitter:
						lo = v
					case EqualJitter:
						lo = v / 2
					case DecorrelatedJitter:
						lo = base
						hi = min(maxD, time.Duration(float64(max(prev, base))*(mult+1)))
					case ProportionalJitter: // ±DefaultJitterFraction, capped
						lo = min(maxD, v-v/10)
						hi = min(maxD, v+v/10)
					}
					if d < lo || d > hi || d > maxD {
						t.Fatalf("attempt %d prev %v: %v outside [%v, %v] (Max %v)", attempt, prev, d, lo, hi, maxD)
					}
					sum[attempt-1] += float64(d) / float64(v)
					prev = d
				}
				n := float64(samples) / 12
				switch j {
				case FullJitter: // mean of U[0,v] is v/2
					for a := range sum {
						assert.InDelta(t, 0.5, sum[a]/n, 0.02, "attempt %d", a+1)
					}
				case EqualJitter: // mean of v/2+U[0,v/2] is 3v/4
					for a := range sum {
						assert.InDelta(t, 0.75, sum[a]/n, 0.02, "attempt %d", a+1)
					}
				}
			})
		}
	}
}

// TestDecorrelatedMatchesAWS checks the post's formula literally:
// sleep = min(cap, random_between(base, sleep*3)), so with a cap well
// below 3·prev a share of the draws lands exactly on the cap.
func TestDecorrelatedMatchesAWS(t *testing.T) {
	p := RetryPolicy{Base: time.Second, Max: 2 * time.Second, Jitter: DecorrelatedJitter}
	r := rand.New(rand.NewPCG(7, 7))
	atCap := 0
	for range samples {
		d := p.BackoffRand(3, 10*time.Second, r) // U[1s, 30s]
		if d < time.Second || d > 2*time.Second {
			t.Fatalf("%v outside [1s, 2s]", d)
		}
		if d == 2*time.Second {
			atCap++
		}
	}
	// P(U[1,30] ≥ 2) = 28/29.
	assert.InDelta(t, 28.0/29, float64(atCap)/samples, 0.01)

	first := RetryPolicy{Base: time.Second, Max: time.Hour, Jitter: DecorrelatedJitter}
	for range 1000 {
		d := first.BackoffRand(1, 0, r)
		require.True(t, d >= time.Second && d <= 3*time.Second, "prev 0 starts from base: %v", d)
	}
}

func TestBackoffSeededIsReproducible(t *testing.T) {
	p := DefaultPolicy(RateLimited)
	a, b := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	var pa, pb time.Duration
	for i := 1; i <= 50; i++ {
		pa, pb = p.BackoffRand(i, pa, a), p.BackoffRand(i, pb, b)
		require.Equal(t, pa, pb)
	}
}

func TestBackoffConcurrentNoAlloc(t *testing.T) {
	p := DefaultPolicy(Transient)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				_ = p.Backoff(i%6+1, 0)
			}
		}()
	}
	wg.Wait()
	for _, j := range []Jitter{NoJitter, FullJitter, EqualJitter, DecorrelatedJitter, ProportionalJitter} {
		q := p.withJitter(j)
		assert.Zero(t, testing.AllocsPerRun(100, func() { _ = q.Backoff(3, time.Second) }), j.String())
	}
}

func TestShouldRetry(t *testing.T) {
	tests := []struct {
		name     string
		p        RetryPolicy
		attempts int
		elapsed  time.Duration
		want     bool
	}{
		{"zero policy never retries", RetryPolicy{}, 1, 0, false},
		{"MaxAttempts 1 never retries", RetryPolicy{MaxAttempts: 1}, 1, 0, false},
		{"3 attempts: after 1", RetryPolicy{MaxAttempts: 3}, 1, 0, true},
		{"3 attempts: after 2", RetryPolicy{MaxAttempts: 3}, 2, 0, true},
		{"3 attempts: after 3", RetryPolicy{MaxAttempts: 3}, 3, 0, false},
		{"negative MaxAttempts is 1", RetryPolicy{MaxAttempts: -4}, 1, 0, false},
		{"within MaxElapsed", RetryPolicy{MaxAttempts: 9, MaxElapsed: time.Minute}, 1, 59 * time.Second, true},
		{"at MaxElapsed", RetryPolicy{MaxAttempts: 9, MaxElapsed: time.Minute}, 1, time.Minute, false},
		{"MaxElapsed 0 is unlimited", RetryPolicy{MaxAttempts: 9}, 1, 1000 * time.Hour, true},
		{"attempts still bound", RetryPolicy{MaxAttempts: 2, MaxElapsed: time.Hour}, 2, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.p.ShouldRetry(tt.attempts, tt.elapsed))
		})
	}
}

func TestDefaultPolicyTable(t *testing.T) {
	want := map[Category]int{
		Unknown: 3, Transient: 5, Timeout: 5, RateLimited: 6, Resource: 4,
		Permanent: 1, Poison: 1, Expired: 1,
	}
	for _, c := range Categories() {
		p := DefaultPolicy(c)
		require.NoError(t, p.Validate(), c.String())
		assert.Equal(t, want[c], p.MaxAttempts, c.String())
		assert.Equal(t, want[c] > 1, p.ShouldRetry(1, 0), c.String())
	}
	assert.Equal(t, DefaultPolicy(Unknown), DefaultPolicy(Category(99)))

	tr := DefaultPolicy(Transient).withJitter(NoJitter)
	var got []time.Duration
	for a := 1; tr.ShouldRetry(a, 0); a++ {
		got = append(got, tr.Backoff(a, 0))
	}
	assert.Equal(t, secs(1, 2, 4, 8), got, "the seed design's 1s-2s-4s-8s, before jitter")
}

func TestDelay(t *testing.T) {
	p := DefaultPolicy(Transient).withJitter(NoJitter)
	assert.Equal(t, 2*time.Second, p.Delay(errors.New("x"), 2, 0), "no hint: backoff")
	assert.Equal(t, 90*time.Second, p.Delay(After(errors.New("x"), 90*time.Second), 2, 0),
		"After replaces the backoff, even beyond Max")
	assert.Equal(t, 7*time.Second, p.Delay(&httpError{code: 429, retryAfter: 7 * time.Second}, 1, 0))
}

func TestNormalizeAndValidate(t *testing.T) {
	n := RetryPolicy{}.Normalize()
	assert.Equal(t, 1, n.MaxAttempts)
	assert.Equal(t, float64(DefaultMultiplier), n.Multiplier)
	assert.Equal(t, time.Duration(math.MaxInt64), n.Max)

	bad := []RetryPolicy{
		{MaxAttempts: -1},
		{Base: -time.Second},
		{Max: -time.Second},
		{MaxElapsed: -1},
		{Multiplier: math.NaN()},
		{Multiplier: math.Inf(1)},
		{Multiplier: -2},
		{Jitter: Jitter(9)},
		{Jitter: ProportionalJitter, JitterFraction: -0.1},
		{Jitter: ProportionalJitter, JitterFraction: 1.5},
		{Jitter: ProportionalJitter, JitterFraction: math.NaN()},
		{Base: time.Minute, Max: time.Second},
	}
	for _, p := range bad {
		assert.ErrorIs(t, p.Validate(), ErrInvalid, "%+v", p)
	}
	assert.NoError(t, RetryPolicy{}.Validate())
}

func TestJitterString(t *testing.T) {
	assert.Equal(t, "none", NoJitter.String())
	assert.Equal(t, "decorrelated", DecorrelatedJitter.String())
	assert.Equal(t, "proportional", ProportionalJitter.String())
	assert.Equal(t, "jitter(9)", Jitter(9).String())
}

func (p RetryPolicy) withJitter(j Jitter) RetryPolicy { p.Jitter = j; return p }

func secs(ss ...int) []time.Duration {
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		out[i] = time.Duration(s) * time.Second
	}
	return out
}
