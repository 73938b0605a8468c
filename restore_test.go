package ringwal

// Replay rebuilds messages in the slab they run from (replay.go) and
// restore orders them by slot, undoing the wrap of IDs past the slab's
// size (restore.go). These tests reopen stores whose slots do not come in
// ID order, or that hold more than the options' MaxMessages.

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/wal"
)

func TestSlotOrder(t *testing.T) {
	key := func(slot uint32) orderKey { return orderKey{at: int64(slot / 10), id: uint64(slot)} }
	for _, in := range [][]uint32{
		nil, {7}, {1, 2, 3, 4}, {10, 11, 25}, // in order
		{5, 6, 7, 1, 2}, {9, 1}, {2, 3, 4, 1}, {30, 31, 10, 12}, // rotated
		{3, 1, 2, 0}, {2, 1}, {1, 3, 2, 4}, {4, 1, 2, 3, 0}, {20, 5, 30, 10}, // neither
	} {
		want := slices.Clone(in)
		slices.SortFunc(want, func(a, b uint32) int { return key(a).compare(key(b)) })
		var o slotOrder
		for _, slot := range in {
			o.add(slot, key(slot))
		}
		assert.Equal(t, want, o.sorted(key), "slotOrder of %v", in)
		// Restore scans two halves at once and joins them: any split
		// must come out the same.
		for split := range len(in) + 1 {
			var a, b slotOrder
			for _, slot := range in[:split] {
				a.add(slot, key(slot))
			}
			for _, slot := range in[split:] {
				b.add(slot, key(slot))
			}
			a.join(&b)
			assert.Equal(t, want, a.sorted(key), "slotOrder of %v joined at %d", in, split)
		}
	}
}

// closeAndReopen closes e, after a checkpoint if asked (so that the
// reopen replays a snapshot rather than the log), and opens dir again
// with o; the test's cleanup closes the new engine.
func closeAndReopen(t *testing.T, e *Engine, dir string, o Options, checkpoint bool) *Engine {
	t.Helper()
	if checkpoint {
		require.NoError(t, e.Checkpoint())
	}
	require.NoError(t, e.Close())
	e, err := Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

// drainIDs dequeues and acks every ready message, returning their IDs in
// delivery order.
func drainIDs(t *testing.T, e *Engine) []ID {
	t.Helper()
	var ids []ID
	for {
		d, ok := e.TryDequeue()
		if !ok {
			return ids
		}
		ids = append(ids, d.ID)
		require.NoError(t, e.Ack(d.Lease))
	}
}

// TestRestoreOrderWhenIDsWrapTheSlab: with IDs past the slab's size, the
// live window wraps around its slots; a reopen still delivers in the
// order the messages became ready, with or without a checkpoint. A fake
// clock moves on between enqueues, so that the order is that of the ready
// times and not of IDs breaking ties. (With the real clock, a sampled
// message is ready since a precise reading and the rest since the coarse
// clock's, which can order a snapshot's messages out of ID order.)
func TestRestoreOrderWhenIDsWrapTheSlab(t *testing.T) {
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", checkpoint), func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewFake(time.Unix(1_800_000_000, 0))
			o := Options{MaxMessages: 16, TierCapacity: 16, Clock: clk} // a slab of 32 slots
			e, err := Open(dir, o)
			require.NoError(t, err)
			var live []ID
			for i := range 70 {
				clk.Advance(time.Millisecond)
				id, err := e.TryEnqueue(Message{Payload: []byte(fmt.Sprint(i))})
				require.NoError(t, err)
				live = append(live, id)
				if len(live) > 10 {
					d, ok := e.TryDequeue()
					require.True(t, ok)
					require.Equal(t, live[0], d.ID)
					require.NoError(t, e.Ack(d.Lease))
					live = live[1:]
				}
			}
			first, last := live[0]&31, live[len(live)-1]&31
			require.Greater(t, first, last, "the live IDs wrap around the slab's slots")
			e = closeAndReopen(t, e, dir, o, checkpoint)
			assert.Equal(t, live, drainIDs(t, e), "delivered in enqueue order")
		})
	}
}

