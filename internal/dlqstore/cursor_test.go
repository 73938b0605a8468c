package dlqstore

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ringwal/ringwal/classify"
)

// TestSmallCursorMemory checks cursor resolution against a model of
// "the last CursorMemory removals" while IDs are removed, re-added at a
// new DeadAt and removed again, so that stale FIFO slots of an ID
// coexist with its newer ghost or its live entry.
func TestSmallCursorMemory(t *testing.T) {
	for _, memory := range []int{1, 2, 3, 5} {
		r := rand.New(rand.NewPCG(uint64(memory), 3))
		s := New[string](Options{CursorMemory: memory})
		live := map[uint64]pos{}
		type removal struct {
			id uint64
			p  pos
		}
		var removals []removal // oldest first; the model keeps the last memory
		for step := range 5000 {
			id := uint64(r.IntN(8) + 1)
			switch r.IntN(3) {
			case 0:
				e := entry(id, classify.Category(r.IntN(8)), []string{"", "a"}[r.IntN(2)], r.IntN(20))
				err := s.Add(e)
				if _, ok := live[id]; ok != errors.Is(err, ErrDuplicate) || (!ok && err != nil) {
					t.Fatalf("step %d: add %d: %v", step, id, err)
				}
				if err == nil {
					live[id] = pos{at: e.DeadAt, id: id}
				}
			case 1:
				var got []Entry[string]
				var ok bool
				if r.IntN(2) == 0 {
					var e Entry[string]
					e, ok = s.Remove(id)
					if ok {
						got = []Entry[string]{e}
					}
				} else {
					es, err := s.Purge(Query{Categories: classify.Categories(), Key: ""})
					_ = es
					if err != nil {
						t.Fatal(err)
					}
					got, ok = es, len(es) > 0
				}
				for _, e := range got {
					removals = append(removals, removal{e.ID, live[e.ID]})
					delete(live, e.ID)
				}
				_ = ok
			default:
				// Resolve every ID as a cursor.
				for c := uint64(1); c <= 8; c++ {
					want, known := live[c]
					if !known {
						from := max(0, len(removals)-memory)
						for _, rm := range slices.Backward(removals[from:]) {
							if rm.id == c {
								want, known = rm.p, true
								break
							}
						}
					}
					got, ok := s.position(c)
					if ok != known || (ok && got.cmp(want) != 0) {
						t.Fatalf("memory %d step %d: cursor %d: got %v %v, want %v %v", memory, step, c, got, ok, want, known)
					}
				}
			}
		}
	}
}
