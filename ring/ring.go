package ring

import (
	"reflect"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/ringwal/ringwal/internal/pad"
)

// Ring is a bounded multi-producer multi-consumer FIFO queue that never
// locks and never allocates after New.
//
// Each slot carries a sequence number that says whose turn the slot is.
// The producer of position p may write it when seq == 2p. The consumer of
// p may read it when seq == 2p+1. The consumer hands it to the producer of
// p+Cap() by storing 2·(p+Cap()). Encoding the phase in the low bit keeps
// a capacity of one correct; Vyukov's queue uses seq == p and seq == p+1
// instead. With that classic encoding, "written at p" and "free for p+1"
// would be the same number.
//
// Producers claim positions with a CAS on enqPos, consumers on deqPos; the
// two counters live on separate cache lines so that producers and consumers
// do not invalidate each other's line on every operation. FIFO order holds
// per producer: values pushed by one goroutine are popped in that order.
type Ring[T any] struct {
	_      pad.Line
	enqPos atomic.Uint64
	_      [pad.CacheLine - 8]byte
	deqPos atomic.Uint64
	_      [pad.CacheLine - 8]byte
	mask   uint64
	slots  []slot[T]
	// plain is true when T holds no pointers: a popped slot need not be
	// cleared (nothing to keep alive), so a pop only reads it, and Peek
	// may read it too.
	plain bool
	_     pad.Line
}

type slot[T any] struct {
	seq atomic.Uint64
	val T
}

// New returns a ring that holds capacity values, rounded up to a power of
// two; a capacity below 1 gives a ring of one. Capacities above 1<<40 are
// clamped to 1<<40 (far beyond memory anyway).
func New[T any](capacity int) *Ring[T] {
	n := roundPow2(capacity)
	r := &Ring[T]{mask: uint64(n - 1), slots: make([]slot[T], n), plain: pointerFree(reflect.TypeFor[T]())}
	// Plain stores: nobody else sees the ring yet, and an atomic store
	// per slot made New of a large ring (restore allocates one of a
	// million slots) several times slower.
	for i := range r.slots {
		*(*uint64)(unsafe.Pointer(&r.slots[i].seq)) = uint64(i) << 1
	}
	return r
}

func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Complex64:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// take reads s's value; the caller popped it. A ring of pointers clears
// the slot, so that it keeps no popped value alive.
func (r *Ring[T]) take(s *slot[T]) T {
	v := s.val
	if !r.plain {
		var zero T
		s.val = zero
	}
	return v
}

// pinned marks a slot's seq while Peek reads its value: the slot's
// consumer cannot hand it to the next producer meanwhile. Positions stay
// far below it (New caps capacity; a position would need 2^61 pushes).
const pinned = 1 << 62

// release hands a popped slot of position pos to the producer of the next
// lap. It waits out a Peek reading the slot (a few instructions): a CAS
// rather than a store, which costs a pop nothing more.
func (r *Ring[T]) release(s *slot[T], pos uint64) {
	full, next := pos<<1|1, (pos+r.mask+1)<<1
	for !s.seq.CompareAndSwap(full, next) {
		runtime.Gosched()
	}
}

func roundPow2(capacity int) int {
	const maxCap = 1 << 40
	if capacity <= 1 {
		return 1
	}
	if capacity > maxCap {
		return maxCap
	}
	n := 1
	for n < capacity {
		n <<= 1
	}
	return n
}

// Cap returns the number of values the ring holds when full.
func (r *Ring[T]) Cap() int { return int(r.mask + 1) }

// Len returns the number of values in the ring. Under concurrent use it is
// a snapshot that may be stale by the time it returns; it never exceeds Cap
// and is never negative.
func (r *Ring[T]) Len() int {
	// Read deq first: enq only grows, so enq-deq read in this order can
	// overstate but never go negative.
	deq := r.deqPos.Load()
	enq := r.enqPos.Load()
	n := int64(enq - deq)
	if n < 0 {
		return 0
	}
	if n > int64(r.mask+1) {
		return int(r.mask + 1)
	}
	return int(n)
}

// TryPush appends v and reports true, or reports false at once if the ring
// is full. Safe for concurrent use by any number of producers and consumers.
func (r *Ring[T]) TryPush(v T) bool {
	pos := r.enqPos.Load()
	for {
		s := &r.slots[pos&r.mask]
		seq := s.seq.Load()
		switch diff := int64(seq - pos<<1); {
		case diff == 0:
			if r.enqPos.CompareAndSwap(pos, pos+1) {
				s.val = v
				s.seq.Store(pos<<1 | 1)
				return true
			}
			pos = r.enqPos.Load()
		case diff < 0:
			// The slot still holds the value of position pos-Cap():
			// full, unless another producer has moved on meanwhile.
			if now := r.enqPos.Load(); now != pos {
				pos = now
				continue
			}
			return false
		default:
			pos = r.enqPos.Load()
		}
	}
}