// TestReplayGrowsTheSlabPastMaxMessages: a store reopened with a smaller
// MaxMessages than it holds keeps every message (replay grows the slab it
// rebuilds them in), with its state, priority and payload.
func TestReplayGrowsTheSlabPastMaxMessages(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{MaxMessages: 4096})
	require.NoError(t, err)
	const n = 3000
	want := map[ID]Message{}
	var order []ID
	for i := range n {
		m := Message{Payload: []byte(fmt.Sprint("m", i)), Key: fmt.Sprint("k", i%7)}
		id, err := e.TryEnqueue(m)
		require.NoError(t, err)
		want[id] = m
		order = append(order, id)
	}
	// Some leased at the "crash" (Close gives leases back as requeued).
	for range 5 {
		d, ok := e.TryDequeue()
		require.True(t, ok)
		_ = d
	}
	require.NoError(t, e.Close())

	e, err = Open(dir, Options{MaxMessages: 64, TierCapacity: 64})
	require.NoError(t, err)
	defer e.Close()
	assert.Greater(t, e.slab.size(), n, "the slab grew to hold the log's messages")
	assert.EqualValues(t, n, e.Stats().Pending)
	for _, id := range order[:50] {
		info, err := e.Get(id)
		require.NoError(t, err)
		assert.Equal(t, want[id].Payload, info.Message.Payload)
		assert.Equal(t, want[id].Key, info.Message.Key)
	}
	got := drainIDs(t, e)
	assert.Len(t, got, n, "every message delivered once")
	// The five given back at Close became ready then, after the others.
	assert.Equal(t, order[5:], got[:n-5])
	assert.ElementsMatch(t, order[:5], got[n-5:])
}

// TestInOrderSlotsIsTheRestoreOrder: when replay vouches that slot order
// is the order restore places messages in (inOrderSlots), that order is
// what reading every record gives (orderRestored); when it cannot vouch,
// it says so.
func TestInOrderSlotsIsTheRestoreOrder(t *testing.T) {
	const t0 = int64(1_800_000_000_000_000_000)
	enq := func(id uint64, at int64) wal.Record {
		return wal.Record{Kind: wal.KindEnqueue, ID: id, Time: at, Payload: []byte("p")}
	}
	ack := func(id uint64) wal.Record { return ackRecord(id, t0) }
	lease := func(id uint64) wal.Record { return leaseRecord(id, t0, 1, t0+1) }
	seq := func(from, to uint64) []wal.Record { // enqueues, a microsecond apart
		var rs []wal.Record
		for id := from; id <= to; id++ {
			rs = append(rs, enq(id, t0+int64(id)*1000))
		}
		return rs
	}
	cat := func(parts ...[]wal.Record) []wal.Record { return slices.Concat(parts...) }
	cases := []struct {
		name    string
		recs    []wal.Record
		inOrder bool
	}{
		{"enqueued in order", seq(1, 20), true},
		{"some acked", cat(seq(1, 20), []wal.Record{ack(1), ack(7), ack(20)}), true},
		{"wrapping the slab", cat(seq(20, 45), []wal.Record{ack(20)}), true},
		{"leased and acked (a restart's first delivery)", cat(seq(1, 20), []wal.Record{lease(1), ack(1)}), true},
		{"same ready time", cat(seq(1, 3), []wal.Record{enq(4, t0+3000), enq(5, t0+3000)}), true},
		{"leased at a crash", cat(seq(1, 20), []wal.Record{lease(3)}), false},
		{"requeued", cat(seq(1, 20), []wal.Record{requeueRecord(3, t0+1e9, 1, 0)}), false},
		{"ready out of ID order", []wal.Record{enq(1, t0+2000), enq(2, t0+1000)}, false},
		{"delayed", cat(seq(1, 3), []wal.Record{{Kind: wal.KindEnqueue, ID: 4, Time: t0 + 4000, NotBefore: t0 + 1e9}}), false},
		{"IDs past one slab", cat(seq(1, 3), []wal.Record{ack(1), ack(2)}, seq(40, 41)), false},
		{"IDs out of order", []wal.Record{enq(2, t0+1000), enq(1, t0+2000)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := openEngine(t, "", Options{Clock: clock.NewFake(time.Unix(0, t0))})
			rs := newReplayState(5) // 32 slots
			prepare := rs.newPreparer()
			for _, r := range c.recs {
				prepare(&r)
				e.apply(rs, &r)
			}
			require.NoError(t, rs.err)
			fast := rs.inOrderSlots()
			want := e.orderRestored(rs, t0+1e12)
			if !c.inOrder {
				assert.Nil(t, fast, "replay cannot vouch for slot order")
				return
			}
			require.NotNil(t, fast, "replay vouches for slot order")
			assert.Equal(t, want, fast)
			assert.Len(t, fast, rs.count)
		})
	}
}

