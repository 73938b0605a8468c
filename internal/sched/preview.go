package sched

import (
	"math"
	"math/bits"
)

// Preview returns the tiers that the next n picks would serve if backlog[i]
// values waited in tier i and nothing else changed: the Picker's own
// order (Strict, or the SWRR sequence of each non-empty set from its
// current cursor), without aging and without moving any cursor. The
// engine's Peek uses it so that what it shows is what Dequeue would do.
//
// Safe for concurrent use (it only reads cursors); allocates the result.
//
// n ≤ 0 returns nothing; the result never holds more than the backlog.
func (p *Picker) Preview(backlog [NumTiers]int, n int) []int {
	total := 0
	for _, c := range backlog {
		if c > 0 {
			total += min(c, math.MaxInt-total) // saturate
		}
	}
	n = min(max(n, 0), total)
	out := make([]int, 0, n)
	var cursors [1 << NumTiers]uint32
	var moved [1 << NumTiers]bool
	for len(out) < n {
		var m uint8
		for i, c := range backlog {
			if c > 0 {
				m |= 1 << i
			}
		}
		if m == 0 {
			break
		}
		var t int
		switch {
		case m&(m-1) == 0 || p.policy == Strict:
			t = bits.TrailingZeros8(m)
		default:
			if !moved[m] {
				cursors[m] = uint32(p.cursor[m].Load())
				moved[m] = true
			}
			s := p.seq[m]
			t = int(s[cursors[m]%uint32(len(s))])
			cursors[m]++
		}
		backlog[t]--
		out = append(out, t)
	}
	return out
}
