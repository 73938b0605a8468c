package wal_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// state is a toy engine: the set of live IDs, rebuilt from records.
type state struct {
	mu   sync.Mutex
	live map[uint64]bool
}

func newState() *state { return &state{live: map[uint64]bool{}} }

func (s *state) apply(r *wal.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Kind {
	case wal.KindEnqueue:
		s.live[r.ID] = true
	case wal.KindAck:
		delete(s.live, r.ID)
	}
	return nil
}

func (s *state) emit(emit func(*wal.Record) error) error {
	s.mu.Lock()
	ids := make([]uint64, 0, len(s.live))
	for id := range s.live {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		r := rec(id)
		if err := emit(&r); err != nil {
			return err
		}
	}
	return emit(&wal.Record{Kind: wal.KindCheckpoint, ID: 1 + ids[len(ids)-1]})
}

func (s *state) ids() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []uint64
	for id := range s.live {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func TestCheckpointReplay(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, wal.Options{SegmentSize: 4096})
	st := newState()
	add := func(r wal.Record) {
		require.NoError(t, st.apply(&r))
		require.NoError(t, l.Append(&r))
	}
	for i := uint64(1); i <= 200; i++ {
		add(rec(i))
		if i > 20 {
			add(wal.Record{Kind: wal.KindAck, ID: i - 20})
		}
	}
	before := l.Stats()
	require.Greater(t, before.Segments, 2)
	info, err := l.Checkpoint(st.emit)
	require.NoError(t, err)
	assert.Equal(t, before.LastIndex, info.Index)
	assert.EqualValues(t, 21, info.Records, "20 live + the marker")
	assert.FileExists(t, info.Path)
	after := l.Stats()
	assert.Equal(t, info.Index+1, after.FirstIndex)
	assert.Equal(t, info.Index, after.CheckpointIndex)
	assert.Zero(t, l.Size())
	assert.Less(t, after.DiskBytes, before.DiskBytes)
	assert.Equal(t, 1, after.Segments)

	for i := uint64(201); i <= 210; i++ {
		add(rec(i))
	}
	add(wal.Record{Kind: wal.KindAck, ID: 190})
	require.NoError(t, l.Close())

	l = open(t, dir, wal.Options{})
	got := newState()
	var kinds []wal.Kind
	rs, err := l.Replay(func(r *wal.Record) error {
		kinds = append(kinds, r.Kind)
		return got.apply(r)
	})
	require.NoError(t, err)
	assert.Equal(t, st.ids(), got.ids())
	assert.EqualValues(t, 21, rs.SnapshotRecords)
	assert.Equal(t, info.Index, rs.SnapshotIndex)
	assert.EqualValues(t, 11, rs.Records)
	assert.Equal(t, wal.KindCheckpoint, kinds[20])

	// A second checkpoint replaces the first.
	_, err = l.Checkpoint(got.emit)
	require.NoError(t, err)
	snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*"))
	assert.Len(t, snaps, 1)
}

func TestCheckpointWithConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, wal.Options{SegmentSize: 8192})
	st := newState()
	var next uint64
	var nextMu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				nextMu.Lock()
				next++
				r := rec(next)
				// The engine's rule: state first, then the log.
				_ = st.apply(&r)
				nextMu.Unlock()
				if err := l.Append(&r); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 5; i++ {
		time.Sleep(5 * time.Millisecond)
		_, err := l.Checkpoint(st.emit)
		require.NoError(t, err)
	}
	close(stop)
	wg.Wait()
	require.NoError(t, l.Close())
	l = open(t, dir, wal.Options{})
	got := newState()
	_, err := l.Replay(got.apply)
	require.NoError(t, err)
	assert.Equal(t, st.ids(), got.ids())
}

