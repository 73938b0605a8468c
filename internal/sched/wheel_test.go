package sched

import (
	"container/heap"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// int64Heap is a min-heap of times (offsets from testStart) for the model.
type int64Heap []int64

func (h int64Heap) Len() int           { return len(h) }
func (h int64Heap) Less(i, j int) bool { return h[i] < h[j] }
func (h int64Heap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *int64Heap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *int64Heap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// dueModel tracks entries by due offset so that the test can ask "which
// entries are due at or before x" in order.
type dueModel struct {
	at    []int64 // by ID
	fired []bool
	order idHeap // IDs by at
}

type idHeap struct {
	ids []uint64
	at  *[]int64
}

func (h idHeap) Len() int           { return len(h.ids) }
func (h idHeap) Less(i, j int) bool { return (*h.at)[h.ids[i]] < (*h.at)[h.ids[j]] }
func (h idHeap) Swap(i, j int)      { h.ids[i], h.ids[j] = h.ids[j], h.ids[i] }
func (h *idHeap) Push(x any)        { h.ids = append(h.ids, x.(uint64)) }
func (h *idHeap) Pop() any {
	x := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return x
}

func (m *dueModel) add(at int64) uint64 {
	id := uint64(len(m.at))
	m.at = append(m.at, at)
	m.fired = append(m.fired, false)
	m.order.at = &m.at
	heap.Push(&m.order, id)
	return id
}

// TestWheelFiresEveryEntryOnce is the wheel's property test: every entry
// fires exactly once, never before its time, and no later than the first
// Advance at or after its time plus one tick. Advancing to every entry's
// due time and to due time + one tick (plus random points in between)
// proves the one-tick bound without stepping through billions of ticks.
func TestWheelFiresEveryEntryOnce(t *testing.T) {
	cases := []struct {
		name     string
		tick     time.Duration
		maxDelay time.Duration
		n        int     // entries added up front
		addRate  float64 // chance of adding an entry after each Advance (up to n more)
	}{
		{"1ms tick, up to 40 days", time.Millisecond, 40 * 24 * time.Hour, 100_000, 0},
		{"1ms tick, up to 40 days, adds while running", time.Millisecond, 40 * 24 * time.Hour, 20_000, 0.3},
		{"1s tick, up to 14 years (overflow list)", time.Second, 5000 * 24 * time.Hour, 20_000, 0.2},
		{"1us tick, up to 2 hours", time.Microsecond, 2 * time.Hour, 20_000, 0.2},
		{"1ms tick, dense: up to 1 second", time.Millisecond, time.Second, 20_000, 0.5},
		{"1ns tick, up to 1 minute", time.Nanosecond, time.Minute, 10_000, 0.2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.tick)))
			tick := int64(tc.tick)
			w := NewWheel(tc.tick, testStart)
			m := &dueModel{}
			checkpoints := &int64Heap{}
			randomDelay := func(limit int64) int64 {
				switch rng.IntN(8) {
				case 0:
					return 0
				case 1: // exactly on a tick boundary
					return rng.Int64N(limit/tick+1) * tick
				default:
					return rng.Int64N(limit + 1)
				}
			}
			schedule := func(now, at int64) {
				id := m.add(at)
				w.Add(testStart.Add(time.Duration(at)), Entry{ID: id, Gen: 1})
				heap.Push(checkpoints, max(at, now))
				heap.Push(checkpoints, max(at, now)+tick)
			}
			for range tc.n {
				schedule(0, randomDelay(int64(tc.maxDelay)))
			}
			for range tc.n / 10 {
				heap.Push(checkpoints, rng.Int64N(int64(tc.maxDelay)+tick))
			}

			var now int64
			var pastDue []uint64 // added in the past: due at the next Advance
			for checkpoints.Len() > 0 {
				x := heap.Pop(checkpoints).(int64)
				if x < now {
					continue
				}
				next, hasNext := w.NextAt()
				calls := 0
				n := w.Advance(testStart.Add(time.Duration(x)), func(at time.Time, e Entry) {
					calls++
					require.Less(t, e.ID, uint64(len(m.at)))
					require.False(t, m.fired[e.ID], "entry %d fired twice", e.ID)
					m.fired[e.ID] = true
					want := m.at[e.ID]
					require.Equal(t, testStart.Add(time.Duration(want)), at, "entry %d", e.ID)
					require.LessOrEqual(t, want, x, "entry %d fired early", e.ID)
				})
				require.Equal(t, calls, n)
				if hasNext && testStart.Add(time.Duration(x)).Before(next) {
					require.Zero(t, n, "fired before NextAt")
				}
				now = x
				for _, id := range pastDue {
					require.True(t, m.fired[id], "past entry %d not fired by the next Advance", id)
				}
				pastDue = pastDue[:0]
				for m.order.Len() > 0 && m.at[m.order.ids[0]] <= x {
					id := heap.Pop(&m.order).(uint64)
					require.True(t, m.fired[id], "entry %d due at %d not fired by %d", id, m.at[id], x)
				}
				if next, ok := w.NextAt(); ok {
					require.True(t, next.After(testStart.Add(time.Duration(x))), "NextAt %v not after now", next)
					if m.order.Len() > 0 {
						earliest := testStart.Add(time.Duration(m.at[m.order.ids[0]]))
						require.False(t, next.After(earliest), "NextAt %v after the earliest pending %v", next, earliest)
					}
				}
				if len(m.at) < 2*tc.n && rng.Float64() < tc.addRate {
					// Mostly future entries, some in the past.
					at := now + randomDelay(int64(tc.maxDelay)) - int64(tc.maxDelay)/20
					schedule(now, at)
					if at <= now {
						pastDue = append(pastDue, uint64(len(m.at)-1))
					}
				}
			}
			for id, f := range m.fired {
				require.True(t, f, "entry %d never fired", id)
			}
			assert.Zero(t, w.Len())
			_, ok := w.NextAt()
			assert.False(t, ok)
		})
	}
}