// TestRestorePublishesPartsInOrder: restore publishes a large backlog's
// plain messages in parts, one goroutine each, and places the others (a
// TTL to schedule) one by one where a part stops; delivery after a reopen
// is still in enqueue order, with the others in their places.
func TestRestorePublishesPartsInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	n := 3*plainPartMin + 100
	others := map[int]bool{0: true, 5: true, plainPartMin + 7: true, 2*plainPartMin - 1: true, n - 1: true}
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", checkpoint), func(t *testing.T) {
			dir := t.TempDir()
			// A fake clock: every message ready at the same instant, so
			// that IDs order them (see TestRestoreOrderWhenIDsWrapTheSlab).
			clk := clock.NewFake(time.Unix(1_800_000_000, 0))
			o := Options{MaxMessages: 2 * n, TierCapacity: 2 * n, Strict: true, AgingAfter: -1, Clock: clk}
			e, err := Open(dir, o)
			require.NoError(t, err)
			want := make([]ID, 0, n)
			batch := make([]Message, 0, 1000)
			flush := func() {
				ids, err := e.EnqueueBatch(t.Context(), batch)
				require.NoError(t, err)
				want = append(want, ids...)
				batch = batch[:0]
			}
			for i := range n {
				m := Message{Payload: []byte{byte(i)}, Priority: Priority(i % 3)}
				if others[i] {
					m.TTL = time.Hour
				}
				if batch = append(batch, m); len(batch) == cap(batch) {
					flush()
				}
			}
			flush()
			e = closeAndReopen(t, e, dir, o, checkpoint)
			// Delivery takes the highest priority first: within each,
			// enqueue order.
			var byTier [3][]ID
			for i, id := range want {
				byTier[2-i%3] = append(byTier[2-i%3], id)
			}
			wantOrder, got := slices.Concat(byTier[0], byTier[1], byTier[2]), drainIDs(t, e)
			require.Len(t, got, len(wantOrder))
			for i := range got {
				if got[i] != wantOrder[i] {
					t.Fatalf("delivery %d is message %d, want %d", i, got[i], wantOrder[i])
				}
			}
		})
	}
}

// TestSortByKey: nearly sorted slots (messages ahead of their place, as
// sampled and retried ones are), and anything else, come out in key
// order.
func TestSortByKey(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	spiky := func(n, every, reach int) []orderKey {
		ks := make([]orderKey, n)
		for i := range ks {
			ks[i] = orderKey{at: int64(i), id: uint64(i)}
			if i%every == every-1 {
				ks[i].at += int64(1 + rnd.IntN(reach))
			}
		}
		return ks
	}
	shuffled := func(n int) []orderKey {
		ks := spiky(n, n+1, 1)
		rnd.Shuffle(n, func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
		return ks
	}
	descending := func(n int) []orderKey {
		ks := make([]orderKey, n)
		for i := range ks {
			ks[i] = orderKey{at: int64(n - i), id: uint64(i)}
		}
		return ks
	}
	for _, tt := range []struct {
		name string
		keys []orderKey
	}{
		{"spikes every 64, up to 1000 ahead", spiky(100_000, 64, 1000)},
		{"spikes every 2", spiky(1000, 2, 10)},
		{"ties broken by ID", []orderKey{{at: 5, id: 3}, {at: 5, id: 1}, {at: 4, id: 9}, {at: 5, id: 2}}},
		{"shuffled", shuffled(10_000)},
		{"descending", descending(1000)},
		{"one", spiky(1, 1, 1)},
		{"none", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			slots := make([]uint32, len(tt.keys))
			for i := range slots {
				slots[i] = uint32(i)
			}
			key := func(slot uint32) orderKey { return tt.keys[slot] }
			want := slices.Clone(slots)
			slices.SortFunc(want, func(a, b uint32) int { return key(a).compare(key(b)) })
			got := sortByKey(slots, key)
			require.Len(t, got, len(want))
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("position %d holds slot %d, want %d", i, got[i], want[i])
				}
			}
		})
	}
}

// TestSlabBitsFor: a slab has room for n with a quarter to spare, a power
// of two, at most maxSlabBits.
func TestSlabBitsFor(t *testing.T) {
	for _, tt := range []struct {
		n    int
		bits uint
	}{{0, 0}, {1, 0}, {2, 1}, {4, 3}, {4096, 13}, {3277, 12}, {1 << 25, maxSlabBits}, {1 << 30, maxSlabBits}} {
		assert.Equal(t, tt.bits, slabBitsFor(tt.n), "n=%d", tt.n)
	}
}
