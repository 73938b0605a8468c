package ringwal

import (
	"context"
	"runtime"
	"sync/atomic"

	"github.com/ringwal/ringwal/breaker"
)

// Internal record states. Dead messages leave the slab for the dead-letter
// store, so there is no slot state for them.
const (
	stFree       uint32 = iota
	stBusy              // one goroutine is changing the record; others wait or skip
	stCommitting        // fields complete, waiting for its enqueue record to be durable
	stPending
	stDelayed
	stLeased
	stHeld
)

// A record's word packs a generation (high 32 bits), the message's attempts
// (bits 8-31) and a state (low 8 bits). Every transition goes through
// stBusy with a CAS and ends with a store that bumps the generation, so a
// ring entry, a timer entry or a Lease taken at one generation is
// recognised as stale in O(1) once the record moved on. Keeping attempts in
// the word saves the hot path an atomic of its own.
func makeWord(gen, attempts, state uint32) uint64 {
	return uint64(gen)<<32 | uint64(min(attempts, maxAttempts))<<8 | uint64(state)
}
func wordGen(w uint64) uint32              { return uint32(w >> 32) }
func wordState(w uint64) uint32            { return uint32(w & 0xff) }
func wordAttempts(w uint64) uint32         { return uint32(w>>8) & maxAttempts }
func withState(w uint64, st uint32) uint64 { return w&^0xff | uint64(st) }

// maxAttempts is the most attempts the word counts (it saturates there).
const maxAttempts = 1<<24 - 1

// ref names a record at a generation: what the tier rings, the deadline heap
// and the timing wheel hold.
type ref struct {
	slot uint32
	gen  uint32
}

// rec is one live message. Fields without atomics are written only while the
// writer owns the record (stBusy, or before it is published) and are
// immutable while it is live, except as noted.
type rec struct {
	word atomic.Uint64
	id   atomic.Uint64 // kept after free: check the state too (find does)

	msg        Message
	enqueuedAt int64 // unix ns
	expiresAt  int64 // unix ns; 0 = no TTL
	deadline   int64 // unix ns; 0 = none

	tier    atomic.Uint32 // msg.Priority's tier, readable by scans
	crashes atomic.Int32  // consecutive crashes while leased
	nextAt  atomic.Int64  // Delayed: when due
	// Plain fields, read and written only by the record's owner (stBusy):
	// an atomic store is a full barrier on amd64, and the hot path sets both.
	readyAt     int64 // when it last became pending (Peek order, wait time)
	leaseExpiry int64
	leasedAt    atomic.Int64
	prevDelay   atomic.Int64 // last backoff, for decorrelated jitter

	// Written by the goroutine that leased the record, read by whoever
	// settles that lease (ordered by the word's CAS).
	ticket breaker.Ticket
	cancel atomic.Pointer[context.CancelFunc] // Run's handler context
	hist   atomic.Pointer[history]
}

