package sched

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
	"time"
)

// TestWheelEdges is a model test over odd ticks (not dividing a
// second, coarser than MinHorizon, 1ns), due times before the start, at
// the saturated far end and on level boundaries, jumps of any size, and
// Compact. After every Advance(now): nothing fired early, every entry
// added before it and due by now has fired, and NextAt (a lower bound)
// is after now and not after the earliest pending due time.
func TestWheelEdges(t *testing.T) {
	ticks := []time.Duration{time.Nanosecond, 7 * time.Millisecond, time.Hour, 45 * 24 * time.Hour, 1<<40 + 3}
	for _, tick := range ticks {
		for seed := range uint64(8) {
			t.Run(tick.String(), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(tick), seed))
				w := NewWheel(tick, testStart)
				type ent struct {
					at    int64
					fired bool
					dead  bool
				}
				var ents []ent
				now := int64(0)
				randOff := func() int64 {
					switch r.IntN(10) {
					case 0:
						return -r.Int64N(math.MaxInt64)
					case 1:
						return math.MaxInt64 - r.Int64N(3)
					case 2: // on a level boundary of some level, relative to now
						lvl := r.IntN(maxLevels)
						b := int64(1) << (wheelBits * lvl)
						if b > math.MaxInt64/int64(tick) {
							return now + r.Int64N(1000)
						}
						v := now + b*int64(tick) + r.Int64N(3) - 1
						if v < now {
							return math.MaxInt64
						}
						return v
					case 3:
						return now + r.Int64N(int64(tick)*3+1)
					default:
						span := int64(1) << r.IntN(63)
						v := now + r.Int64N(span)
						if v < now {
							return math.MaxInt64
						}
						return v
					}
				}
				fire := func(at time.Time, e Entry) {
					x := &ents[e.ID]
					if x.fired {
						t.Fatalf("entry %d fired twice", e.ID)
					}
					if x.dead {
						t.Fatalf("entry %d fired after Compact removed it", e.ID)
					}
					x.fired = true
					if x.at > now {
						t.Fatalf("entry %d due at +%d fired early at +%d (tick %v)", e.ID, x.at, now, tick)
					}
				}
				for step := range 800 {
					for range r.IntN(5) {
						off := randOff()
						ents = append(ents, ent{at: off})
						w.Add(testStart.Add(time.Duration(off)), Entry{ID: uint64(len(ents) - 1)})
					}
					if step%97 == 0 {
						w.Compact(func(e Entry) bool {
							if e.ID%3 == 0 {
								ents[e.ID].dead = true
								return false
							}
							return true
						})
					}
					// Advance by a random amount: sometimes to an entry's due time.
					switch r.IntN(6) {
					case 0: // exactly to the earliest pending due time, or just before it
						e := int64(math.MaxInt64)
						for _, x := range ents {
							if !x.fired && !x.dead && x.at > now {
								e = min(e, x.at)
							}
						}
						if e-now < int64(1)<<50 {
							now = e - r.Int64N(2)
						}
					case 1:
						now = satAdd(now, r.Int64N(int64(tick)*2+1))
					case 2, 3, 4:
						now = satAdd(now, r.Int64N(satMul(int64(tick), 200)))
					default:
						now = satAdd(now, r.Int64N(int64(1)<<r.IntN(52)))
					}
					w.Advance(testStart.Add(time.Duration(now)), fire)
					pending, earliest := 0, int64(math.MaxInt64)
					for i, x := range ents {
						if x.fired || x.dead {
							continue
						}
						if x.at <= now {
							t.Fatalf("step %d: entry %d due at +%d not fired by Advance(+%d) (tick %v)", step, i, x.at, now, tick)
						}
						pending++
						earliest = min(earliest, x.at)
					}
					if w.Len() != pending {
						t.Fatalf("Len %d, want %d", w.Len(), pending)
					}
					if next, ok := w.NextAt(); ok != (pending > 0) {
						t.Fatalf("NextAt ok=%v with %d pending", ok, pending)
					} else if ok {
						n := int64(next.Sub(testStart))
						if n <= now && now < math.MaxInt64 {
							t.Fatalf("NextAt +%d not after now +%d", n, now)
						}
						if n > earliest {
							t.Fatalf("NextAt +%d after the earliest pending +%d", n, earliest)
						}
					}
					if now == math.MaxInt64 {
						t.Logf("reached the end at step %d", step)
						return
					}
				}
			})
		}
	}
}

