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
// time for a million messages. Allocated in one burst before replay
// starts, while the heap is small, it is marked once as it is allocated
// and no cycle runs during replay.
//
// The size comes from the hint the last Close left (wal's CloseWithHint):
// the messages the slab held and their payload bytes. It is advice: with
// none (a first Open, a crash) replay allocates as it goes, and what a
// burst allocated and replay did not use is garbage once Open returns.

// closeHint is what Close tells the next Open: the live messages and the
// payload bytes they keep in arenas.
type closeHint struct {
	messages, arenaBytes uint64
}

const closeHintVersion = 1

// add counts a live message whose payload is payLen bytes.
func (h *closeHint) add(payLen int32) {
	h.messages++
	if arenaHolds(int(payLen)) {
		h.arenaBytes += uint64(payLen)
	}
}

func (h closeHint) encode() []byte {
	b := []byte{closeHintVersion}
	b = binary.AppendUvarint(b, h.messages)
	return binary.AppendUvarint(b, h.arenaBytes)
}

// decodeCloseHint reads a hint encode wrote; ok is false for anything
// else (another version's hint is ignored, not an error).
func decodeCloseHint(b []byte) (h closeHint, ok bool) {
	if len(b) < 1 || b[0] != closeHintVersion {
		return closeHint{}, false
	}
	b = b[1:]
	var n, m int
	h.messages, n = binary.Uvarint(b)
	if n <= 0 {
		return closeHint{}, false
	}
	h.arenaBytes, m = binary.Uvarint(b[n:])
	if m <= 0 || n+m != len(b) {
		return closeHint{}, false
	}
	return h, true
}

// spares hands out memory allocated ahead, to any goroutine, until it
// runs out (take returns nil).
type spares[T any] struct {
	items []*T
	next  atomic.Int64
}

func newSpares[T any](n int) *spares[T] {
	s := &spares[T]{items: make([]*T, n)}
	for i := range s.items {
		s.items[i] = new(T)
	}
	return s
}

// take returns a spare, nil when none is left (or s is nil). Safe for
// concurrent use.
func (s *spares[T]) take() *T {
	if s == nil {
		return nil
	}
	i := s.next.Add(1) - 1
	if i >= int64(len(s.items)) {
		return nil
	}
	p := s.items[i]
	s.items[i] = nil // each index is taken once: no other goroutine touches it
	return p
}

// reserve allocates, in one burst, the slab chunks and arena chunks that
// replaying h's messages will fill. The burst does start GC cycles, but
// short ones: the chunks are empty, and the arenas, first, hold no
// pointers to scan.
func (rs *replayState) reserve(h closeHint) {
	maxChunks := uint64(1) << maxSlabBits >> slabChunkBits
	chunks := min(h.messages/slabChunkSlots+2, maxChunks)
	// An arena chunk wastes at most the tail no payload fitted in.
	arenas := min((h.arenaBytes+arenaChunk-arenaMaxPayload-1)/(arenaChunk-arenaMaxPayload), maxChunks)
	if h.messages == 0 {
		return
	}
	if arenas > 0 {
		rs.arenas = newSpares[[arenaChunk]byte](int(arenas))
	}
	rs.slab.spare = newSpares[slabChunk](int(chunks))
}