func TestCheckpointFailureChangesNothing(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, wal.Options{})
	for i := uint64(1); i <= 10; i++ {
		r := rec(i)
		require.NoError(t, l.Append(&r))
	}
	boom := errors.New("boom")
	_, err := l.Checkpoint(func(emit func(*wal.Record) error) error {
		r := rec(1)
		require.NoError(t, emit(&r))
		return boom
	})
	require.ErrorIs(t, err, boom)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		assert.NotContains(t, e.Name(), "snap-")
	}
	assert.EqualValues(t, 1, l.Stats().FirstIndex)
	require.NoError(t, l.Close())
	l = open(t, dir, wal.Options{})
	assert.Equal(t, seq(1, 10), replayIDs(t, l))
}

func TestDamagedSnapshotWithoutCoverageIsAnError(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, wal.Options{})
	st := newState()
	for i := uint64(1); i <= 10; i++ {
		r := rec(i)
		_ = st.apply(&r)
		require.NoError(t, l.Append(&r))
	}
	info, err := l.Checkpoint(st.emit)
	require.NoError(t, err)
	r := rec(11)
	require.NoError(t, l.Append(&r))
	require.NoError(t, l.Close())

	modifyFile(t, info.Path, func(b []byte) []byte { b[len(b)/2] ^= 1; return b })
	_, err = wal.Open(dir, wal.Options{})
	require.ErrorIs(t, err, wal.ErrCorrupt)
	assert.Contains(t, err.Error(), filepath.Base(info.Path))
	_, err = wal.Verify(dir, false)
	require.ErrorIs(t, err, wal.ErrCorrupt)
}

func TestMillionRecordsCheckpointedDiskBounded(t *testing.T) {
	const window = 1000 // live messages at any time
	// Checkpoint past threshold bytes of log.
	total, threshold, segSize := 1_000_000, 2<<20, 512<<10
	if testing.Short() {
		total, threshold, segSize = 100_000, 256<<10, 64<<10
	}
	dir := t.TempDir()
	l := open(t, dir, wal.Options{SegmentSize: segSize})
	st := newState()
	// Random payloads, so that s2 cannot shrink the log to nothing.
	noise := make([]byte, 1<<16)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	var maxDisk int64
	checkpoints := 0
	batch := make([]wal.Record, 0, 1000)
	id := uint64(0)
	for written := 0; written < total; {
		batch = batch[:0]
		for len(batch) < cap(batch) && written < total {
			id++
			off := int(id*37) % (len(noise) - 32)
			batch = append(batch, wal.Record{Kind: wal.KindEnqueue, ID: id, Time: int64(id), Payload: noise[off : off+32]})
			written++
			if id > window {
				batch = append(batch, wal.Record{Kind: wal.KindAck, ID: id - window})
				written++
			}
		}
		for i := range batch {
			_ = st.apply(&batch[i])
		}
		require.NoError(t, l.AppendBatch(batch))
		if l.Size() > int64(threshold) {
			maxDisk = max(maxDisk, l.Stats().DiskBytes) // the peak: just before
			_, err := l.Checkpoint(st.emit)
			require.NoError(t, err)
			checkpoints++
			maxDisk = max(maxDisk, l.Stats().DiskBytes)
		}
	}
	maxDisk = max(maxDisk, l.Stats().DiskBytes)
	// Log since the checkpoint (< threshold + one batch), the segment the
	// truncation kept, and a ~window-record snapshot.
	bound := int64(threshold + 2*segSize + 256<<10)
	assert.Less(t, maxDisk, bound, "disk use stays bounded")
	assert.Greater(t, checkpoints, 3)
	t.Logf("%d records, %d checkpoints, max disk use %d bytes (bound %d)", total, checkpoints, maxDisk, bound)
	require.NoError(t, l.Close())

	l = open(t, dir, wal.Options{})
	got := newState()
	_, err := l.Replay(got.apply)
	require.NoError(t, err)
	assert.Equal(t, st.ids(), got.ids())
	assert.Len(t, got.ids(), window)
}
