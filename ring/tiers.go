package ring

import (
	"sync"
	"sync/atomic"
)

// NumTiers is the number of priority tiers: Critical, High, Normal, Low and
// Background.
const NumTiers = 5

// Tiers is the set of rings that hold pending values by priority, tier 0
// being the most urgent (Critical) and tier NumTiers-1 the least
// (Background).
//
// It lives here rather than in the engine or in sched because it is
// storage, not policy. The scheduler decides which tier goes next from
// NonEmpty. The engine maps its Priority to a tier index. Both need the
// same lock-free rings without importing each other. Tier indexes rather than the root package's
// Priority type keep this package free of imports (lower packages never
// import the root).
//
// A tier's ring is allocated when a value is first pushed to it: a ring
// sized for a large backlog costs 16 bytes a slot, and most deployments
// use one or two of the five priorities.
type Tiers[T any] struct {
	caps  [NumTiers]int
	rings [NumTiers]atomic.Pointer[Ring[T]]
	mu    sync.Mutex // serialises the first allocation of a ring
}

// NewTiers returns tiers whose rings hold capacity[i] values each, rounded up
// to a power of two as New does. No ring is allocated until it is used.
func NewTiers[T any](capacity [NumTiers]int) *Tiers[T] {
	t := &Tiers[T]{}
	for i, c := range capacity {
		t.caps[i] = roundPow2(c)
	}
	return t
}

// alloc returns tier i's ring, allocating it on first use.
func (t *Tiers[T]) alloc(i int) *Ring[T] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.rings[i].Load(); r != nil {
		return r
	}
	r := New[T](t.caps[i])
	t.rings[i].Store(r)
	return r
}

// Tier returns the ring of tier i, allocating it on first use; it panics
// if i is not in [0, NumTiers), which is a programming error of the
// caller, never a consequence of input.
func (t *Tiers[T]) Tier(i int) *Ring[T] {
	if r := t.rings[i].Load(); r != nil {
		return r
	}
	return t.alloc(i)
}

// Cap returns tier i's capacity, whether or not its ring is allocated.
func (t *Tiers[T]) Cap(i int) int { return t.caps[i] }

// LenOf returns the number of values in tier i (0 for a ring never used).
func (t *Tiers[T]) LenOf(i int) int {
	if r := t.rings[i].Load(); r != nil {
		return r.Len()
	}
	return 0
}

// TryPush appends v to tier i; false if that tier is full. Safe for
// concurrent use.
func (t *Tiers[T]) TryPush(i int, v T) bool { return t.Tier(i).TryPush(v) }

// TryPop removes the oldest value of tier i. Safe for concurrent use.
func (t *Tiers[T]) TryPop(i int) (T, bool) {
	if r := t.rings[i].Load(); r != nil {
		return r.TryPop()
	}
	var zero T
	return zero, false
}

// Peek calls f with tier i's values from the oldest on, as Ring.Peek does
// (nothing for a ring never used).
func (t *Tiers[T]) Peek(i, limit int, f func(T) bool) bool {
	if r := t.rings[i].Load(); r != nil {
		return r.Peek(limit, f)
	}
	return true
}

// NonEmpty returns a bit mask with bit i set when tier i holds something at
// the moment of the call (a snapshot, as Len is). Safe for concurrent use.
func (t *Tiers[T]) NonEmpty() uint8 {
	var mask uint8
	for i := range t.rings {
		if r := t.rings[i].Load(); r != nil && r.deqPos.Load() != r.enqPos.Load() {
			mask |= 1 << i
		}
	}
	return mask
}

// Len returns the total number of values in all tiers.
func (t *Tiers[T]) Len() int {
	n := 0
	for i := range t.rings {
		n += t.LenOf(i)
	}
	return n
}
