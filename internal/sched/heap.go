package sched

import (
	"sync"
	"sync/atomic"
)

// DeadlineHeap is a min-heap of entries ordered by deadline (ties in push
// order), with lazy deletion: an entry whose record has moved on stays in
// the heap until it reaches the top, where PopIf drops it, or until Compact
// sweeps it out.
//
// All methods are safe for concurrent use. Mutating methods and Peek take a
// mutex; Len and NextDeadline read atomics, so a caller can check "is any
// deadline pending, and is the earliest one near" without locking. The zero
// value is an empty heap ready to use. Push allocates only when the heap
// outgrows its largest size so far.
type DeadlineHeap struct {
	mu    sync.Mutex
	items []heapItem
	seq   uint64 // push counter: equal deadlines leave in push order

	n        atomic.Int64 // len(items), published after every change
	earliest atomic.Int64 // items[0].deadline when n > 0
}

type heapItem struct {
	deadline int64
	seq      uint64
	e        Entry
}

func (a *heapItem) less(b *heapItem) bool {
	return a.deadline < b.deadline || (a.deadline == b.deadline && a.seq < b.seq)
}

// Push adds e with the given deadline (any int64; the engine uses unix
// nanoseconds). O(log n). Safe for concurrent use.
func (h *DeadlineHeap) Push(deadline int64, e Entry) {
	h.mu.Lock()
	h.seq++
	h.items = append(h.items, heapItem{deadline: deadline, seq: h.seq, e: e})
	h.up(len(h.items) - 1)
	h.publish()
	h.mu.Unlock()
}

