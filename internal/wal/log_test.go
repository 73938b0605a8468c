package wal_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringwal/ringwal/internal/wal"
)

func open(t testing.TB, dir string, o wal.Options) *wal.Log {
	t.Helper()
	l, err := wal.Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// cloneRecord copies what DecodeRecord lets alias.
func cloneRecord(r *wal.Record) wal.Record {
	c := *r
	if r.Payload != nil {
		c.Payload = append([]byte(nil), r.Payload...)
	}
	if r.Headers != nil {
		c.Headers = append([]string(nil), r.Headers...)
	}
	return c
}

func replayAll(t testing.TB, l *wal.Log) ([]wal.Record, wal.ReplayStats) {
	t.Helper()
	var out []wal.Record
	st, err := l.Replay(func(r *wal.Record) error {
		out = append(out, cloneRecord(r))
		return nil
	})
	require.NoError(t, err)
	return out, st
}

func replayIDs(t testing.TB, l *wal.Log) []uint64 {
	t.Helper()
	var ids []uint64
	_, err := l.Replay(func(r *wal.Record) error {
		ids = append(ids, r.ID)
		return nil
	})
	require.NoError(t, err)
	return ids
}

func rec(id uint64) wal.Record {
	return wal.Record{Kind: wal.KindEnqueue, ID: id, Time: time.Now().UnixNano(), Key: "k",
		Payload: []byte(fmt.Sprintf("payload-%d", id))}
}

func seq(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func TestAppendReplayEveryMode(t *testing.T) {
	for _, mode := range []wal.Mode{wal.Write, wal.Fsync, wal.Buffered} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			l := open(t, dir, wal.Options{Mode: mode, CompressAbove: 256})
			var want []wal.Record
			for i := uint64(1); i <= 300; i++ {
				r := rec(i)
				r.Headers = []string{"a", "b"}
				want = append(want, r)
				require.NoError(t, l.Append(&r))
			}
			batch := []wal.Record{rec(301), rec(302), {Kind: wal.KindAck, ID: 1, Time: 5}}
			require.NoError(t, l.AppendBatch(batch))
			want = append(want, batch...)
			lease := wal.Record{Kind: wal.KindLease, ID: 2, Attempt: 1, Until: 99}
			require.NoError(t, l.AppendNoWait(&lease))
			want = append(want, lease)
			leases := []wal.Record{{Kind: wal.KindLease, ID: 3, Attempt: 1, Until: 100}, {Kind: wal.KindLease, ID: 4, Attempt: 2, Until: 101}}
			require.NoError(t, l.AppendBatchNoWait(leases))
			require.NoError(t, l.AppendBatchNoWait(nil))
			want = append(want, leases...)
			require.NoError(t, l.Close())
			require.NoError(t, l.Close(), "Close is idempotent")

			l = open(t, dir, wal.Options{Mode: mode})
			assert.Zero(t, l.Repair())
			got, st := replayAll(t, l)
			require.Equal(t, want, got)
			assert.EqualValues(t, len(want), st.Records)
			assert.Positive(t, st.Batches)
			assert.Positive(t, st.Bytes)
		})
	}
}

func TestConcurrentAppends(t *testing.T) {
	for _, mode := range []wal.Mode{wal.Write, wal.Fsync, wal.Buffered} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			l := open(t, dir, wal.Options{Mode: mode, SegmentSize: 64 << 10})
			const producers, each = 16, 200
			var wg sync.WaitGroup
			for p := 0; p < producers; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						r := rec(uint64(p*each + i + 1))
						if i%10 == 0 {
							assert.NoError(t, l.AppendNoWait(&r))
						} else {
							assert.NoError(t, l.Append(&r))
						}
					}
				}()
			}
			wg.Wait()
			require.NoError(t, l.Sync())
			st := l.Stats()
			assert.EqualValues(t, producers*each, st.Records)
			if mode != wal.Buffered { // Buffered may write it all as one batch
				assert.Greater(t, st.Segments, 1)
			}
			require.NoError(t, l.Close())

			l = open(t, dir, wal.Options{})
			ids := replayIDs(t, l)
			seen := map[uint64]bool{}
			for _, id := range ids {
				seen[id] = true
			}
			assert.Len(t, ids, producers*each)
			assert.Len(t, seen, producers*each)
		})
	}
}

func TestBufferedFlushesWithinInterval(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var batches []wal.BatchInfo
	l := open(t, dir, wal.Options{Mode: wal.Buffered, FlushInterval: 5 * time.Millisecond,
		OnBatch: func(b wal.BatchInfo) { mu.Lock(); batches = append(batches, b); mu.Unlock() }})
	start := time.Now()
	r := rec(1)
	require.NoError(t, l.Append(&r))
	require.Eventually(t, func() bool { return l.Stats().Records == 1 }, 2*time.Second, time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), 4*time.Millisecond, "waited for the interval")
	mu.Lock()
	require.Len(t, batches, 1)
	assert.Equal(t, 1, batches[0].Records)
	assert.Positive(t, batches[0].Bytes)
	mu.Unlock()
	// Flush does not wait for the interval.
	l2 := open(t, t.TempDir(), wal.Options{Mode: wal.Buffered, FlushInterval: time.Hour})
	require.NoError(t, l2.Append(&r))
	done := make(chan error)
	go func() { done <- l2.Flush() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Flush waited for the flush interval")
	}
	assert.EqualValues(t, 1, l2.Stats().Records)
}

