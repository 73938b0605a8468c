package ring

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCapacityRounding(t *testing.T) {
	cases := []struct{ in, want int }{
		{-5, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 4}, {5, 8}, {1000, 1024}, {1 << 20, 1 << 20}, {1<<20 + 1, 1 << 21},
	}
	for _, c := range cases {
		r := New[int](c.in)
		assert.Equal(t, c.want, r.Cap(), "New(%d)", c.in)
		// The ring holds exactly Cap values.
		for i := 0; i < r.Cap(); i++ {
			require.True(t, r.TryPush(i), "push %d of %d", i, r.Cap())
		}
		assert.False(t, r.TryPush(-1), "push into a full ring of %d", r.Cap())
		assert.Equal(t, r.Cap(), r.Len())
		for i := 0; i < r.Cap(); i++ {
			v, ok := r.TryPop()
			require.True(t, ok)
			require.Equal(t, i, v)
		}
		_, ok := r.TryPop()
		assert.False(t, ok, "pop from an empty ring of %d", r.Cap())
		assert.Equal(t, 0, r.Len())
	}
}

func TestFullEmptyEdgesWrapAround(t *testing.T) {
	for _, capacity := range []int{1, 2, 4, 8} {
		r := New[int](capacity)
		next, want := 0, 0
		// Many laps so that positions wrap the slot array repeatedly and
		// the full/empty edges are hit at every slot index.
		for lap := 0; lap < 50; lap++ {
			for r.TryPush(next) {
				next++
			}
			assert.Equal(t, capacity, r.Len())
			pops := lap%capacity + 1
			for i := 0; i < pops; i++ {
				v, ok := r.TryPop()
				require.True(t, ok)
				require.Equal(t, want, v)
				want++
			}
		}
		for {
			v, ok := r.TryPop()
			if !ok {
				break
			}
			require.Equal(t, want, v)
			want++
		}
		assert.Equal(t, next, want)
		assert.Equal(t, 0, r.Len())
	}
}

func TestPopClearsSlot(t *testing.T) {
	r := New[*int](4)
	x := 1
	require.True(t, r.TryPush(&x))
	_, ok := r.TryPop()
	require.True(t, ok)
	for i := range r.slots {
		assert.Nil(t, r.slots[i].val, "slot %d keeps a reference", i)
	}
	require.Equal(t, 1, r.PushBatch([]*int{&x}))
	require.Equal(t, 1, r.PopBatch(make([]*int, 4)))
	for i := range r.slots {
		assert.Nil(t, r.slots[i].val, "slot %d keeps a reference after PopBatch", i)
	}
}

func TestBatchEdges(t *testing.T) {
	r := New[int](8)
	assert.Equal(t, 0, r.PushBatch(nil))
	assert.Equal(t, 0, r.PopBatch(nil))
	assert.Equal(t, 0, r.PopBatch(make([]int, 3)), "pop from empty")
	assert.Equal(t, 5, r.PushBatch([]int{0, 1, 2, 3, 4}))
	assert.Equal(t, 3, r.PushBatch([]int{5, 6, 7, 8, 9}), "only what fits")
	assert.Equal(t, 0, r.PushBatch([]int{10}), "full")
	dst := make([]int, 6)
	require.Equal(t, 6, r.PopBatch(dst))
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, dst)
	require.Equal(t, 2, r.PopBatch(dst))
	assert.Equal(t, []int{6, 7}, dst[:2])
	// A batch larger than the ring fills it exactly.
	big := make([]int, 20)
	assert.Equal(t, 8, r.PushBatch(big))
}

// encode packs a producer number and its sequence into one value.
func encode(producer, seq int) uint64 { return uint64(producer)<<40 | uint64(seq) }
func decode(v uint64) (producer, seq int) {
	return int(v >> 40), int(v & (1<<40 - 1))
}

// runMPMC pushes total values from producers goroutines and pops them with
// consumers goroutines, then checks that every value arrived exactly once
// and that each consumer saw each producer's values in increasing order
// (which, with every value seen once, is the per-producer FIFO guarantee).
func runMPMC(t *testing.T, producers, consumers, total, capacity int, batch bool) {
	t.Helper()
	r := New[uint64](capacity)
	perProducer := total / producers
	total = perProducer * producers
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			if batch {
				buf := make([]uint64, 0, 7)
				for s := 0; s < perProducer; {
					buf = buf[:0]
					for i := 0; i < cap(buf) && s+i < perProducer; i++ {
						buf = append(buf, encode(p, s+i))
					}
					n := r.PushBatch(buf)
					s += n
					if n == 0 {
						runtime.Gosched()
					}
				}
				return
			}
			for s := 0; s < perProducer; s++ {
				for !r.TryPush(encode(p, s)) {
					runtime.Gosched()
				}
			}
		}(p)
	}
	seen := make([][]int32, consumers) // per consumer: last seq per producer
	got := make([][]uint64, consumers)
	var remaining sync.WaitGroup
	var popped atomicCounter
	for c := 0; c < consumers; c++ {
		seen[c] = make([]int32, producers)
		for i := range seen[c] {
			seen[c][i] = -1
		}
		remaining.Add(1)
		go func(c int) {
			defer remaining.Done()
			buf := make([]uint64, 5)
			record := func(v uint64) bool {
				p, s := decode(v)
				if p >= producers || int32(s) <= seen[c][p] {
					t.Errorf("consumer %d: producer %d seq %d after %d", c, p, s, seen[c][p])
					return false
				}
				seen[c][p] = int32(s)
				got[c] = append(got[c], v)
				return true
			}
			for popped.load() < int64(total) {
				if batch {
					n := r.PopBatch(buf)
					for _, v := range buf[:n] {
						if !record(v) {
							return
						}
					}
					popped.add(int64(n))
					if n == 0 {
						runtime.Gosched()
					}
					continue
				}
				v, ok := r.TryPop()
				if !ok {
					runtime.Gosched()
					continue
				}
				if !record(v) {
					return
				}
				popped.add(1)
			}
		}(c)
	}
	wg.Wait()
	remaining.Wait()
	count := make([]int, producers)
	all := 0
	for c := range got {
		for _, v := range got[c] {
			p, _ := decode(v)
			count[p]++
			all++
		}
	}
	require.Equal(t, total, all, "values delivered")
	for p, n := range count {
		assert.Equal(t, perProducer, n, "values of producer %d", p)
	}
	assert.Equal(t, 0, r.Len())
}

func TestMPMCExactlyOnceInOrder(t *testing.T) {
	total := 1_000_000
	if testing.Short() {
		total = 100_000
	}
	for _, p := range []int{1, 2, 4, 8} {
		for _, c := range []int{1, 2, 4, 8} {
			t.Run(name(p, c), func(t *testing.T) {
				runMPMC(t, p, c, total, 1024, false)
			})
		}
	}
}

func TestMPMCBatchUnderContention(t *testing.T) {
	total := 200_000
	if testing.Short() {
		total = 20_000
	}
	for _, pc := range [][2]int{{1, 1}, {2, 2}, {4, 4}, {8, 8}, {8, 1}, {1, 8}} {
		t.Run(name(pc[0], pc[1]), func(t *testing.T) {
			runMPMC(t, pc[0], pc[1], total, 16, true)
		})
	}
}

func name(p, c int) string {
	return fmt.Sprintf("%dP%dC", p, c)
}
