package sched

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/internal/pad"
	"github.com/ringwal/ringwal/ring"
)

// NumTiers is the number of priority tiers the Picker chooses among: 0 =
// Critical, 1 = High, 2 = Normal, 3 = Low, 4 = Background (the tiers of
// ring.Tiers).
const NumTiers = ring.NumTiers

// Policy says how the Picker shares picks among backlogged tiers.
type Policy uint8

const (
	// Weighted shares picks by weight with smooth weighted round-robin
	// (nginx's SWRR): over every run of sum-of-weights picks among the same
	// backlogged tiers, each gets exactly its weight, evenly spread. It is
	// the zero value and the default.
	Weighted Policy = iota
	// Strict always picks the highest non-empty tier; only aging lets a
	// lower tier through under a steady higher load.
	Strict
)

const (
	// DefaultAgingAfter is how long a non-empty tier may go unserved before
	// it is served next, when PickerOptions leaves AgingAfter at zero.
	DefaultAgingAfter = 50 * time.Millisecond
	// MaxWeight bounds a tier's weight, which bounds the precomputed pick
	// tables (16 * sum of weights bytes).
	MaxWeight = 1000
)

// DefaultWeights are the Weighted policy's shares, Critical to Background.
var DefaultWeights = [NumTiers]int{16, 8, 4, 2, 1}

// PickerOptions configures a Picker; the zero value gives Weighted with
// DefaultWeights and DefaultAgingAfter.
type PickerOptions struct {
	Policy Policy
	// Weights per tier, Critical first. All zero means DefaultWeights;
	// otherwise each is clamped to [1, MaxWeight] (a zero weight would
	// starve its tier between agings, so it is not offered).
	Weights [NumTiers]int
	// AgingAfter: a non-empty tier not served for this long is served next,
	// whatever the policy says. 0 means DefaultAgingAfter; negative turns
	// aging off.
	AgingAfter time.Duration
}

// Picker decides which tier to pop next. It holds no queue: the caller
// passes which tiers are non-empty and the time, and reports successful pops
// through Served (aging needs to know what was actually served; a pick the
// caller then finds empty, because another consumer got there first, must
// not count).
//
// Every method is safe for concurrent use by any number of consumers,
// lock-free (atomic loads, one atomic add per weighted pick among two or
// more tiers, one atomic store per Served) and allocation-free.
type Picker struct {
	policy Policy
	aging  int64 // nanoseconds; < 0 = off

	// seq[m] is the SWRR pick sequence for the set of non-empty tiers m,
	// one tier index per pick, rotated to start at m's highest tier; each
	// m has its own cursor so that a stable backlog follows its sequence
	// exactly however other sets interleave.
	seq    [1 << NumTiers][]uint8
	cursor [1 << NumTiers]pad.Uint64

	lastServed [NumTiers]pad.Int64 // unix ns of the last Served; unknownServed = not yet known
	started    atomic.Bool         // lastServed seeded by the first Next
}

// unknownServed marks a tier whose aging clock the first Next has not
// seeded yet. It is not 0, which is an ordinary time on a clock that
// starts at 0.
const unknownServed = math.MinInt64

// NewPicker returns a Picker configured by o (see PickerOptions for the
// defaults and clamping; no value of o is an error).
func NewPicker(o PickerOptions) *Picker {
	p := &Picker{policy: o.Policy}
	for i := range p.lastServed {
		p.lastServed[i].Store(unknownServed)
	}
	if p.policy != Strict {
		p.policy = Weighted
	}
	switch {
	case o.AgingAfter == 0:
		p.aging = int64(DefaultAgingAfter)
	case o.AgingAfter < 0:
		p.aging = -1
	default:
		p.aging = int64(o.AgingAfter)
	}
	weights := o.Weights
	if weights == [NumTiers]int{} {
		weights = DefaultWeights
	}
	for i, w := range weights {
		weights[i] = min(max(w, 1), MaxWeight)
	}
	p.buildSequences(weights)
	return p
}

// buildSequences precomputes seq for every non-empty set of tiers, in one
// backing array.
func (p *Picker) buildSequences(weights [NumTiers]int) {
	total := 0
	for m := 1; m < 1<<NumTiers; m++ {
		for i := range NumTiers {
			if m&(1<<i) != 0 {
				total += weights[i]
			}
		}
	}
	backing := make([]uint8, 0, total)
	for m := 1; m < 1<<NumTiers; m++ {
		start := len(backing)
		backing = appendSWRR(backing, uint8(m), weights)
		s := backing[start:len(backing):len(backing)]
		rotateToTier(s, uint8(bits.TrailingZeros8(uint8(m))))
		p.seq[m] = s
	}
}

