package ringwal

import (
	"encoding/binary"
	"sync/atomic"
)

// This file owns how Open sizes replay's memory in one step. Rebuilding a
// large backlog allocates about as much as the backlog weighs (slab
// chunks, payload arenas). Allocated as replay goes, the heap doubles
// again and again, and each doubling starts a GC cycle that marks, and
// for the slab scans, everything rebuilt so far: a third of a restart's
// time for a million messages. Allocated in a burst as replay starts,
// while the heap is small, it is marked by the short cycles the burst
// starts. The heap goal they leave has room for the whole backlog: at
// most one cycle runs while replay fills it. This was measured with
// GODEBUG=gctrace=1 and bench/w4prof.
//
// The size comes from the hint the last Close left (wal's CloseWithHint):
// the messages the slab held, their arena payload bytes and the largest
// such payload. It is advice: with none (a first Open, a crash) replay
// allocates as it goes. What a burst allocated and replay did not use is
// garbage once Open returns.

// closeHint is what Close tells the next Open: the live messages, the
// payload bytes they keep in arenas and the largest of those payloads
// (what an arena chunk may waste at its end).
type closeHint struct {
	messages, arenaBytes, arenaMax uint64
}

const closeHintVersion = 1

// add counts a live message whose payload is payLen bytes.
func (h *closeHint) add(payLen int32) {
	h.messages++
	if arenaHolds(int(payLen)) {
		h.arenaBytes += uint64(payLen)
		h.arenaMax = max(h.arenaMax, uint64(payLen))
	}
}

func (h closeHint) encode() []byte {
	b := []byte{closeHintVersion}
	b = binary.AppendUvarint(b, h.messages)
	b = binary.AppendUvarint(b, h.arenaBytes)
	return binary.AppendUvarint(b, h.arenaMax)
}

// decodeCloseHint reads a hint encode wrote; ok is false for anything
// else (another version's hint is ignored, not an error).
func decodeCloseHint(b []byte) (h closeHint, ok bool) {
	if len(b) < 1 || b[0] != closeHintVersion {
		return closeHint{}, false
	}
	b = b[1:]
	for _, f := range []*uint64{&h.messages, &h.arenaBytes, &h.arenaMax} {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return closeHint{}, false
		}
		*f, b = v, b[n:]
	}
	if len(b) != 0 || h.arenaMax > arenaMaxPayload {
		return closeHint{}, false
	}
	return h, true
}

// spares hands out memory allocated ahead, to any goroutine, as a
// goroutine of its own allocates it (fill): take returns nil when the
// next spare is not allocated yet or none is left, and the caller
// allocates for itself.
type spares[T any] struct {
	items []*T
	ready atomic.Int64 // items[:ready] are allocated
	next  atomic.Int64 // items[:next] are taken
	stop  atomic.Bool
	done  chan struct{}
}

// newSpares starts a goroutine that allocates n spares, in order; stop
// ends it.
func newSpares[T any](n int) *spares[T] {
	s := &spares[T]{items: make([]*T, n), done: make(chan struct{})}
	go s.fill()
	return s
}

func (s *spares[T]) fill() {
	defer close(s.done)
	for i := range s.items {
		if s.stop.Load() {
			return
		}
		s.items[i] = new(T)
		s.ready.Store(int64(i + 1))
	}
}

// take returns a spare, nil when none is ready (or s is nil). Safe for
// concurrent use.
func (s *spares[T]) take() *T {
	if s == nil {
		return nil
	}
	for {
		i := s.next.Load()
		if i >= s.ready.Load() {
			return nil
		}
		if s.next.CompareAndSwap(i, i+1) {
			p := s.items[i]
			s.items[i] = nil // taken once: the rest is garbage when replay ends
			return p
		}
	}
}

// stopFilling ends fill and waits for it (nil-safe; once only).
func (s *spares[T]) stopFilling() {
	if s != nil {
		s.stop.Store(true)
		<-s.done
	}
}

// reserve starts allocating the slab chunks and arena chunks that
// replaying h's messages will fill, on a goroutine each, while replay
// starts: in a burst at the start of replay, while the heap is small. The
// burst does start GC cycles, but short ones: the chunks are empty, and
// the arenas hold no pointers to scan. The slab's come first in slab
// order, as replay will want them. endReserve stops what is left.
func (rs *replayState) reserve(h closeHint) {
	maxChunks := uint64(1) << maxSlabBits >> slabChunkBits
	chunks := min(h.messages/slabChunkSlots+2, maxChunks)
	// An arena chunk wastes less than its largest payload at its end, and
	// each decoding goroutine (four at most for the snapshot, four for
	// the log, each with an arena of its own: newPreparer) leaves one
	// chunk partly filled.
	fill := arenaChunk - h.arenaMax
	arenas := min((h.arenaBytes+fill-1)/fill+8, maxChunks)
	if h.messages == 0 {
		return
	}
	rs.slab.spare = newSpares[slabChunk](int(chunks))
	if arenas > 0 {
		rs.arenas = newSpares[[arenaChunk]byte](int(arenas))
	}
}

// endReserve stops allocating spares, and drops those replay did not
// take: they are garbage once Open returns.
func (rs *replayState) endReserve() {
	rs.slab.spare.stopFilling()
	rs.arenas.stopFilling()
	rs.slab.spare, rs.arenas = nil, nil
}
