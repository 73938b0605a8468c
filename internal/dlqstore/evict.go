package dlqstore

// Bounding the store: Evict removes the oldest entries, reviewed ones
// first, so that a downstream that rejects everything for a week cannot
// grow the process without limit. The reviewed entries are kept in a heap
// by dead-letter order (they are marked in any order); the unreviewed ones
// are found at the fronts of the category indexes once no reviewed entry
// is left.

// reviewedHeap is a min-heap by pos of the records marked reviewed, with
// lazy deletion: a removed record stays until it reaches the top or
// tombstones are half the heap, when it is rebuilt (O(1) amortised per
// removal).
type reviewedHeap[M any] struct {
	recs []*record[M]
	gone int
}

func (h *reviewedHeap[M]) push(r *record[M]) {
	h.recs = append(h.recs, r)
	h.up(len(h.recs) - 1)
}

// top returns the oldest live reviewed record (nil if none), popping the
// tombstones above it.
func (h *reviewedHeap[M]) top() *record[M] {
	for len(h.recs) > 0 {
		r := h.recs[0]
		if !r.gone {
			return r
		}
		n := len(h.recs) - 1
		h.recs[0] = h.recs[n]
		h.recs[n] = nil
		h.recs = h.recs[:n]
		h.gone--
		h.down(0)
	}
	return nil
}

// compact rebuilds the heap without its tombstones once they are at least
// half of it.
func (h *reviewedHeap[M]) compact() {
	if h.gone == 0 || h.gone*2 < len(h.recs) {
		return
	}
	live := h.recs[:0]
	for _, r := range h.recs {
		if !r.gone {
			live = append(live, r)
		}
	}
	clear(h.recs[len(live):])
	h.recs, h.gone = live, 0
	for i := len(h.recs)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *reviewedHeap[M]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.recs[p].pos.cmp(h.recs[i].pos) <= 0 {
			return
		}
		h.recs[p], h.recs[i] = h.recs[i], h.recs[p]
		i = p
	}
}

func (h *reviewedHeap[M]) down(i int) {
	n := len(h.recs)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.recs[r].pos.cmp(h.recs[l].pos) < 0 {
			m = r
		}
		if h.recs[i].pos.cmp(h.recs[m].pos) <= 0 {
			return
		}
		h.recs[i], h.recs[m] = h.recs[m], h.recs[i]
		i = m
	}
}

// Evict removes entries until at most keep are left and returns them, in
// the order removed, so that the caller can log and count each one: the
// oldest reviewed entries first (by DeadAt, then ID), then the oldest
// unreviewed ones. A negative keep counts as 0. It holds the write lock; each
// removal costs O(log r) (r reviewed entries) or O(c) (c categories),
// amortised, so a store kept at its bound by one Evict per Add pays
// O(log n) per Add.
func (s *Store[M]) Evict(keep int) []Entry[M] {
	keep = max(keep, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byID) <= keep {
		return nil
	}
	out := make([]Entry[M], 0, len(s.byID)-keep)
	for len(s.byID) > keep {
		r := s.reviewed.top()
		if r == nil {
			r = s.oldestLocked()
		}
		if r == nil { // cannot happen while byID holds entries
			break
		}
		s.drop(r)
		s.compact(r)
		out = append(out, r.e) // the record is gone: no one else holds its Failures
	}
	return out
}

// oldestLocked returns the oldest live entry: the earliest of the
// categories' fronts. s.mu must be held.
func (s *Store[M]) oldestLocked() *record[M] {
	var best *record[M]
	for c := range s.byCat {
		if r := s.byCat[c].front(); r != nil && (best == nil || r.pos.cmp(best.pos) < 0) {
			best = r
		}
	}
	return best
}