// TestWheelLevels checks that every tick gets enough levels for 30 days.
func TestWheelLevels(t *testing.T) {
	for _, tick := range []time.Duration{-1, 0, time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Hour, 40 * 24 * time.Hour} {
		w := NewWheel(tick, testStart)
		if tick <= 0 {
			assert.Equal(t, DefaultTick, w.Tick())
		}
		span := float64(w.Tick()) * float64(uint64(1)<<(wheelBits*w.levels))
		assert.GreaterOrEqual(t, span, float64(MinHorizon), "tick %v", tick)
	}
}

// TestWheelLazyCancel shows lazy cancellation through fire: the engine's
// generation check drops a stale entry when it surfaces, and a record
// rescheduled with a new generation fires only at its new time.
func TestWheelLazyCancel(t *testing.T) {
	cases := []struct {
		name      string
		cancel    bool          // bump the generation after scheduling
		resched   time.Duration // >0: schedule again at this delay with the new generation
		advanceTo time.Duration
		want      []uint32 // generations delivered, in order
	}{
		{"live entry fires", false, 0, 20 * time.Millisecond, []uint32{1}},
		{"cancelled entry is dropped", true, 0, 20 * time.Millisecond, nil},
		{"rescheduled later fires once at its new time", true, 30 * time.Millisecond, 40 * time.Millisecond, []uint32{2}},
		{"rescheduled later is not due yet", true, 30 * time.Millisecond, 20 * time.Millisecond, nil},
		{"rescheduled earlier fires once", true, 5 * time.Millisecond, 20 * time.Millisecond, []uint32{2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWheel(time.Millisecond, testStart)
			gen := map[uint64]uint32{7: 1}
			w.Add(testStart.Add(10*time.Millisecond), Entry{ID: 7, Gen: 1})
			if tc.cancel {
				gen[7]++
			}
			if tc.resched > 0 {
				w.Add(testStart.Add(tc.resched), Entry{ID: 7, Gen: gen[7]})
			}
			var delivered []uint32
			surfaced := w.Advance(testStart.Add(tc.advanceTo), func(_ time.Time, e Entry) {
				if e.Gen != gen[e.ID] {
					return // stale: dropped
				}
				delivered = append(delivered, e.Gen)
			})
			assert.Equal(t, tc.want, delivered)
			assert.GreaterOrEqual(t, surfaced, len(delivered))
		})
	}
}

