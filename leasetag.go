package ringwal

import (
	"math/rand/v2"
	"sync/atomic"
)

// A Lease names its engine as well as a record. So a lease handed to the
// wrong engine is refused as stale: two engines in one process, or a
// Delivery passed to the other's Ack. Otherwise it would settle whatever
// record of that engine happens to sit in the same slot at the same
// generation. Fresh engines start their generations alike, so that would
// be common. Lease stays 8 bytes. The check costs the hot path two ALU
// operations and no load beyond the engine's own fields.
//
// Lease.slot carries a 6-bit engine tag above the slot; slots use at most
// maxSlabBits bits. Tags are handed out in turn, 1 to 63. So no two of
// any 63 consecutively opened engines share one, and the zero Lease (tag
// 0) is never valid.
//
// Lease.gen is the record's generation XORed with a random 32-bit word of
// the engine. Two engines whose 6-bit tags do meet are 63 opens apart.
// They still refuse each other's leases, unless a generation happens to
// match that random difference: odds about 2^-32 a lease.
const (
	leaseTagShift = 26 // = maxSlabBits; checked below
	leaseSlotMask = 1<<leaseTagShift - 1
	leaseTags     = 1<<(32-leaseTagShift) - 1 // tags 1..63
)

// The slot bits and the tag bits must not overlap.
var _ [leaseTagShift - maxSlabBits]struct{}
var _ [maxSlabBits - leaseTagShift]struct{}

// lastLeaseTag hands out engine tags in turn (leaseTags).
var lastLeaseTag atomic.Uint32

// leaseKey is what an engine folds into each of its leases.
type leaseKey struct {
	slot uint32 // the engine's tag, in Lease.slot's top bits
	gen  uint32 // XORed into Lease.gen
}

func newLeaseKey() leaseKey {
	tag := lastLeaseTag.Add(1)%leaseTags + 1
	return leaseKey{slot: tag << leaseTagShift, gen: rand.Uint32()}
}

// lease is the Lease naming rf in this engine.
func (k leaseKey) lease(rf ref) Lease {
	return Lease{slot: rf.slot | k.slot, gen: rf.gen ^ k.gen}
}

// ref is the record l names, and whether l is this engine's at all.
func (k leaseKey) ref(l Lease) (ref, bool) {
	return ref{slot: l.slot & leaseSlotMask, gen: l.gen ^ k.gen}, l.slot&^leaseSlotMask == k.slot
}
