package ring

// NumTiers is the number of priority tiers: Critical, High, Normal, Low and
// Background.
const NumTiers = 5

// Tiers is the set of rings that hold pending values by priority, tier 0
// being the most urgent (Critical) and tier NumTiers-1 the least
// (Background).
//
// It lives here rather than in the engine or in sched because it is storage,
// not policy: sched decides which tier goes next from NonEmpty, the engine
// maps its Priority to a tier index, and both need the same lock-free rings
// without importing each other. Tier indexes rather than the root package's
// Priority type keep this package free of imports (lower packages never
// import the root).
type Tiers[T any] struct {
	rings [NumTiers]*Ring[T]
}

// NewTiers returns tiers whose rings hold capacity[i] values each, rounded up
// to a power of two as New does.
func NewTiers[T any](capacity [NumTiers]int) *Tiers[T] {
	t := &Tiers[T]{}
	for i := range t.rings {
		t.rings[i] = New[T](capacity[i])
	}
	return t
}

// Tier returns the ring of tier i; it panics if i is not in [0, NumTiers),
// which is a programming error of the caller, never a consequence of input.
func (t *Tiers[T]) Tier(i int) *Ring[T] { return t.rings[i] }

// TryPush appends v to tier i; false if that tier is full. Safe for
// concurrent use.
func (t *Tiers[T]) TryPush(i int, v T) bool { return t.rings[i].TryPush(v) }

// TryPop removes the oldest value of tier i. Safe for concurrent use.
func (t *Tiers[T]) TryPop(i int) (T, bool) { return t.rings[i].TryPop() }

// NonEmpty returns a bit mask with bit i set when tier i holds something at
// the moment of the call (a snapshot, as Len is). Safe for concurrent use.
func (t *Tiers[T]) NonEmpty() uint8 {
	var mask uint8
	for i, r := range t.rings {
		if r.deqPos.Load() != r.enqPos.Load() {
			mask |= 1 << i
		}
	}
	return mask
}

// Len returns the total number of values in all tiers.
func (t *Tiers[T]) Len() int {
	n := 0
	for _, r := range t.rings {
		n += r.Len()
	}
	return n
}
