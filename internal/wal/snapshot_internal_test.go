package wal

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func emitIDs(from, to uint64) func(emit func(*Record) error) error {
	return func(emit func(*Record) error) error {
		for id := from; id <= to; id++ {
			if err := emit(&Record{Kind: KindEnqueue, ID: id, Time: 1}); err != nil {
				return err
			}
		}
		return nil
	}
}

func appendIDs(t *testing.T, l *Log, from, to uint64) {
	for id := from; id <= to; id++ {
		require.NoError(t, l.Append(&Record{Kind: KindEnqueue, ID: id, Time: 1}))
	}
}

func replayedIDs(t *testing.T, l *Log) ([]uint64, ReplayStats) {
	var ids []uint64
	st, err := l.Replay(func(r *Record) error { ids = append(ids, r.ID); return nil })
	require.NoError(t, err)
	return ids, st
}

func seqIDs(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// A crash between a snapshot's rename and the log truncation leaves two
// snapshots and a log covering both. If the newer one is then damaged,
// recovery falls back to the older one.
func TestSnapshotFallsBackWhenLogCovers(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	appendIDs(t, l, 1, 10)
	a, err := l.Checkpoint(emitIDs(1, 10))
	require.NoError(t, err)
	require.EqualValues(t, 10, a.Index)
	appendIDs(t, l, 11, 20)
	require.NoError(t, l.Close())

	b, err := writeSnapshot(dir, 0o600, 20, emitIDs(1, 20)) // no truncation: "crashed"
	require.NoError(t, err)
	l, err = Open(dir, Options{})
	require.NoError(t, err)
	ids, st := replayedIDs(t, l)
	assert.EqualValues(t, 20, st.SnapshotIndex, "the newest valid snapshot wins")
	assert.Equal(t, seqIDs(1, 20), ids)
	require.NoError(t, l.Close())

	data, err := os.ReadFile(b.Path)
	require.NoError(t, err)
	data[len(data)-3] ^= 0xff
	require.NoError(t, os.WriteFile(b.Path, data, 0o644))

	l, err = Open(dir, Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{b.Path}, l.Repair().SkippedSnapshots)
	ids, st = replayedIDs(t, l)
	assert.EqualValues(t, 10, st.SnapshotIndex)
	assert.EqualValues(t, 10, st.SnapshotRecords)
	assert.Equal(t, seqIDs(1, 20), ids)
	require.NoError(t, l.Close())
}

// With every snapshot damaged, a log that still starts at 1 is enough.
func TestDamagedSnapshotLogFromStart(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	appendIDs(t, l, 1, 5)
	require.NoError(t, l.Close())
	s, err := writeSnapshot(dir, 0o600, 3, emitIDs(1, 3))
	require.NoError(t, err)
	require.NoError(t, os.Truncate(s.Path, 20))
	l, err = Open(dir, Options{})
	require.NoError(t, err)
	ids, st := replayedIDs(t, l)
	assert.Zero(t, st.SnapshotIndex)
	assert.Equal(t, seqIDs(1, 5), ids)
	assert.Len(t, l.Repair().SkippedSnapshots, 1)
	require.NoError(t, l.Close())
}

func TestSnapshotNewerVersion(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	appendIDs(t, l, 1, 3)
	info, err := l.Checkpoint(emitIDs(1, 3))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	data, err := os.ReadFile(info.Path)
	require.NoError(t, err)
	binary.LittleEndian.PutUint16(data[6:], snapVersion+1)
	binary.LittleEndian.PutUint32(data[44:], crc32.Checksum(data[:44], castagnoli))
	require.NoError(t, os.WriteFile(info.Path, data, 0o644))
	_, err = Open(dir, Options{})
	require.ErrorIs(t, err, ErrVersion)
}

// A log that ends before its snapshot (a repair cut into what the snapshot
// covers) restarts after the snapshot instead of reusing its indexes.
func TestLogBehindSnapshotRestartsAfterIt(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	appendIDs(t, l, 1, 5)
	require.NoError(t, l.Close())
	_, err = writeSnapshot(dir, 0o600, 8, emitIDs(1, 8))
	require.NoError(t, err)
	l, err = Open(dir, Options{})
	require.NoError(t, err)
	assert.True(t, l.Repair().LogReset)
	assert.EqualValues(t, 9, l.Stats().FirstIndex)
	ids, _ := replayedIDs(t, l)
	assert.Equal(t, seqIDs(1, 8), ids)
	appendIDs(t, l, 9, 9)
	require.NoError(t, l.Close())
	l, err = Open(dir, Options{})
	require.NoError(t, err)
	ids, _ = replayedIDs(t, l)
	assert.Equal(t, seqIDs(1, 9), ids)
	require.NoError(t, l.Close())
}

// The process-wide set catches a second Open even when flock would not
// (it is per open file description, but emulations differ).
func TestLockTableReleasedOnClose(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{FlushInterval: time.Millisecond})
	require.NoError(t, err)
	openDirsMu.Lock()
	n := len(openDirs)
	openDirsMu.Unlock()
	assert.Positive(t, n)
	require.NoError(t, l.Close())
	openDirsMu.Lock()
	assert.Len(t, openDirs, n-1)
	openDirsMu.Unlock()
}

