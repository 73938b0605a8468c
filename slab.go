package ringwal

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// slab holds every live message. A message's home slot is its ID masked by
// the slab size, so an ID locates its record without a map; IDs whose home
// is taken (a redrive, or a replay into a slab of another size) probe up to
// probeLimit slots further.
//
// Records live in chunks allocated on first use, so that a large
// MaxMessages costs memory only as messages arrive (and Open does not zero
// a gigabyte up front). A chunk, once allocated, stays. The slab only
// stores and finds records; record.go owns what happens to them.
type slab struct {
	mask   uint64
	chunks []atomic.Pointer[slabChunk]
	// spare holds chunks replay reserved ahead (reserve.go); nil
	// outside replay.
	spare  *spares[slabChunk]
	growMu sync.Mutex
}

const (
	probeLimit     = 32
	slabChunkBits  = 12
	slabChunkSlots = 1 << slabChunkBits
)

type slabChunk [slabChunkSlots]rec

func newSlab(bits uint) *slab {
	n := (uint64(1)<<bits + slabChunkSlots - 1) >> slabChunkBits
	return &slab{mask: 1<<bits - 1, chunks: make([]atomic.Pointer[slabChunk], n)}
}

// slabBitsFor is the size, as a power of two, of a slab for n messages
// with a quarter to spare, so that a new ID's home slot is almost always
// free; at most maxSlabBits.
func slabBitsFor(n int) uint {
	return min(uint(bits.Len(uint(max(n+n/4, 1)-1))), maxSlabBits)
}

// bits is the slab's size as a power of two.
func (s *slab) bits() uint { return uint(bits.Len64(s.mask)) }

// size is the number of slots.
func (s *slab) size() int { return int(s.mask + 1) }

// at returns the record of slot, allocating its chunk on first use.
func (s *slab) at(slot uint32) *rec {
	c := s.chunks[slot>>slabChunkBits].Load()
	if c == nil {
		c = s.grow(slot >> slabChunkBits)
	}
	return &c[slot&(slabChunkSlots-1)]
}

// lookup returns the record of slot, or nil if its chunk was never used.
func (s *slab) lookup(slot uint32) *rec {
	if uint64(slot) > s.mask {
		return nil
	}
	c := s.chunks[slot>>slabChunkBits].Load()
	if c == nil {
		return nil
	}
	return &c[slot&(slabChunkSlots-1)]
}

func (s *slab) grow(i uint32) *slabChunk {
	// One chunk at a time, so that goroutines racing for the same chunk
	// (replay prepares on several) do not take a spare each.
	s.growMu.Lock()
	defer s.growMu.Unlock()
	if c := s.chunks[i].Load(); c != nil {
		return c
	}
	fresh := s.spare.take()
	if fresh == nil {
		fresh = new(slabChunk)
	}
	// Memory fresh from the OS is mapped on first touch. A first touch
	// that reads, as a claim looks at the word before its CAS, maps the
	// zero page only for the write after it to fault again. So write to
	// every page first, while nobody else can see the chunk.
	for j := 0; j < slabChunkSlots; j += 4096 / int(unsafe.Sizeof(rec{})) {
		fresh[j].at = 0
	}
	s.chunks[i].Store(fresh)
	return fresh
}

// each calls fn for every record in an allocated chunk, in slot order.
func (s *slab) each(fn func(slot uint32, r *rec)) {
	for i := range s.chunks {
		c := s.chunks[i].Load()
		if c == nil {
			continue
		}
		base := uint32(i) << slabChunkBits
		for j := range c {
			fn(base+uint32(j), &c[j])
		}
	}
}

// prepare allocates the chunk of id's home slot, if it is not yet.
func (s *slab) prepare(id uint64) { s.at(uint32(id & s.mask)) }

// claimHome tries to take id's home slot for a new record, which it
// leaves owned and unpublished.
func (s *slab) claimHome(id uint64) (uint32, bool) {
	slot := uint32(id & s.mask)
	return slot, s.at(slot).claim(id)
}

// claimNear takes the first free slot within probeLimit of id's home.
func (s *slab) claimNear(id uint64) (uint32, bool) {
	for i := uint64(0); i < probeLimit; i++ {
		slot := uint32((id + i) & s.mask)
		if s.at(slot).claim(id) {
			return slot, true
		}
	}
	return 0, false
}

// find returns the slot holding id, if it is live.
func (s *slab) find(id uint64) (uint32, bool) {
	if id == 0 {
		return 0, false
	}
	for i := uint64(0); i < probeLimit; i++ {
		slot := uint32((id + i) & s.mask)
		// A freed record keeps its old id, so check the state too.
		if r := s.lookup(slot); r != nil && r.id.Load() == id && r.load().state() != stFree {
			return slot, true
		}
	}
	return 0, false
}

// ownID finds id and takes its record from one of the allowed states (a
// set of 1<<state). It returns the slot and the word it replaced (for
// putBack), or ok=false when id is not live (found=false) or is in
// another state (prev tells which).
func (s *slab) ownID(id uint64, allowed uint32) (slot uint32, prev word, found, ok bool) {
	slot, found = s.find(id)
	if !found {
		return 0, 0, false, false
	}
	r := s.at(slot)
	prev, ok = r.ownAny(allowed | 1<<stFree)
	if !ok {
		return slot, prev, true, false
	}
	if prev.state() == stFree || r.id.Load() != id {
		// Freed, or freed and reused, between find and ownAny.
		r.putBack(prev)
		return 0, 0, false, false
	}
	if !prev.allowed(allowed) {
		r.putBack(prev)
		return slot, prev, true, false
	}
	return slot, prev, true, true
}