// TestWheelPastAndReentrantAdds covers entries added in the past and adds
// made from inside fire.
func TestWheelPastAndReentrantAdds(t *testing.T) {
	ms := time.Millisecond
	t.Run("before start is due at the next Advance", func(t *testing.T) {
		w := NewWheel(ms, testStart)
		w.Add(testStart.Add(-time.Hour), Entry{ID: 1})
		at, ok := w.NextAt()
		require.True(t, ok)
		assert.Equal(t, testStart.Add(-time.Hour), at)
		assert.Equal(t, 1, w.Advance(testStart.Add(-2*time.Hour), nil))
	})
	t.Run("past is due at the next Advance even at the same now", func(t *testing.T) {
		w := NewWheel(ms, testStart)
		require.Zero(t, w.Advance(testStart.Add(10*ms), nil))
		w.Add(testStart.Add(5*ms), Entry{ID: 1})
		assert.Equal(t, 1, w.Advance(testStart.Add(10*ms), nil))
	})
	t.Run("fire adding a due entry defers it to the next Advance", func(t *testing.T) {
		w := NewWheel(ms, testStart)
		w.Add(testStart.Add(ms), Entry{ID: 1})
		var got []uint64
		fire := func(at time.Time, e Entry) {
			got = append(got, e.ID)
			if e.ID < 3 {
				w.Add(at, Entry{ID: e.ID + 1})
			}
		}
		assert.Equal(t, 1, w.Advance(testStart.Add(ms), fire))
		assert.Equal(t, 1, w.Advance(testStart.Add(ms), fire))
		assert.Equal(t, 1, w.Advance(testStart.Add(ms), fire))
		assert.Equal(t, []uint64{1, 2, 3}, got)
	})
	t.Run("fire adding a later entry within now fires it in the same Advance", func(t *testing.T) {
		w := NewWheel(ms, testStart)
		w.Add(testStart.Add(5*ms), Entry{ID: 1})
		var got []time.Time
		n := w.Advance(testStart.Add(time.Hour), func(at time.Time, e Entry) {
			got = append(got, at)
			if e.ID == 1 {
				w.Add(at.Add(10*time.Minute), Entry{ID: 2})
			}
		})
		assert.Equal(t, 2, n)
		assert.Equal(t, []time.Time{testStart.Add(5 * ms), testStart.Add(5*ms + 10*time.Minute)}, got)
	})
	t.Run("fire adding while the node pool grows loses nothing", func(t *testing.T) {
		// The first chunk is copied as it grows: entries added from fire
		// move the nodes of the list being fired.
		const n = 3 * firstChunk
		w := NewWheel(ms, testStart)
		for i := range uint64(n) {
			w.Add(testStart.Add(ms), Entry{ID: i})
		}
		var got []uint64
		fire := func(at time.Time, e Entry) {
			got = append(got, e.ID)
			if e.ID < n {
				w.Add(at.Add(ms), Entry{ID: n + 2*e.ID})
				w.Add(at.Add(ms), Entry{ID: n + 2*e.ID + 1})
			}
		}
		require.Equal(t, n, w.Advance(testStart.Add(ms), fire))
		require.Equal(t, 2*n, w.Advance(testStart.Add(2*ms), fire))
		want := make([]uint64, 3*n)
		for i := range want {
			want[i] = uint64(i)
		}
		assert.Equal(t, want, got)
		assert.Zero(t, w.Len())
	})
	t.Run("ticks in order, same tick in insertion order", func(t *testing.T) {
		w := NewWheel(ms, testStart)
		w.Add(testStart.Add(3*time.Hour), Entry{ID: 4})
		w.Add(testStart.Add(2*ms), Entry{ID: 2})
		w.Add(testStart.Add(2*ms), Entry{ID: 3})
		w.Add(testStart.Add(ms), Entry{ID: 1})
		var got []uint64
		w.Advance(testStart.Add(4*time.Hour), func(_ time.Time, e Entry) { got = append(got, e.ID) })
		assert.Equal(t, []uint64{1, 2, 3, 4}, got)
	})
	t.Run("sub-tick due times are exact", func(t *testing.T) {
		w := NewWheel(ms, testStart)
		w.Add(testStart.Add(ms+300), Entry{ID: 1})
		w.Add(testStart.Add(ms+100), Entry{ID: 2})
		assert.Zero(t, w.Advance(testStart.Add(ms), nil))
		at, ok := w.NextAt()
		require.True(t, ok)
		assert.Equal(t, testStart.Add(ms+100), at)
		var got []uint64
		collect := func(_ time.Time, e Entry) { got = append(got, e.ID) }
		assert.Equal(t, 1, w.Advance(testStart.Add(ms+200), collect))
		at, _ = w.NextAt()
		assert.Equal(t, testStart.Add(ms+300), at)
		assert.Zero(t, w.Advance(testStart.Add(ms+299), collect))
		assert.Equal(t, 1, w.Advance(testStart.Add(ms+300), collect))
		assert.Equal(t, []uint64{2, 1}, got)
	})
}

// TestWheelSteadyStateAllocs: once the node pool has grown, Add and Advance
// allocate nothing.
func TestWheelSteadyStateAllocs(t *testing.T) {
	w := NewWheel(time.Millisecond, testStart)
	now := testStart
	for i := range 10_000 {
		w.Add(now.Add(time.Duration(i)*time.Millisecond), Entry{ID: uint64(i)})
	}
	now = now.Add(time.Minute)
	w.Advance(now, nil)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		for range 8 {
			i++
			w.Add(now.Add(time.Duration(i%5000)*time.Millisecond), Entry{ID: uint64(i)})
		}
		now = now.Add(time.Millisecond)
		w.Advance(now, nil)
	})
	assert.Zero(t, allocs)
}