func satAdd(a, b int64) int64 {
	if a+b < a {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// TestPreviewAnyN: Preview takes any n: a negative one returns
// nothing and a huge one (Peek(math.MaxInt)) returns the whole backlog
// instead of panicking on a make of that capacity.
func TestPreviewAnyN(t *testing.T) {
	p := NewPicker(PickerOptions{})
	backlog := [NumTiers]int{2, 0, 1, 0, 3}
	for _, n := range []int{-1, math.MinInt, 0, 3, 6, 7, math.MaxInt} {
		var got []int
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Fatalf("Preview(%v, %d) panicked: %v", backlog, n, v)
				}
			}()
			got = p.Preview(backlog, n)
		}()
		if want := min(max(n, 0), 6); len(got) != want {
			t.Fatalf("Preview(%v, %d) returned %d tiers, want %d", backlog, n, len(got), want)
		}
	}
}

// TestAgingFromTimeZero: now is any int64 time scale; a caller
// whose clock starts at 0 (nanoseconds since its own start, as a fake
// clock or a monotonic counter gives) must get the same starvation bound.
// 0 used to double as "not yet seeded", so a tier first seen at now 0 and
// never served was never aged: Strict starved Background for good.
func TestAgingFromTimeZero(t *testing.T) {
	const aging = int64(50 * time.Millisecond)
	const pick = int64(time.Millisecond)
	for _, pol := range []Policy{Strict, Weighted} {
		for _, t0 := range []int64{0, -int64(time.Hour), 1} {
			p := NewPicker(PickerOptions{Policy: pol, AgingAfter: time.Duration(aging)})
			const all = 1<<0 | 1<<4 // Critical and Background backlogged
			served := false
			for now := t0; now < t0+aging+2*pick; now += pick {
				tier, ok := p.Next(all, now)
				if !ok {
					t.Fatal("no pick")
				}
				p.Served(tier, now)
				if tier == 4 {
					served = true
					break
				}
			}
			if !served {
				t.Errorf("%v from t0=%d: Background not served within AgingAfter plus one pick", pol, t0)
			}
		}
	}
}

// TestWeightedShares: for random weights (clamped ones included)
// and every backlogged set, a fresh Picker's first pick is the set's
// highest tier and every run of sum-of-weights consecutive picks gives
// each tier exactly its weight.
func TestWeightedShares(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for trial := range 40 {
		var w [NumTiers]int
		for i := range w {
			w[i] = r.IntN(40) - 3 // some ≤ 0: clamped to 1
			if trial%7 == 0 {
				w[i] = r.IntN(MaxWeight + 200)
			}
		}
		if w == [NumTiers]int{} {
			w[0] = 1
		}
		clamped := w
		for i := range clamped {
			clamped[i] = min(max(clamped[i], 1), MaxWeight)
		}
		for m := uint8(3); m < 1<<NumTiers; m++ {
			if m&(m-1) == 0 {
				continue
			}
			p := NewPicker(PickerOptions{Weights: w, AgingAfter: -1})
			total := 0
			for i := range NumTiers {
				if m&(1<<i) != 0 {
					total += clamped[i]
				}
			}
			picks := make([]int, 0, 2*total)
			for range 2 * total {
				tier, ok := p.Next(m, 1)
				if !ok || m&(1<<tier) == 0 {
					t.Fatalf("weights %v set %05b: pick %d, %v", w, m, tier, ok)
				}
				picks = append(picks, tier)
			}
			if want := bits.TrailingZeros8(m); picks[0] != want {
				t.Fatalf("weights %v set %05b: first pick %d, want %d", w, m, picks[0], want)
			}
			for start := 0; start+total <= len(picks); start += max(1, total/7) {
				var got [NumTiers]int
				for _, tier := range picks[start : start+total] {
					got[tier]++
				}
				for i := range NumTiers {
					if m&(1<<i) != 0 && got[i] != clamped[i] {
						t.Fatalf("weights %v set %05b: picks %d..%d give tier %d %d, want %d", w, m, start, start+total, i, got[i], clamped[i])
					}
				}
			}
		}
	}
}