// TryPop removes and returns the oldest value, or reports false at once if
// the ring is empty. The slot is cleared so that the ring keeps no
// reference to a popped value. Safe for concurrent use.
func (r *Ring[T]) TryPop() (T, bool) {
	pos := r.deqPos.Load()
	for {
		s := &r.slots[pos&r.mask]
		seq := s.seq.Load()
		switch diff := int64(seq - (pos<<1 | 1)); {
		case diff == 0:
			if r.deqPos.CompareAndSwap(pos, pos+1) {
				v := r.take(s)
				r.release(s, pos)
				return v, true
			}
			pos = r.deqPos.Load()
		case diff < 0:
			if now := r.deqPos.Load(); now != pos {
				pos = now
				continue
			}
			var zero T
			return zero, false
		default:
			pos = r.deqPos.Load()
		}
	}
}

// PushBatch appends as many values from vs, in order, as fit and returns
// how many it appended (a prefix of vs). The values it appends occupy
// consecutive positions, so no other producer's value lands between them.
// Safe for concurrent use.
func (r *Ring[T]) PushBatch(vs []T) int {
	if len(vs) == 0 {
		return 0
	}
	pos := r.enqPos.Load()
	for {
		// Count the consecutive free slots from pos. A slot is free for
		// position p when its seq is exactly 2p.
		n := 0
		limit := min(len(vs), int(r.mask+1))
		for n < limit && r.slots[(pos+uint64(n))&r.mask].seq.Load() == (pos+uint64(n))<<1 {
			n++
		}
		if n == 0 {
			if now := r.enqPos.Load(); now != pos {
				pos = now
				continue
			}
			return 0
		}
		if !r.enqPos.CompareAndSwap(pos, pos+uint64(n)) {
			pos = r.enqPos.Load()
			continue
		}
		for i := 0; i < n; i++ {
			p := pos + uint64(i)
			s := &r.slots[p&r.mask]
			s.val = vs[i]
			s.seq.Store(p<<1 | 1)
		}
		return n
	}
}

// PopBatch removes up to len(dst) of the oldest values into dst, in order,
// and returns how many it removed. Safe for concurrent use.
func (r *Ring[T]) PopBatch(dst []T) int {
	if len(dst) == 0 {
		return 0
	}
	pos := r.deqPos.Load()
	for {
		n := 0
		limit := min(len(dst), int(r.mask+1))
		for n < limit {
			full := (pos+uint64(n))<<1 | 1
			seq := r.slots[(pos+uint64(n))&r.mask].seq.Load()
			if seq == full|pinned && n == 0 {
				runtime.Gosched() // a Peek is reading the head: not empty
				continue
			}
			if seq != full {
				break
			}
			n++
		}
		if n == 0 {
			if now := r.deqPos.Load(); now != pos {
				pos = now
				continue
			}
			return 0
		}
		if !r.deqPos.CompareAndSwap(pos, pos+uint64(n)) {
			pos = r.deqPos.Load()
			continue
		}
		for i := 0; i < n; i++ {
			p := pos + uint64(i)
			s := &r.slots[p&r.mask]
			dst[i] = r.take(s)
			r.release(s, p)
		}
		return n
	}
}

// Peek calls f with the values in the ring from the oldest on, in order,
// until f returns false or it has seen limit values, without removing
// them. It reports false, and calls nothing, for a ring whose T holds
// pointers. Values popped while it looks are skipped, so f sees a
// moment's view, as Len gives. Safe for concurrent use. It pins each slot
// for as long as it takes to copy the value. So the slot's consumer, who
// may be popping it at that instant, cannot pass it to a producer until
// the copy is done.
func (r *Ring[T]) Peek(limit int, f func(T) bool) bool {
	if !r.plain {
		return false
	}
	pos := r.deqPos.Load()
	for seen := 0; seen < limit; {
		s := &r.slots[pos&r.mask]
		full := pos<<1 | 1
		if !s.seq.CompareAndSwap(full, full|pinned) {
			seq := s.seq.Load()
			switch {
			case seq == full|pinned:
				runtime.Gosched() // another Peek has it
			case int64(seq-full) < 0:
				return true // not written yet: the ring ends here
			default:
				pos = max(pos+1, r.deqPos.Load()) // popped meanwhile
			}
			continue
		}
		v := s.val
		s.seq.Store(full)
		seen++
		if !f(v) {
			return true
		}
		pos++
	}
	return true
}
