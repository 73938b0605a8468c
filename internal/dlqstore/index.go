package dlqstore

import (
	"slices"
	"sync/atomic"
	"time"
)

// pos is an entry's place in the result order: dead-letter time, then ID.
// It never changes while the entry is stored.
type pos struct {
	at time.Time // monotonic reading stripped, so Compare is by wall time
	id uint64
}

func (a pos) cmp(b pos) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	switch {
	case a.id < b.id:
		return -1
	case a.id > b.id:
		return 1
	}
	return 0
}

// record is one stored entry. Indexes share the pointer; removing an entry
// sets gone, and each index drops its tombstones when compacting.
type record[M any] struct {
	e    Entry[M]
	pos  pos
	seq  uint64 // the store's add sequence when it was added (Store.seq)
	gone bool
}

// index is a slice of records sorted by pos, with lazy deletion: a removal
// is O(1) (a tombstone), and the slice is compacted once tombstones
// outnumber live records, so compaction costs O(1) amortised per removal
// and a scan never wades through more tombstones than live records in the
// whole index. Insertion is a binary search plus a shift of the records
// after the new one: O(1) amortised when entries arrive in dead-letter time
// order, as they do from the engine, O(n) in the worst case.
type index[M any] struct {
	recs []*record[M]
	gone int
}

func (x *index[M]) live() int { return len(x.recs) - x.gone }

// front returns the oldest live record, or nil. compact keeps the front
// live, so this is O(1) between a drop and its compact.
func (x *index[M]) front() *record[M] {
	for _, r := range x.recs {
		if !r.gone {
			return r
		}
	}
	return nil
}

// insert places r after every record whose pos is ≤ r.pos.
func (x *index[M]) insert(r *record[M]) {
	i := x.search(r.pos, true)
	x.recs = slices.Insert(x.recs, i, r)
}

// search returns the first i whose pos is > p (after) or ≥ p (!after).
func (x *index[M]) search(p pos, after bool) int {
	lo, hi := 0, len(x.recs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		c := x.recs[m].pos.cmp(p)
		if c < 0 || (after && c == 0) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// compact drops the tombstones at the front at once (the oldest entries
// go first: an eviction, a retention sweep), in O(1) amortised per
// tombstone and without moving the live records, so that the front is
// always live; and the rest once they are at least half the slice.
func (x *index[M]) compact() {
	lead := 0
	for lead < len(x.recs) && x.recs[lead].gone {
		lead++
	}
	if lead > 0 {
		clear(x.recs[:lead]) // the array's prefix must not keep them alive
		x.recs = x.recs[lead:]
		x.gone -= lead
	}
	if x.gone == 0 || x.gone*2 < len(x.recs) {
		return
	}
	x.recs = slices.DeleteFunc(x.recs, func(r *record[M]) bool { return r.gone })
	x.gone = 0
}

// queueIndex is a named queue's index and its count of live entries, the
// count kept in an atomic for QueueLen and QueueCounts, which read it
// without the store's lock (it equals the index's live() under the lock).
type queueIndex[M any] struct {
	index[M]
	n atomic.Int64
}

// ghosts remembers where recently removed entries stood, so that a Query
// whose After cursor names an entry removed since the last page (redriven
// or purged by another operator) still resumes at the right place. It is a
// FIFO of bounded size; seq tells a stale FIFO slot from the live mapping
// when an ID is removed twice.
type ghosts struct {
	at    map[uint64]ghost
	fifo  []ghostSlot // grows by append up to limit: a store nobody removes from holds none
	limit int         // the FIFO's size (Options.CursorMemory); 0 remembers nothing
	next  int         // next fifo slot to overwrite
	seq   uint64
}

type ghost struct {
	pos pos
	seq uint64
}

type ghostSlot struct{ id, seq uint64 }

func newGhosts(n int) ghosts {
	if n <= 0 {
		return ghosts{}
	}
	return ghosts{at: make(map[uint64]ghost), limit: n}
}

func (g *ghosts) add(p pos) {
	if g.limit == 0 {
		return
	}
	g.seq++
	slot := ghostSlot{id: p.id, seq: g.seq}
	if len(g.fifo) < g.limit {
		g.fifo = append(g.fifo, slot)
	} else {
		old := g.fifo[g.next]
		if gh, ok := g.at[old.id]; ok && gh.seq == old.seq {
			delete(g.at, old.id)
		}
		g.fifo[g.next] = slot
		g.next = (g.next + 1) % g.limit
	}
	g.at[p.id] = ghost{pos: p, seq: g.seq}
}

func (g *ghosts) lookup(id uint64) (pos, bool) {
	gh, ok := g.at[id]
	return gh.pos, ok
}