func TestClosedLog(t *testing.T) {
	l := open(t, t.TempDir(), wal.Options{})
	require.NoError(t, l.Close())
	r := rec(1)
	for name, err := range map[string]error{
		"Append":            l.Append(&r),
		"AppendBatch":       l.AppendBatch([]wal.Record{r}),
		"AppendNoWait":      l.AppendNoWait(&r),
		"AppendBatchNoWait": l.AppendBatchNoWait([]wal.Record{r}),
		"Flush":             l.Flush(),
		"Sync":              l.Sync(),
	} {
		assert.ErrorIs(t, err, wal.ErrClosed, name)
	}
	_, err := l.Checkpoint(func(func(*wal.Record) error) error { return nil })
	assert.ErrorIs(t, err, wal.ErrClosed)
	_, err = l.Replay(func(*wal.Record) error { return nil })
	assert.ErrorIs(t, err, wal.ErrClosed)
}

func TestInvalidInput(t *testing.T) {
	l := open(t, t.TempDir(), wal.Options{})
	assert.Error(t, l.Append(&wal.Record{}))
	assert.Error(t, l.AppendNoWait(&wal.Record{Kind: 200}))
	assert.Error(t, l.AppendBatch([]wal.Record{{Kind: wal.KindAck}, {}}))
	assert.Error(t, l.AppendBatchNoWait([]wal.Record{{Kind: wal.KindAck}, {}}))
	_, err := wal.Open(t.TempDir(), wal.Options{Mode: 9})
	assert.Error(t, err)
}

func TestReplayBeforeAppendOnly(t *testing.T) {
	l := open(t, t.TempDir(), wal.Options{})
	r := rec(1)
	require.NoError(t, l.Append(&r))
	_, err := l.Replay(func(*wal.Record) error { return nil })
	assert.Error(t, err)
}

func TestReplayStopsOnCallbackError(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, wal.Options{})
	for i := uint64(1); i <= 10; i++ {
		r := rec(i)
		require.NoError(t, l.Append(&r))
	}
	require.NoError(t, l.Close())
	l = open(t, dir, wal.Options{})
	stop := errors.New("stop")
	n := 0
	_, err := l.Replay(func(*wal.Record) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 3, n)
}

func TestLockSameProcess(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, wal.Options{})
	_, err := wal.Open(dir, wal.Options{})
	require.ErrorIs(t, err, wal.ErrLocked)
	// Through another path to the same directory.
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	_, err = wal.Open(link, wal.Options{})
	require.ErrorIs(t, err, wal.ErrLocked)
	_, err = wal.Verify(dir, true)
	require.ErrorIs(t, err, wal.ErrLocked)
	require.NoError(t, l.Close())
	l2, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	require.NoError(t, l2.Close())
}

func TestNewerFormatVersion(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, wal.Options{})
	require.NoError(t, l.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "FORMAT"), []byte("ringwal-wal 7\n"), 0o644))
	_, err := wal.Open(dir, wal.Options{})
	require.ErrorIs(t, err, wal.ErrVersion)
	assert.Contains(t, err.Error(), "version 7")
	assert.Contains(t, err.Error(), "up to 2")
	_, err = wal.Verify(dir, false)
	require.ErrorIs(t, err, wal.ErrVersion)
	require.ErrorIs(t, wal.Dump(dir, func(uint64, *wal.Record) error { return nil }), wal.ErrVersion)
}

func TestStatsAndSize(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, wal.Options{})
	assert.Zero(t, l.Size())
	for i := uint64(1); i <= 100; i++ {
		r := rec(i)
		require.NoError(t, l.Append(&r))
	}
	st := l.Stats()
	assert.EqualValues(t, 100, st.Records)
	assert.EqualValues(t, 100, st.Batches, "sequential Write appends: one batch each")
	assert.EqualValues(t, 1, st.FirstIndex)
	assert.EqualValues(t, 100, st.LastIndex)
	assert.Equal(t, 1, st.Segments)
	assert.Positive(t, st.DiskBytes)
	assert.Equal(t, st.Bytes, l.Size())
	assert.NoError(t, st.Failed)
	size := l.Size()
	require.NoError(t, l.Close())
	l = open(t, dir, wal.Options{})
	assert.Equal(t, size+closeMarkerLen, l.Size(), "the log found at Open counts (with Close's marker)")
}

func TestNoGoroutineLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, mode := range []wal.Mode{wal.Write, wal.Fsync, wal.Buffered} {
		dir := t.TempDir()
		l, err := wal.Open(dir, wal.Options{Mode: mode})
		require.NoError(t, err)
		r := rec(1)
		require.NoError(t, l.Append(&r))
		_, err = l.Checkpoint(func(emit func(*wal.Record) error) error { return emit(&r) })
		require.NoError(t, err)
		require.NoError(t, l.Close())
		l, err = wal.Open(dir, wal.Options{Mode: mode})
		require.NoError(t, err)
		_, err = l.Replay(func(*wal.Record) error { return nil })
		require.NoError(t, err)
		require.NoError(t, l.Close())
	}
}