// slab holds every live message. A message's home slot is its ID masked by
// the slab size, so an ID locates its record without a map; IDs whose home
// is taken (a redrive, or a replay into a slab of another size) probe up to
// probeLimit slots further.
//
// Records live in chunks allocated on first use, so that a large
// MaxMessages costs memory only as messages arrive (and Open does not zero
// a gigabyte up front). A chunk, once allocated, stays.
type slab struct {
	mask   uint64
	chunks []atomic.Pointer[slabChunk]
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
	fresh := new(slabChunk)
	if s.chunks[i].CompareAndSwap(nil, fresh) {
		return fresh
	}
	return s.chunks[i].Load()
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

// claimHome tries to take id's home slot for a new record; it leaves the
// record stBusy with the next generation's word unpublished.
func (s *slab) claimHome(id uint64) (uint32, bool) {
	slot := uint32(id & s.mask)
	r := s.at(slot)
	w := r.word.Load()
	if wordState(w) != stFree || !r.word.CompareAndSwap(w, withState(w, stBusy)) {
		return 0, false
	}
	r.id.Store(id)
	return slot, true
}

// claimNear takes the first free slot within probeLimit of id's home.
func (s *slab) claimNear(id uint64) (uint32, bool) {
	for i := uint64(0); i < probeLimit; i++ {
		slot := uint32((id + i) & s.mask)
		r := s.at(slot)
		w := r.word.Load()
		if wordState(w) == stFree && r.word.CompareAndSwap(w, withState(w, stBusy)) {
			r.id.Store(id)
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
		if r := s.lookup(slot); r != nil && r.id.Load() == id && wordState(r.word.Load()) != stFree {
			return slot, true
		}
	}
	return 0, false
}

// acquire moves the record from state `from` at generation gen to stBusy;
// false if it is elsewhere (the caller's reference is stale). A reader
// (Get, Peek, a checkpoint) may hold the record stBusy for a moment without
// changing its generation, so acquire waits that out rather than take the
// reference for stale and drop it.
func (r *rec) acquire(gen, from uint32) bool {
	for spins := 0; ; spins++ {
		w := r.word.Load()
		if wordGen(w) != gen {
			return false
		}
		switch wordState(w) {
		case from:
			if r.word.CompareAndSwap(w, withState(w, stBusy)) {
				return true
			}
		case stBusy:
			if spins > 100 {
				runtime.Gosched()
			}
		default:
			return false
		}
	}
}

// acquireAny moves the record from any of the states in allowed (a bit set
// of 1<<state) to stBusy, waiting out a concurrent stBusy. It returns the
// previous word.
func (r *rec) acquireAny(allowed uint32) (uint64, bool) {
	for spins := 0; ; spins++ {
		w := r.word.Load()
		st := wordState(w)
		if st == stBusy || st == stCommitting {
			if spins > 100 {
				runtime.Gosched()
			}
			continue
		}
		if allowed&(1<<st) == 0 {
			return w, false
		}
		if r.word.CompareAndSwap(w, withState(w, stBusy)) {
			return w, true
		}
	}
}

// release publishes state with the next generation and returns the ref
// naming that generation.
func (r *rec) release(slot uint32, state uint32) ref {
	return r.releaseAttempts(slot, state, r.attempts())
}

// releaseAttempts is release with the attempts count set.
func (r *rec) releaseAttempts(slot uint32, state, attempts uint32) ref {
	gen := wordGen(r.word.Load()) + 1
	r.word.Store(makeWord(gen, attempts, state))
	return ref{slot: slot, gen: gen}
}

// expired reports whether the message's TTL has passed at now; the caller
// owns the record.
func (r *rec) expired(now int64) bool { return r.expiresAt != 0 && now >= r.expiresAt }

// attempts is the message's delivery count; the caller owns the record.
func (r *rec) attempts() uint32 { return wordAttempts(r.word.Load()) }

// setAttempts sets the count while the caller owns the record (stBusy).
func (r *rec) setAttempts(n uint32) {
	r.word.Store(makeWord(wordGen(r.word.Load()), n, stBusy))
}

// free clears a busy record and returns its slot to the free pool. Message
// fields are cleared so the slab keeps no payload alive.
func (r *rec) free() {
	r.msg = Message{}
	// Most records never fail or run under Run: a load is cheaper than an
	// atomic pointer store with its write barrier.
	if r.hist.Load() != nil {
		r.hist.Store(nil)
	}
	if r.cancel.Load() != nil {
		r.cancel.Store(nil)
	}
	r.ticket = breaker.Ticket{}
	// id stays: find may still meet it, and every caller checks the state.
	r.word.Store(makeWord(wordGen(r.word.Load())+1, 0, stFree))
}

// acquireID finds id and moves its record from one of the allowed states to
// stBusy. It returns the slot and the previous word, or ok=false when id is
// not live or is in another state (prev tells which).
func (s *slab) acquireID(id uint64, allowed uint32) (slot uint32, prev uint64, found, ok bool) {
	slot, found = s.find(id)
	if !found {
		return 0, 0, false, false
	}
	r := s.at(slot)
	prev, ok = r.acquireAny(allowed | 1<<stFree)
	if !ok {
		return slot, prev, true, false
	}
	if wordState(prev) == stFree || r.id.Load() != id {
		// Freed, or freed and reused, between find and acquire.
		r.word.Store(prev)
		return 0, 0, false, false
	}
	if allowed&(1<<wordState(prev)) == 0 {
		r.word.Store(prev)
		return slot, prev, true, false
	}
	return slot, prev, true, true
}

// storeIfChanged* skip the atomic store (a full barrier on amd64) when the
// field already holds v; only the record's owner writes these fields, so
// the load-compare cannot race with another writer.
func storeIfChanged32(a *atomic.Uint32, v uint32) {
	if a.Load() != v {
		a.Store(v)
	}
}

func storeIfChangedI32(a *atomic.Int32, v int32) {
	if a.Load() != v {
		a.Store(v)
	}
}

func storeIfChanged64(a *atomic.Int64, v int64) {
	if a.Load() != v {
		a.Store(v)
	}
}

// stableWord returns the record's word once it is not stBusy. Callers that
// must not miss a record in a given state (lease scans) use it instead of a
// single load, since readers take records stBusy for a moment.
func (r *rec) stableWord() uint64 {
	for spins := 0; ; spins++ {
		w := r.word.Load()
		if wordState(w) != stBusy {
			return w
		}
		if spins > 100 {
			runtime.Gosched()
		}
	}
}