// Peek returns the entry with the earliest deadline without removing it,
// stale or not. ok is false when the heap is empty. Safe for concurrent use.
func (h *DeadlineHeap) Peek() (deadline int64, e Entry, ok bool) {
	if h.n.Load() == 0 {
		return 0, Entry{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.items) == 0 {
		return 0, Entry{}, false
	}
	return h.items[0].deadline, h.items[0].e, true
}

// Pop removes and returns the entry with the earliest deadline, stale or
// not. ok is false when the heap is empty. O(log n). Safe for concurrent
// use.
func (h *DeadlineHeap) Pop() (deadline int64, e Entry, ok bool) {
	if h.n.Load() == 0 {
		return 0, Entry{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.items) == 0 {
		return 0, Entry{}, false
	}
	top := h.popTop()
	h.publish()
	return top.deadline, top.e, true
}

// PopIf removes and returns the earliest entry if its deadline is <= before
// and it is valid. On the way it drops every stale entry (valid returns
// false) that it finds at the top, whatever its deadline: that is the lazy
// deletion. A nil valid treats every entry as valid.
//
// When the heap is empty or its earliest deadline (stale or not) is after
// before, PopIf returns at once from two atomic loads, without locking.
// Otherwise it locks; valid is called with the lock held, so it must be
// quick and must not call back into the heap. Safe for concurrent use.
func (h *DeadlineHeap) PopIf(before int64, valid func(Entry) bool) (Entry, bool) {
	it, ok := h.popDue(before, valid)
	return it.e, ok
}

// popDue is PopIf reporting the whole item (Scheduler wants the deadline).
func (h *DeadlineHeap) popDue(before int64, valid func(Entry) bool) (heapItem, bool) {
	if h.n.Load() == 0 || h.earliest.Load() > before {
		return heapItem{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.items) > 0 {
		top := &h.items[0]
		if valid != nil && !valid(top.e) {
			h.popTop()
			continue
		}
		if top.deadline > before {
			break
		}
		it := h.popTop()
		h.publish()
		return it, true
	}
	h.publish()
	return heapItem{}, false
}

// Compact removes every stale entry (valid returns false) wherever it is
// and returns how many it removed. O(n); meant for an occasional sweep when
// the heap holds many more entries than live deadlines (entries far in the
// future take long to surface). Safe for concurrent use.
func (h *DeadlineHeap) Compact(valid func(Entry) bool) int {
	if valid == nil || h.n.Load() == 0 {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	kept := h.items[:0]
	for _, it := range h.items {
		if valid(it.e) {
			kept = append(kept, it)
		}
	}
	removed := len(h.items) - len(kept)
	clear(h.items[len(kept):])
	h.items = kept
	for i := len(kept)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	h.publish()
	return removed
}

// Len returns the number of entries, stale ones included. Safe for
// concurrent use; one atomic load, no lock.
func (h *DeadlineHeap) Len() int { return int(h.n.Load()) }

// NextDeadline returns the earliest deadline in the heap (possibly a stale
// entry's: a lower bound on the earliest live deadline). ok is false when
// the heap is empty. Safe for concurrent use; atomic loads, no lock, so the
// two halves may come from different moments under concurrent mutation.
func (h *DeadlineHeap) NextDeadline() (deadline int64, ok bool) {
	if h.n.Load() == 0 {
		return 0, false
	}
	return h.earliest.Load(), true
}

// popTop removes items[0]; h.mu must be held and the heap non-empty.
func (h *DeadlineHeap) popTop() heapItem {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items[last] = heapItem{}
	h.items = h.items[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

// publish refreshes the lock-free view; h.mu must be held. earliest is
// stored before n so that a reader that sees the new count finds a
// deadline no older than it.
func (h *DeadlineHeap) publish() {
	if len(h.items) > 0 {
		h.earliest.Store(h.items[0].deadline)
	}
	h.n.Store(int64(len(h.items)))
}

func (h *DeadlineHeap) up(i int) {
	it := h.items[i]
	for i > 0 {
		parent := (i - 1) / 2
		if !it.less(&h.items[parent]) {
			break
		}
		h.items[i] = h.items[parent]
		i = parent
	}
	h.items[i] = it
}

func (h *DeadlineHeap) down(i int) {
	n := len(h.items)
	it := h.items[i]
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if r := child + 1; r < n && h.items[r].less(&h.items[child]) {
			child = r
		}
		if !h.items[child].less(&it) {
			break
		}
		h.items[i] = h.items[child]
		i = child
	}
	h.items[i] = it
}

// Due appends to dst, earliest first (ties in push order) and without
// removing them, the entries whose deadline is at or before before and
// that valid accepts (nil: every one), looking at no more than visit
// entries, stale ones included. It walks the heap best-first from the
// top: O(visit·log visit) under the mutex whatever the heap's size, so
// that a reader (the engine's Peek) can see what Next would serve without
// a scan. valid is called with the lock held, as for PopIf. Safe for
// concurrent use; allocates only a frontier of at most visit+1 indices
// and what dst grows by.
func (h *DeadlineHeap) Due(before int64, visit int, valid func(Entry) bool, dst []Entry) []Entry {
	if visit <= 0 || h.n.Load() == 0 || h.earliest.Load() > before {
		return dst
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// The frontier is a small min-heap of indices into h.items: the
	// children of every item taken so far.
	front := make([]int, 0, min(visit+1, len(h.items)))
	less := func(a, b int) bool { return h.items[front[a]].less(&h.items[front[b]]) }
	push := func(i int) {
		if i >= len(h.items) {
			return
		}
		front = append(front, i)
		for c := len(front) - 1; c > 0; {
			p := (c - 1) / 2
			if !less(c, p) {
				break
			}
			front[c], front[p] = front[p], front[c]
			c = p
		}
	}
	pop := func() int {
		top := front[0]
		n := len(front) - 1
		front[0] = front[n]
		front = front[:n]
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < n && less(l, m) {
				m = l
			}
			if l+1 < n && less(l+1, m) {
				m = l + 1
			}
			if m == i {
				break
			}
			front[i], front[m] = front[m], front[i]
			i = m
		}
		return top
	}
	push(0)
	for seen := 0; seen < visit && len(front) > 0; seen++ {
		i := pop()
		it := &h.items[i]
		if it.deadline > before {
			break
		}
		if valid == nil || valid(it.e) {
			dst = append(dst, it.e)
		}
		push(2*i + 1)
		push(2*i + 2)
	}
	return dst
}