// appendSWRR appends one full period of nginx's smooth weighted
// round-robin over the tiers in mask: each step every tier gains its
// weight, the richest (first on ties) is picked and pays the total.
func appendSWRR(dst []uint8, mask uint8, weights [NumTiers]int) []uint8 {
	var current [NumTiers]int
	total := 0
	for i := range NumTiers {
		if mask&(1<<i) != 0 {
			total += weights[i]
		}
	}
	for range total {
		best := -1
		for i := range NumTiers {
			if mask&(1<<i) == 0 {
				continue
			}
			current[i] += weights[i]
			if best < 0 || current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		dst = append(dst, uint8(best))
	}
	return dst
}

// rotateToTier rotates s so that it starts with its first occurrence of
// tier. With weights that do not decrease by priority, SWRR would not start
// at the highest tier by itself; the contract is that it does. A rotation
// keeps every share and the smoothness (the sequence is cyclic).
func rotateToTier(s []uint8, tier uint8) {
	k := 0
	for k < len(s) && s[k] != tier {
		k++
	}
	if k == 0 || k == len(s) {
		return
	}
	reverse(s[:k])
	reverse(s[k:])
	reverse(s)
}

func reverse(s []uint8) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// Next returns the tier to pop next. nonEmpty has bit i set when tier i
// holds something (bits at NumTiers and above are ignored); now is the
// current time in unix nanoseconds, passed in so that a pick costs no clock
// read. ok is false when nonEmpty has no tier.
//
// Order: a tier that is aged (non-empty and not served for AgingAfter) comes
// first, the longest unserved first; then Strict takes the highest
// non-empty tier and Weighted follows the SWRR sequence of the current
// non-empty set, so with several tiers backlogged and none aged the first
// pick of a fresh set is its highest tier.
//
// Safe for concurrent use; lock-free; never allocates.
func (p *Picker) Next(nonEmpty uint8, now int64) (tier int, ok bool) {
	m := nonEmpty & (1<<NumTiers - 1)
	if m == 0 {
		return 0, false
	}
	if p.aging >= 0 && !p.started.Load() {
		p.seed(now)
	}
	if m&(m-1) == 0 { // a single tier: nothing to decide
		return bits.TrailingZeros8(m), true
	}
	if p.aging >= 0 {
		if t, aged := p.oldestAged(m, now); aged {
			return t, true
		}
	}
	if p.policy == Strict {
		return bits.TrailingZeros8(m), true
	}
	s := p.seq[m]
	// 32-bit modulo is cheaper; the phase jump when the cursor wraps
	// (every 2^32 picks of one set) is harmless.
	c := uint32(p.cursor[m].Add(1) - 1)
	return int(s[c%uint32(len(s))]), true
}

// seed starts every tier's aging clock at the first pick: before it no one
// was consuming, so no tier has been waiting on the picker.
func (p *Picker) seed(now int64) {
	if p.started.CompareAndSwap(false, true) {
		for i := range p.lastServed {
			p.lastServed[i].CompareAndSwap(unknownServed, now)
		}
	}
}

// oldestAged returns the non-empty tier of m served longest ago, if that
// was at least AgingAfter before now; on a tie the higher tier.
func (p *Picker) oldestAged(m uint8, now int64) (int, bool) {
	best, bestAt := -1, int64(0)
	for rest := m; rest != 0; rest &= rest - 1 {
		i := bits.TrailingZeros8(rest)
		at := p.lastServed[i].Load()
		if at == unknownServed || now-at < p.aging {
			continue // a concurrent seed has not reached this tier yet
		}
		if best < 0 || at < bestAt {
			best, bestAt = i, at
		}
	}
	return best, best >= 0
}

// Served records that a value was popped from tier at now (unix ns), which
// restarts that tier's aging clock. Call it after every successful pop
// that Next (or Scheduler.Next) led to; pops of a deadline entry may report
// the entry's tier too. Out-of-range tiers are ignored. Safe for concurrent
// use; lock-free; one atomic load and at most one store.
func (p *Picker) Served(tier int, now int64) {
	if p.aging < 0 || tier < 0 || tier >= NumTiers {
		return
	}
	// Never move the clock back: consumers pass their own now, and a late
	// reporter must not make the tier look older than it is.
	if l := &p.lastServed[tier]; now > l.Load() {
		l.Store(now)
	}
}
