package ringwal

// Open sizes replay's memory from the hint the last Close left
// (reserve.go). The hint is advice: these tests check what Close says,
// that replay reserves enough for it, and that a wrong hint loses
// nothing.

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

func TestCloseHintRoundTrips(t *testing.T) {
	for _, h := range []closeHint{{}, {messages: 1, arenaBytes: 128, arenaMax: 128}, {messages: 1 << 40, arenaBytes: 1 << 62, arenaMax: arenaMaxPayload}} {
		got, ok := decodeCloseHint(h.encode())
		require.True(t, ok, "%+v", h)
		assert.Equal(t, h, got)
	}
	tooLarge := closeHint{messages: 1, arenaBytes: arenaMaxPayload + 1, arenaMax: arenaMaxPayload + 1}.encode()
	for _, b := range [][]byte{nil, {}, {closeHintVersion}, {closeHintVersion + 1, 1, 1, 1}, {closeHintVersion, 1, 1}, {closeHintVersion, 1, 1, 1, 1}, {closeHintVersion, 0x80, 1, 1}, tooLarge} {
		_, ok := decodeCloseHint(b)
		assert.False(t, ok, "%x", b)
	}
}

func FuzzDecodeCloseHint(f *testing.F) {
	f.Add(closeHint{messages: 1000, arenaBytes: 128000, arenaMax: 128}.encode())
	f.Add([]byte{closeHintVersion, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok := decodeCloseHint(b)
		if !ok {
			return
		}
		again, ok := decodeCloseHint(h.encode())
		require.True(t, ok)
		assert.Equal(t, h, again)
	})
}

// TestCloseHintCountsTheLiveMessages: Close tells the next Open every
// live message, whatever its state, and the payload bytes an arena will
// hold (not those of a payload too large for one).
func TestCloseHintCountsTheLiveMessages(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	_, err = e.TryEnqueue(Message{Payload: make([]byte, 100)})
	require.NoError(t, err)
	_, err = e.TryEnqueue(Message{Payload: make([]byte, arenaMaxPayload+1)})
	require.NoError(t, err)
	_, err = e.TryEnqueue(Message{Payload: make([]byte, 10), Delay: 1 << 40})
	require.NoError(t, err)
	gone, err := e.TryEnqueue(Message{Payload: make([]byte, 1000)})
	require.NoError(t, err)
	d, ok := e.TryDequeue()
	require.True(t, ok, "a leased message counts too")
	require.NotEqual(t, gone, d.ID)
	require.NoError(t, e.Cancel(gone))
	require.NoError(t, e.Close())

	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	h, ok := decodeCloseHint(l.Hint())
	require.NoError(t, l.Close())
	require.True(t, ok)
	assert.Equal(t, closeHint{messages: 3, arenaBytes: 110, arenaMax: 100}, h)
}

func TestReserveCoversTheHint(t *testing.T) {
	for _, h := range []closeHint{
		{messages: 1, arenaBytes: 1, arenaMax: 1},
		{messages: 3 * slabChunkSlots, arenaBytes: 3 * arenaChunk, arenaMax: arenaChunk/9 + 8},
		{messages: 10_000, arenaBytes: 10_000 * (arenaChunk/9 + 8), arenaMax: arenaChunk/9 + 8},
	} {
		t.Run(fmt.Sprint(h.messages), func(t *testing.T) {
			rs := newReplayState(4)
			rs.reserve(h)
			defer rs.endReserve()
			<-rs.slab.spare.done // all allocated: a take that finds none is one too few
			<-rs.arenas.done
			assert.GreaterOrEqual(t, len(rs.slab.spare.items)*slabChunkSlots, int(h.messages)+slabChunkSlots,
				"a chunk more than the messages fill: their IDs need not start at a chunk's first slot")
			// Payloads that waste the most of each chunk (a little over
			// an ninth of it, so that eight fit and a ninth does not) still
			// take no chunk but a spare.
			var a payloadArena
			a.spare = rs.arenas
			payload := make([]byte, h.arenaMax)
			chunks := 0
			for left := int(h.arenaBytes); left > 0; left -= len(payload) {
				n := min(left, len(payload))
				if len(a.chunk) < n {
					chunks++
				}
				a.clone(payload[:n])
			}
			assert.LessOrEqual(t, chunks, len(rs.arenas.items), "arena chunks beyond the spares")
			assert.Equal(t, int64(chunks), rs.arenas.next.Load(), "every chunk a spare")
			a.spare = nil
			for range rs.arenas.items[rs.arenas.next.Load():] {
				require.NotNil(t, rs.arenas.take())
			}
			assert.Nil(t, rs.arenas.take(), "none past the last")
		})
	}
}

// TestWrongHintLosesNothing: a hint that says far fewer or far more
// messages than the log holds changes what replay allocates first, not
// what it rebuilds.
func TestWrongHintLosesNothing(t *testing.T) {
	for _, hint := range []closeHint{{}, {messages: 1, arenaBytes: 1, arenaMax: 1}, {messages: 1 << 20, arenaBytes: 1 << 20, arenaMax: 1}} {
		t.Run(fmt.Sprint(hint.messages), func(t *testing.T) {
			dir := t.TempDir()
			e, err := Open(dir, Options{MaxMessages: 20_000, TierCapacity: 1 << 15})
			require.NoError(t, err)
			var want []ID
			for i := range 12_000 {
				id, err := e.TryEnqueue(Message{Payload: []byte(fmt.Sprint(i))})
				require.NoError(t, err)
				want = append(want, id)
			}
			require.NoError(t, e.Close())
			l, err := wal.Open(dir, wal.Options{})
			require.NoError(t, err)
			require.NoError(t, l.CloseWithHint(hint.encode()))

			e, err = Open(dir, Options{MaxMessages: 20_000, TierCapacity: 1 << 15})
			require.NoError(t, err)
			defer e.Close()
			var got []ID
			for i := range want {
				d, ok := e.TryDequeue()
				require.True(t, ok, "message %d of %d", i+1, len(want))
				require.Equal(t, fmt.Sprint(i), string(d.Message.Payload))
				got = append(got, d.ID)
			}
			assert.Equal(t, want, got)
		})
	}
}

// TestSparesAreTakenOnce: goroutines taking while the spares are being
// allocated each get a different one or nil, never more than there are.
func TestSparesAreTakenOnce(t *testing.T) {
	const n, takers = 1000, 4
	s := newSpares[[64]byte](n)
	seen := make(chan *[64]byte, n+takers)
	var wg sync.WaitGroup
	for range takers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if p := s.take(); p != nil {
					seen <- p
				}
			}
		}()
	}
	wg.Wait()
	s.stopFilling()
	close(seen)
	got := map[*[64]byte]bool{}
	for p := range seen {
		require.False(t, got[p], "a spare taken twice")
		got[p] = true
	}
	assert.LessOrEqual(t, len(got), n)
	for s.take() != nil {
	}
	assert.Equal(t, s.ready.Load(), s.next.Load(), "once drained, every allocated spare was taken")
	var none *spares[int]
	assert.Nil(t, none.take())
	none.stopFilling()
}
