package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// FileRecords decodes a snapshot's and each segment's records from a
// stream, as replay decodes them from the directory: together, the same
// records Dump gives (the segments' batches the snapshot covers aside).
// Damage is ErrCorrupt naming the file, and fn's error stops it.
func TestFileRecordsDecodesWhatReplayDecodes(t *testing.T) {
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{SegmentSize: 4 << 10})
	require.NoError(t, err)
	_, err = l.Replay(func(*wal.Record) error { return nil })
	require.NoError(t, err)
	rec := func(i int) *wal.Record {
		return &wal.Record{Kind: wal.KindEnqueue, ID: uint64(i), Time: int64(i), Payload: bytes.Repeat([]byte{byte(i)}, 100)}
	}
	for i := 1; i <= 100; i++ {
		require.NoError(t, l.Append(rec(i)))
	}
	_, err = l.Checkpoint(func(emit func(*wal.Record) error) error {
		for i := 1; i <= 100; i++ {
			if err := emit(rec(i)); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	for i := 101; i <= 200; i++ {
		require.NoError(t, l.Append(rec(i)))
	}
	require.NoError(t, l.Close())

	var want []string
	require.NoError(t, wal.Dump(dir, func(_ uint64, r *wal.Record) error {
		want = append(want, fmt.Sprint(*r))
		return nil
	}))
	files := map[string][]byte{}
	var names []string // the snapshot, then the segments in order
	for _, pattern := range []string{"snap-*.zst", "log/*"} {
		ms, err := filepath.Glob(filepath.Join(dir, pattern))
		require.NoError(t, err)
		for _, m := range ms {
			rel, _ := filepath.Rel(dir, m)
			name := filepath.ToSlash(rel)
			if kind, _ := wal.BackupFileKind(name); kind == "" {
				continue
			}
			b, err := os.ReadFile(m)
			require.NoError(t, err)
			files[name] = b
			names = append(names, name)
		}
	}
	require.Greater(t, len(names), 2, "a snapshot and segments")
	var got []string
	seen := map[uint64]bool{}
	for _, name := range names {
		require.NoError(t, wal.FileRecords(name, bytes.NewReader(files[name]), func(r *wal.Record) error {
			// The segments still hold batches the snapshot covers.
			if kind, _ := wal.BackupFileKind(name); kind == "snapshot" || !seen[r.ID] {
				got = append(got, fmt.Sprint(*r))
			}
			seen[r.ID] = true
			return nil
		}), name)
	}
	assert.Equal(t, want, got)
	assert.NoError(t, wal.FileRecords("FORMAT", bytes.NewReader([]byte("garbage")), nil), "FORMAT holds no records")

	stop := errors.New("stop")
	for _, name := range names {
		b := files[name]
		assert.ErrorIs(t, wal.FileRecords(name, bytes.NewReader(b), func(*wal.Record) error { return stop }), stop, name)
		flipped := bytes.Clone(b)
		flipped[len(b)/2] ^= 0x40
		err := wal.FileRecords(name, bytes.NewReader(flipped), func(*wal.Record) error { return nil })
		if assert.ErrorIs(t, err, wal.ErrCorrupt, "%s with a flipped byte", name) {
			assert.Contains(t, err.Error(), name)
		}
		err = wal.FileRecords(name, bytes.NewReader(b[:len(b)-3]), func(*wal.Record) error { return nil })
		assert.ErrorIs(t, err, wal.ErrCorrupt, "%s cut short", name)
	}
}

// A segment's entry length that is cut short or overlong is damage
// (ErrCorrupt) naming the file and the offset where the entry starts,
// after the records of the entries before it; a reader's own failure is
// returned as that, not taken for damage.
func TestFileRecordsNamesADamagedEntryLengthAndItsOffset(t *testing.T) {
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	_, err = l.Replay(func(*wal.Record) error { return nil })
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		require.NoError(t, l.Append(&wal.Record{Kind: wal.KindEnqueue, ID: uint64(i), Time: int64(i)}))
	}
	require.NoError(t, l.Close())
	ms, err := filepath.Glob(filepath.Join(dir, "log", "*"))
	require.NoError(t, err)
	require.Len(t, ms, 1)
	seg, err := os.ReadFile(ms[0])
	require.NoError(t, err)
	name := "log/" + filepath.Base(ms[0])
	kind, _ := wal.BackupFileKind(name)
	require.Equal(t, "segment", kind)

	for _, tc := range []struct{ why, tail, want string }{
		{"cut short", "\x80", "truncated varint"},
		{"overlong", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", "overlong varint"},
	} {
		var ids []uint64
		err := wal.FileRecords(name, bytes.NewReader(append(bytes.Clone(seg), tc.tail...)), func(r *wal.Record) error {
			ids = append(ids, r.ID)
			return nil
		})
		if assert.ErrorIs(t, err, wal.ErrCorrupt, tc.why) {
			assert.Contains(t, err.Error(), fmt.Sprintf("%s offset %d: entry length: %s", name, len(seg), tc.want), tc.why)
		}
		assert.Equal(t, []uint64{1, 2, 3}, ids, "%s: the entries before it are read", tc.why)
	}

	broken := errors.New("disk gone")
	err = wal.FileRecords(name, io.MultiReader(bytes.NewReader(seg), failingReader{broken}), func(*wal.Record) error { return nil })
	assert.ErrorIs(t, err, broken)
	assert.NotErrorIs(t, err, wal.ErrCorrupt, "the reader's failure is not damage")
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }
