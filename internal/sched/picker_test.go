package sched

import (
	"math/bits"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// t0 is an arbitrary unix-nanosecond start for picker tests.
const t0 = int64(1_700_000_000_000_000_000)

func wantShares(weights [NumTiers]int, mask uint8) [NumTiers]float64 {
	total := 0
	for i, w := range weights {
		if mask&(1<<i) != 0 {
			total += w
		}
	}
	var s [NumTiers]float64
	for i, w := range weights {
		if mask&(1<<i) != 0 {
			s[i] = float64(w) / float64(total)
		}
	}
	return s
}

// TestPickerWeights: over 10^6 picks among backlogged tiers each tier's
// share is within 1% of its weight's share.
func TestPickerWeights(t *testing.T) {
	const picks = 1_000_000
	cases := []struct {
		name      string
		opts      PickerOptions
		weights   [NumTiers]int // the effective weights
		mask      uint8
		consumers int
		step      int64 // now advances by this per pick (aging on when > 0)
	}{
		{"default, all tiers", PickerOptions{AgingAfter: -1}, DefaultWeights, 0b11111, 1, 0},
		{"default, all tiers, aging on, 1us a pick", PickerOptions{}, DefaultWeights, 0b11111, 1, 1000},
		{"default, critical and background", PickerOptions{AgingAfter: -1}, DefaultWeights, 0b10001, 1, 0},
		{"default, middle tiers", PickerOptions{AgingAfter: -1}, DefaultWeights, 0b01110, 1, 0},
		{"equal weights", PickerOptions{Weights: [NumTiers]int{1, 1, 1, 1, 1}, AgingAfter: -1}, [NumTiers]int{1, 1, 1, 1, 1}, 0b11111, 1, 0},
		{"increasing weights", PickerOptions{Weights: [NumTiers]int{1, 2, 4, 8, 16}, AgingAfter: -1}, [NumTiers]int{1, 2, 4, 8, 16}, 0b11111, 1, 0},
		{"clamped weights", PickerOptions{Weights: [NumTiers]int{-5, 0, 5000, 3, 1}, AgingAfter: -1}, [NumTiers]int{1, 1, MaxWeight, 3, 1}, 0b11111, 1, 0},
		{"default, all tiers, 4 concurrent consumers", PickerOptions{AgingAfter: -1}, DefaultWeights, 0b11111, 4, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPicker(tc.opts)
			var (
				mu     sync.Mutex
				counts [NumTiers]int
				wg     sync.WaitGroup
			)
			for range tc.consumers {
				wg.Go(func() {
					var local [NumTiers]int
					now := t0
					for range picks / tc.consumers {
						tier, ok := p.Next(tc.mask, now)
						if !ok || tc.mask&(1<<tier) == 0 {
							t.Errorf("picked %d (ok=%v) from mask %05b", tier, ok, tc.mask)
							return
						}
						local[tier]++
						p.Served(tier, now)
						now += tc.step
					}
					mu.Lock()
					for i := range counts {
						counts[i] += local[i]
					}
					mu.Unlock()
				})
			}
			wg.Wait()
			want := wantShares(tc.weights, tc.mask)
			for i := range NumTiers {
				got := float64(counts[i]) / picks
				assert.InDelta(t, want[i], got, want[i]*0.01, "tier %d: %d picks", i, counts[i])
			}
		})
	}
}

// TestPickerFirstPickIsHighest: with several tiers backlogged and nothing
// aged, a fresh set's first pick is its highest tier, whatever the weights.
func TestPickerFirstPickIsHighest(t *testing.T) {
	for _, w := range [][NumTiers]int{{}, {1, 2, 4, 8, 16}, {1, 1, 1, 1, 1}, {3, 100, 7, 100, 2}} {
		for _, policy := range []Policy{Weighted, Strict} {
			p := NewPicker(PickerOptions{Policy: policy, Weights: w})
			for m := uint8(1); m < 1<<NumTiers; m++ {
				tier, ok := p.Next(m, t0)
				require.True(t, ok)
				assert.Equal(t, bits.TrailingZeros8(m), tier, "weights %v policy %d mask %05b", w, policy, m)
			}
		}
	}
}

func TestPickerEdges(t *testing.T) {
	p := NewPicker(PickerOptions{})
	_, ok := p.Next(0, t0)
	assert.False(t, ok, "nothing non-empty")
	_, ok = p.Next(0b1110_0000, t0)
	assert.False(t, ok, "bits beyond the tiers are ignored")
	tier, ok := p.Next(0b1110_1000, t0)
	assert.True(t, ok)
	assert.Equal(t, 3, tier)
	p.Served(-1, t0) // ignored, no panic
	p.Served(NumTiers, t0)

	strict := NewPicker(PickerOptions{Policy: Strict, AgingAfter: -1})
	for i := range 1000 {
		tier, _ := strict.Next(0b11010, t0+int64(i)*int64(time.Second))
		require.Equal(t, 1, tier)
	}
	bogus := NewPicker(PickerOptions{Policy: 42})
	assert.Equal(t, Weighted, bogus.policy)
}