// TestReplaySnapshotInChunks: a snapshot of many chunks' worth of records
// is replayed in order, each record prepared on a decoding goroutine
// before fn sees it; a record count the header contradicts fails the
// replay after the records, as the serial reader does.
func TestReplaySnapshotInChunks(t *testing.T) {
	const n = 20_000
	payload := make([]byte, 100) // about 2.4 MB of records: several chunks
	emit := func(emit func(*Record) error) error {
		for id := uint64(1); id <= n; id++ {
			if err := emit(&Record{Kind: KindEnqueue, ID: id, Time: int64(id), Payload: payload}); err != nil {
				return err
			}
		}
		return nil
	}
	info, err := writeSnapshot(t.TempDir(), 0o600, 7, emit)
	require.NoError(t, err)

	var prepared atomic.Int64
	newPrepare := func() func(*Record) {
		return func(r *Record) {
			prepared.Add(1)
			r.Payload = append([]byte(nil), r.Payload...)
		}
	}
	var ids []uint64
	got, err := replaySnapshot(info.Path, newPrepare, func(r *Record) error {
		require.Len(t, r.Payload, len(payload))
		ids = append(ids, r.ID)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, uint64(n), got)
	assert.Equal(t, int64(n), prepared.Load())
	require.Len(t, ids, n)
	for i, id := range ids {
		if id != uint64(i+1) {
			t.Fatalf("record %d is %d", i+1, id)
		}
	}

	b, err := os.ReadFile(info.Path)
	require.NoError(t, err)
	binary.LittleEndian.PutUint64(b[16:], n+1) // the header's record count
	binary.LittleEndian.PutUint32(b[44:], crc32.Checksum(b[:44], castagnoli))
	require.NoError(t, os.WriteFile(info.Path, b, 0o644))
	ids = ids[:0]
	_, err = replaySnapshot(info.Path, nil, func(r *Record) error {
		ids = append(ids, r.ID)
		return nil
	})
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.Len(t, ids, n, "every record applied before the count is found wrong")
}

// craftSnapshot builds a snapshot file from a raw record stream (length
// and body per record, as AppendRecord writes them), with a header that
// claims records of them and checksums that match: damage in the stream
// is then what a reader meets.
func craftSnapshot(t *testing.T, stream []byte, records uint64) []byte {
	t.Helper()
	var body bytes.Buffer
	enc, err := zstd.NewWriter(&body, zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	_, err = enc.Write(stream)
	require.NoError(t, err)
	require.NoError(t, enc.Close())
	h := snapHeader{version: snapVersion, index: 1, records: records, bodyLen: uint64(body.Len()), bodyCRC: crc32.Checksum(body.Bytes(), castagnoli)}
	return append(h.encode(), body.Bytes()...)
}

// TestSnapshotReadersApplyEveryRecordBeforeDamage: a record whose length
// is damaged stops the reader after every record before it was applied,
// wherever it falls in a chunk, as reading record by record would.
func TestSnapshotReadersApplyEveryRecordBeforeDamage(t *testing.T) {
	const n = 5000
	for _, tt := range []struct {
		name   string
		bad    int // the damaged record, from 1
		damage []byte
	}{
		{"length past the limit, early", 10, binary.AppendUvarint(nil, maxRecordBody+1)},
		{"length past the limit, in a later chunk", 4000, binary.AppendUvarint(nil, maxRecordBody+1)},
		{"overflowing length varint", 10, bytes.Repeat([]byte{0xff}, 11)},
		{"length past the end", n, binary.AppendUvarint(nil, 1<<20)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stream []byte
			for id := uint64(1); id <= n; id++ {
				if int(id) == tt.bad {
					stream = append(stream, tt.damage...)
					break
				}
				stream = AppendRecord(stream, &Record{Kind: KindEnqueue, ID: id, Time: 1, Payload: make([]byte, 100)})
			}
			data := craftSnapshot(t, stream, n)
			path := filepath.Join(t.TempDir(), "snap")
			require.NoError(t, os.WriteFile(path, data, 0o644))
			var applied []uint64
			got, err := replaySnapshot(path, nil, func(r *Record) error {
				applied = append(applied, r.ID)
				return nil
			})
			assert.ErrorIs(t, err, ErrCorrupt)
			assert.Len(t, applied, tt.bad-1, "every record before the damage is applied")
			for i, id := range applied {
				require.Equal(t, uint64(i+1), id)
			}
			assert.Equal(t, uint64(tt.bad-1), got)
		})
	}
}
