package ring

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPeekSeesOldestFirstWithoutRemoving(t *testing.T) {
	type pair struct{ a, b uint32 }
	cases := []struct {
		name         string
		pushed       int
		popped       int
		limit        int
		stopAfter    int // f returns false after this many values (0: never)
		wantFirst    uint32
		wantSeen     int
		wantLenAfter int
	}{
		{"empty", 0, 0, 8, 0, 0, 0, 0},
		{"all of a short ring", 3, 0, 8, 0, 0, 3, 3},
		{"limit", 10, 0, 4, 0, 0, 4, 10},
		{"after pops", 10, 6, 8, 0, 6, 4, 4},
		{"f stops", 10, 0, 8, 2, 0, 2, 10},
		{"wrapped", 16 + 5, 16, 8, 0, 16, 5, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := New[pair](16)
			pushed := 0
			for i := 0; i < c.pushed; i++ {
				if r.Len() == r.Cap() {
					_, ok := r.TryPop()
					require.True(t, ok)
				}
				require.True(t, r.TryPush(pair{uint32(i), uint32(i) * 2}))
				pushed++
			}
			for r.Len() > c.pushed-c.popped {
				_, ok := r.TryPop()
				require.True(t, ok)
			}
			var seen []pair
			ok := r.Peek(c.limit, func(v pair) bool {
				seen = append(seen, v)
				return c.stopAfter == 0 || len(seen) < c.stopAfter
			})
			require.True(t, ok, "a ring of a pointer-free type can be peeked")
			require.Len(t, seen, c.wantSeen)
			for i, v := range seen {
				assert.Equal(t, pair{c.wantFirst + uint32(i), (c.wantFirst + uint32(i)) * 2}, v, "value %d", i)
			}
			assert.Equal(t, c.wantLenAfter, r.Len(), "Peek removes nothing")
		})
	}
}

func TestPeekRefusesRingsOfPointers(t *testing.T) {
	type withPointer struct {
		n int
		p *int
	}
	for name, c := range map[string]struct{ ok, want bool }{
		"int64":        {New[int64](4).Peek(1, func(int64) bool { return true }), true},
		"16 bytes":     {New[[2]uint64](4).Peek(1, func([2]uint64) bool { return true }), true},
		"four bytes":   {New[uint32](4).Peek(1, func(uint32) bool { return true }), true},
		"pointer":      {New[*int](4).Peek(1, func(*int) bool { return true }), false},
		"string":       {New[string](4).Peek(1, func(string) bool { return true }), false},
		"with pointer": {New[withPointer](4).Peek(1, func(v withPointer) bool { return v.p == nil && v.n == 0 }), false},
	} {
		assert.Equal(t, c.want, c.ok, name)
	}
}

// TestPeekAlongsideProducersAndConsumers runs Peek against pushes and pops
// on a small ring that wraps constantly: every value it sees must be one
// that was pushed, seen in push order within one call, and (under -race)
// no access may race.
func TestPeekAlongsideProducersAndConsumers(t *testing.T) {
	const n = 20_000
	r := New[uint64](8)
	var wg sync.WaitGroup
	var done atomic.Bool
	wg.Add(2)
	go func() { // one producer: values 1..n in order
		defer wg.Done()
		for v := uint64(1); v <= n; {
			if r.TryPush(v) {
				v++
			}
		}
	}()
	go func() {
		defer wg.Done()
		for got := 0; got < n; {
			if _, ok := r.TryPop(); ok {
				got++
			}
		}
		done.Store(true)
	}()
	peeks := 0
	for !done.Load() {
		last := uint64(0)
		r.Peek(8, func(v uint64) bool {
			require.True(t, v >= 1 && v <= n, "a value never pushed: %d", v)
			require.Greater(t, v, last, "out of order within one Peek")
			last = v
			return true
		})
		peeks++
	}
	wg.Wait()
	assert.Positive(t, peeks)
}

// TestPopBatchWaitsOutAPeek: a batch pop that meets the head pinned by a
// Peek waits for it rather than report an empty ring.
func TestPopBatchWaitsOutAPeek(t *testing.T) {
	r := New[uint64](4)
	require.True(t, r.TryPush(7))
	s := &r.slots[0]
	require.True(t, s.seq.CompareAndSwap(1, 1|pinned), "pin the head as Peek does")
	done := make(chan int)
	go func() {
		dst := make([]uint64, 4)
		done <- r.PopBatch(dst)
	}()
	select {
	case n := <-done:
		t.Fatalf("PopBatch returned %d while the head was pinned", n)
	case <-time.After(20 * time.Millisecond):
	}
	s.seq.Store(1)
	assert.Equal(t, 1, <-done, "the pinned value, once released")
}