// TestStarvationBound checks doc.go's bound. Picks happen every delta (a
// pick rate of 1/delta); Served is reported after every pick.
func TestStarvationBound(t *testing.T) {
	ms := int64(time.Millisecond)
	t.Run("saturating Critical: Background waits < AgingAfter + one pick", func(t *testing.T) {
		cases := []struct {
			name  string
			opts  PickerOptions
			delta int64
		}{
			{"strict, 1ms picks", PickerOptions{Policy: Strict}, ms},
			{"strict, 0.3ms picks, aging 1ms", PickerOptions{Policy: Strict, AgingAfter: time.Millisecond}, 3 * ms / 10},
			{"weighted, 10ms picks (weights alone would take 17)", PickerOptions{}, 10 * ms},
			{"weighted, 0.1ms picks", PickerOptions{}, ms / 10},
			{"weighted 1000:1, 1ms picks, aging 5ms", PickerOptions{Weights: [NumTiers]int{1000, 1, 1, 1, 1}, AgingAfter: 5 * time.Millisecond}, ms},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := NewPicker(tc.opts)
				aging := int64(tc.opts.AgingAfter)
				if aging == 0 {
					aging = int64(DefaultAgingAfter)
				}
				rng := rand.New(rand.NewPCG(3, uint64(tc.delta)))
				now := t0
				arrival := t0 + rng.Int64N(3*aging) // the next Background message
				served, agedServes := 0, 0
				for served < 200 {
					mask := uint8(1) // Critical is never empty
					if arrival <= now {
						mask |= 1 << 4
					}
					tier, ok := p.Next(mask, now)
					require.True(t, ok)
					p.Served(tier, now)
					if tier == 4 {
						wait := now - arrival
						require.Less(t, wait, aging+tc.delta, "Background waited %v", time.Duration(wait))
						if wait >= aging-tc.delta {
							agedServes++
						}
						served++
						arrival = now + rng.Int64N(3*aging)
					}
					now += tc.delta
				}
				if tc.opts.Policy == Strict {
					assert.Positive(t, agedServes, "aging never decided")
				}
			})
		}
	})
	t.Run("every tier backlogged: each served within AgingAfter + T picks", func(t *testing.T) {
		cases := []struct {
			name  string
			opts  PickerOptions
			delta int64
		}{
			{"strict", PickerOptions{Policy: Strict}, ms},
			{"strict, slow picks", PickerOptions{Policy: Strict}, 20 * ms},
			{"weighted 1000:1", PickerOptions{Weights: [NumTiers]int{1000, 1, 1, 1, 1}}, ms},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := NewPicker(tc.opts)
				aging := int64(DefaultAgingAfter)
				var last [NumTiers]int64
				for i := range last {
					last[i] = t0
				}
				now := t0
				for range 20_000 {
					tier, ok := p.Next(0b11111, now)
					require.True(t, ok)
					p.Served(tier, now)
					require.Less(t, now-last[tier], aging+NumTiers*tc.delta, "tier %d", tier)
					last[tier] = now
					now += tc.delta
				}
				for i := range last {
					assert.Less(t, now-last[i], aging+NumTiers*tc.delta, "tier %d", i)
				}
			})
		}
	})
}

// TestPickerConcurrentAging exercises aging and Served from several
// consumers at once (for the race detector); every pick is a non-empty tier.
func TestPickerConcurrentAging(t *testing.T) {
	p := NewPicker(PickerOptions{AgingAfter: time.Microsecond})
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 9))
			now := t0
			for range 50_000 {
				mask := uint8(rng.IntN(1 << NumTiers))
				tier, ok := p.Next(mask, now)
				if mask == 0 {
					if ok {
						t.Error("picked from nothing")
					}
					continue
				}
				if !ok || mask&(1<<tier) == 0 {
					t.Errorf("picked %d from %05b", tier, mask)
					return
				}
				p.Served(tier, now)
				now += rng.Int64N(2000)
			}
		})
	}
	wg.Wait()
}

func TestPickerNoAllocs(t *testing.T) {
	p := NewPicker(PickerOptions{})
	now := t0
	allocs := testing.AllocsPerRun(10_000, func() {
		tier, _ := p.Next(0b11111, now)
		p.Served(tier, now)
		now += 1000
	})
	assert.Zero(t, allocs)
}
