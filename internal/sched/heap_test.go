package sched

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type modelItem struct {
	deadline int64
	seq      int
	e        Entry
}

// TestHeapAgainstSortedModel runs random pushes and pops against a sorted
// slice: order, ties in push order, Len and NextDeadline must match.
func TestHeapAgainstSortedModel(t *testing.T) {
	cases := []struct {
		name      string
		ops       int
		deadlines int64 // deadlines are drawn from [0, deadlines): small = many ties
		pushBias  float64
	}{
		{"many ties", 20_000, 16, 0.55},
		{"spread", 20_000, 1 << 40, 0.55},
		{"grow then drain", 20_000, 1000, 0.8},
		{"mostly pops", 20_000, 1000, 0.3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.deadlines)))
			var h DeadlineHeap
			var model []modelItem
			seq := 0
			check := func() {
				require.Equal(t, len(model), h.Len())
				d, ok := h.NextDeadline()
				require.Equal(t, len(model) > 0, ok)
				if ok {
					require.Equal(t, model[0].deadline, d)
				}
			}
			for range tc.ops {
				if rng.Float64() < tc.pushBias {
					seq++
					it := modelItem{deadline: rng.Int64N(tc.deadlines) - tc.deadlines/2, seq: seq, e: Entry{ID: uint64(seq)}}
					h.Push(it.deadline, it.e)
					i, _ := slices.BinarySearchFunc(model, it, func(a, b modelItem) int {
						if a.deadline != b.deadline {
							return cmpInt64(a.deadline, b.deadline)
						}
						return a.seq - b.seq
					})
					model = slices.Insert(model, i, it)
				} else if rng.IntN(4) == 0 {
					d, e, ok := h.Peek()
					require.Equal(t, len(model) > 0, ok)
					if ok {
						require.Equal(t, model[0].deadline, d)
						require.Equal(t, model[0].e, e)
					}
				} else {
					d, e, ok := h.Pop()
					require.Equal(t, len(model) > 0, ok)
					if ok {
						require.Equal(t, model[0].deadline, d)
						require.Equal(t, model[0].e, e)
						model = model[1:]
					}
				}
				check()
			}
			for len(model) > 0 {
				_, e, ok := h.Pop()
				require.True(t, ok)
				require.Equal(t, model[0].e, e)
				model = model[1:]
			}
			check()
		})
	}
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestHeapPopIfLazyDeletion: stale entries met at the top are dropped,
// valid ones are popped only when due.
func TestHeapPopIfLazyDeletion(t *testing.T) {
	live := map[uint64]bool{1: true, 2: false, 3: true, 4: false, 5: true}
	valid := func(e Entry) bool { return live[e.ID] }
	cases := []struct {
		name    string
		before  int64
		valid   func(Entry) bool
		wantID  uint64
		wantOK  bool
		wantLen int
	}{
		{"nothing due", 5, valid, 0, false, 5},
		{"earliest live is due", 10, valid, 1, true, 4},
		{"nil valid pops the top", 10, nil, 1, true, 4},
		{"stale tops are dropped whatever their deadline", 25, func(e Entry) bool { return live[e.ID] && e.ID != 1 }, 3, true, 2},
		{"all stale drains the heap", 1000, func(Entry) bool { return false }, 0, false, 0},
		{"stale entries past before are dropped once the lock is taken", 15, func(e Entry) bool { return live[e.ID] && e.ID != 1 }, 0, false, 3},
		{"earliest beyond before: untouched, without locking", 5, func(Entry) bool { return false }, 0, false, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var h DeadlineHeap
			for id, d := range map[uint64]int64{1: 10, 2: 20, 3: 25, 4: 30, 5: 40} {
				h.Push(d, Entry{ID: id})
			}
			e, ok := h.PopIf(tc.before, tc.valid)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.wantID, e.ID)
			assert.Equal(t, tc.wantLen, h.Len())
		})
	}
}

func TestHeapCompact(t *testing.T) {
	var h DeadlineHeap
	for i := range 1000 {
		h.Push(int64(1000-i), Entry{ID: uint64(i)})
	}
	removed := h.Compact(func(e Entry) bool { return e.ID%3 == 0 })
	assert.Equal(t, 1000-334, removed)
	assert.Equal(t, 334, h.Len())
	prev := int64(-1)
	for h.Len() > 0 {
		d, e, ok := h.Pop()
		require.True(t, ok)
		require.Zero(t, e.ID%3)
		require.Greater(t, d, prev)
		prev = d
	}
	assert.Zero(t, h.Compact(nil))
}

// TestHeapConcurrent: pushers and poppers at once; every entry comes out
// exactly once.
func TestHeapConcurrent(t *testing.T) {
	var h DeadlineHeap
	const workers, each = 4, 5000
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = make(map[uint64]int)
	)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range each {
				h.Push(rng.Int64N(1000), Entry{ID: uint64(w*each + i)})
				if i%2 == 0 {
					if e, ok := h.PopIf(1000, nil); ok {
						mu.Lock()
						seen[e.ID]++
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	for {
		_, e, ok := h.Pop()
		if !ok {
			break
		}
		seen[e.ID]++
	}
	require.Len(t, seen, workers*each)
	for id, n := range seen {
		require.Equal(t, 1, n, "entry %d", id)
	}
}

func TestHeapNoAllocs(t *testing.T) {
	var h DeadlineHeap
	for i := range 1024 {
		h.Push(int64(i), Entry{ID: uint64(i)})
	}
	for h.Len() > 0 {
		h.Pop()
	}
	i := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		h.Push(i, Entry{ID: uint64(i)})
		h.PopIf(i, nil)
		h.PopIf(i, nil) // empty: the lock-free path
	})
	assert.Zero(t, allocs)
}

func TestDueListsTheEarliestDueEntriesInOrderWithoutRemovingThem(t *testing.T) {
	var h DeadlineHeap
	for i, d := range []int64{50, 10, 40, 20, 30, 20, 90, 5} {
		h.Push(d, Entry{ID: uint64(i)})
	}
	stale := func(e Entry) bool { return e.ID != 4 } // deadline 30
	got := h.Due(45, 100, stale, nil)
	var ids []uint64
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	// 5 (7), 10 (1), 20 (3, then 5: push order), 30 (4: stale), 40 (2).
	if want := []uint64{7, 1, 3, 5, 2}; !slices.Equal(ids, want) {
		t.Fatalf("Due = %v, want %v", ids, want)
	}
	if n := len(h.Due(45, 2, nil, nil)); n != 2 {
		t.Fatalf("visit 2 listed %d", n)
	}
	if h.Len() != 8 {
		t.Fatalf("Due removed entries: %d left", h.Len())
	}
	if got := h.Due(1, 10, nil, nil); len(got) != 0 {
		t.Fatalf("nothing due before 1, got %v", got)
	}
}
