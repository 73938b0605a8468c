package wal_test

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

const perBatch = 3

// buildLog writes `batches` batches of perBatch records (IDs 1, 2, ...),
// closes the log, and drops the close marker Close appends: what is left
// is the log a killed process leaves, which the tests then damage.
func buildLog(t testing.TB, dir string, batches int, o wal.Options) {
	t.Helper()
	l, err := wal.Open(dir, o)
	require.NoError(t, err)
	id := uint64(1)
	for b := 0; b < batches; b++ {
		var rs []wal.Record
		for i := 0; i < perBatch; i++ {
			rs = append(rs, rec(id))
			id++
		}
		require.NoError(t, l.AppendBatch(rs))
	}
	require.NoError(t, l.Close())
	dropCloseMarker(t, dir)
}

// closeMarkerLen is the framed size of a close marker: a one-byte length
// and an empty version 2 batch.
const closeMarkerLen = 1 + 34

// dropCloseMarker removes the empty batch a clean Close appended (and any
// empty segment created after it), as if the process had been killed
// instead of closed.
func dropCloseMarker(t testing.TB, dir string) {
	t.Helper()
	segs := segments(t, dir)
	for i := len(segs) - 1; i >= 0; i-- {
		b := entryBounds(t, segs[i])
		if len(b) == 0 {
			require.NoError(t, os.Remove(segs[i]))
			continue
		}
		last := b[len(b)-1]
		require.Equal(t, closeMarkerLen, last[1]-last[0], "the log ends with a close marker")
		require.NoError(t, os.Truncate(segs[i], int64(last[0])))
		return
	}
	t.Fatal("no close marker")
}

func segments(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "log", strings.Repeat("[0-9]", 20)))
	require.NoError(t, err)
	sort.Strings(m)
	return m
}

// entryBounds returns the [start, end) byte ranges of a segment's entries.
func entryBounds(t testing.TB, path string) [][2]int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out [][2]int
	for off := 0; off < len(data); {
		size, k := binary.Uvarint(data[off:])
		require.Positive(t, k)
		end := off + k + int(size)
		out = append(out, [2]int{off, end})
		off = end
	}
	return out
}

func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	}))
}

func modifyFile(t testing.TB, path string, fn func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, fn(data), 0o640))
}

// reopenIDs opens dir, replays it and returns the IDs and the repair report.
func reopenIDs(t testing.TB, dir string, o wal.Options) ([]uint64, wal.RepairReport) {
	t.Helper()
	l, err := wal.Open(dir, o)
	require.NoError(t, err)
	defer l.Close()
	ids := replayIDs(t, l)
	return ids, l.Repair()
}

func TestTornTailMatrix(t *testing.T) {
	const batches = 5
	base := t.TempDir()
	buildLog(t, base, batches, wal.Options{})
	segs := segments(t, base)
	require.Len(t, segs, 1)
	bounds := entryBounds(t, segs[0])
	require.Len(t, bounds, batches)
	start, end := bounds[batches-1][0], bounds[batches-1][1]
	allIDs, allButLast := seq(1, batches*perBatch), seq(1, (batches-1)*perBatch)
	headerEnd := start + 1 + 34 // one-byte length prefix for these small batches; a version 2 header

	type tc struct {
		name      string
		mutate    func([]byte) []byte
		wantIDs   []uint64
		wantBytes int64
		wantRecs  int
	}
	var cases []tc
	for cut := start; cut < end; cut++ {
		recs := 0
		if cut >= headerEnd {
			recs = perBatch // the header survived: it says what was lost
		}
		cases = append(cases, tc{name: "cut", mutate: func(b []byte) []byte { return b[:cut] },
			wantIDs: allButLast, wantBytes: int64(cut - start), wantRecs: recs})
	}
	for _, z := range []int{1, 2, 3, 17, 512, 4096, 8192} {
		cases = append(cases, tc{name: "zeros", mutate: func(b []byte) []byte { return append(b, make([]byte, z)...) },
			wantIDs: allIDs, wantBytes: int64(z)})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 40; i++ {
		n := 1 + rng.IntN(3000)
		garbage := make([]byte, n)
		for j := range garbage {
			garbage[j] = byte(rng.Uint32())
		}
		cases = append(cases, tc{name: "garbage", mutate: func(b []byte) []byte { return append(b, garbage...) },
			wantIDs: allIDs, wantBytes: int64(n), wantRecs: -1})
	}
	for pos := start; pos < end; pos++ {
		cases = append(cases, tc{name: "flip", mutate: func(b []byte) []byte { b[pos] ^= 0x40; return b },
			wantIDs: allButLast, wantBytes: int64(end - start), wantRecs: -1})
	}
	// A crash right after the log grew but before the data landed: the
	// final batch zeroed.
	cases = append(cases, tc{name: "zeroed final batch", mutate: func(b []byte) []byte {
		clear(b[start:])
		return b
	}, wantIDs: allButLast, wantBytes: int64(end - start)})

	for i, c := range cases {
		dir := t.TempDir()
		copyDir(t, base, dir)
		modifyFile(t, segments(t, dir)[0], c.mutate)
		ids, rep := reopenIDs(t, dir, wal.Options{})
		require.Equal(t, c.wantIDs, ids, "case %d (%s)", i, c.name)
		assert.Equal(t, c.wantBytes, rep.Bytes, "case %d (%s)", i, c.name)
		if c.wantBytes > 0 {
			assert.True(t, rep.Torn, "case %d (%s)", i, c.name)
			assert.NotEmpty(t, rep.Reason)
			assert.Equal(t, segs[0], filepath.Join(base, "log", filepath.Base(rep.Segment)))
		}
		if c.wantRecs >= 0 {
			assert.Equal(t, c.wantRecs, rep.Records, "case %d (%s)", i, c.name)
		}
		// The cut is durable and the log usable: append, reopen, all there.
		l := open(t, dir, wal.Options{})
		assert.Zero(t, l.Repair(), "case %d (%s): nothing left to cut", i, c.name)
		r := rec(1000)
		require.NoError(t, l.Append(&r))
		require.NoError(t, l.Close())
		ids, _ = reopenIDs(t, dir, wal.Options{})
		require.Equal(t, append(append([]uint64(nil), c.wantIDs...), 1000), ids, "case %d (%s)", i, c.name)
	}
}

func TestDamageBeforeTail(t *testing.T) {
	base := t.TempDir()
	// Small segments: several segments of a few batches each. Fsync mode:
	// each batch records the one before as fsynced, so damage followed by
	// a later batch is provably not a power-loss tail.
	buildLog(t, base, 41, wal.Options{SegmentSize: 1024, CompressAbove: -1, Mode: wal.Fsync})
	segs := segments(t, base)
	require.Greater(t, len(segs), 3)

	tests := []struct {
		name string
		seg  int // which segment to damage
		pick func(bounds [][2]int) int
	}{
		{"data byte in the first segment", 0, func(b [][2]int) int { return b[1][0] + 10 }},
		{"length byte in the second segment", 1, func(b [][2]int) int { return b[0][0] }},
		{"last byte of a middle segment", 2, func(b [][2]int) int { return b[len(b)-1][1] - 1 }},
		{"a non-final batch of the last segment", len(segs) - 1, func(b [][2]int) int { return b[0][0] + 5 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, base, dir)
			ds := segments(t, dir)
			bounds := entryBounds(t, ds[tt.seg])
			if tt.seg == len(ds)-1 {
				require.Greater(t, len(bounds), 1, "need a batch after the damaged one")
			}
			pos := tt.pick(bounds)
			modifyFile(t, ds[tt.seg], func(b []byte) []byte { b[pos] ^= 0x01; return b })

			_, err := wal.Open(dir, wal.Options{})
			require.ErrorIs(t, err, wal.ErrCorrupt)
			assert.Contains(t, err.Error(), ds[tt.seg], "the error names the segment")

			_, err = wal.Verify(dir, true)
			require.ErrorIs(t, err, wal.ErrCorrupt)
			assert.Contains(t, err.Error(), filepath.Base(ds[tt.seg]))
			require.ErrorIs(t, wal.Dump(dir, func(uint64, *wal.Record) error { return nil }), wal.ErrCorrupt)

			// RepairCorrupt cuts from the damaged batch on.
			l, err := wal.Open(dir, wal.Options{RepairCorrupt: true})
			require.NoError(t, err)
			rep := l.Repair()
			assert.False(t, rep.Torn)
			assert.Positive(t, rep.Bytes)
			assert.Equal(t, ds[tt.seg], rep.Segment)
			ids := replayIDs(t, l)
			require.NoError(t, l.Close())
			assert.Equal(t, seq(1, uint64(len(ids))), ids, "a prefix survives")
			assert.EqualValues(t, (rep.Index-1)*perBatch, len(ids))
			_, err = wal.Verify(dir, false)
			require.NoError(t, err)
		})
	}
}

func TestVerifyAndDump(t *testing.T) {
	dir := t.TempDir()
	buildLog(t, dir, 4, wal.Options{})
	seg := segments(t, dir)[0]
	modifyFile(t, seg, func(b []byte) []byte { return append(b, 0, 0, 0) })

	rep, err := wal.Verify(dir, false)
	require.NoError(t, err)
	assert.EqualValues(t, 4, rep.Batches)
	assert.EqualValues(t, 4*perBatch, rep.Records)
	assert.EqualValues(t, 1, rep.FirstIndex)
	assert.EqualValues(t, 4, rep.LastIndex)
	assert.True(t, rep.Torn.Torn)
	assert.EqualValues(t, 3, rep.Torn.Bytes)
	assert.False(t, rep.Repaired)
	fi, err := os.Stat(seg)
	require.NoError(t, err)
	size := fi.Size()

	var dumped []uint64
	require.NoError(t, wal.Dump(dir, func(index uint64, r *wal.Record) error {
		assert.EqualValues(t, (r.ID-1)/perBatch+1, index)
		dumped = append(dumped, r.ID)
		return nil
	}))
	assert.Equal(t, seq(1, 4*perBatch), dumped)
	fi, err = os.Stat(seg)
	require.NoError(t, err)
	assert.Equal(t, size, fi.Size(), "Verify without repair and Dump change nothing")

	rep, err = wal.Verify(dir, true)
	require.NoError(t, err)
	assert.True(t, rep.Repaired)
	fi, err = os.Stat(seg)
	require.NoError(t, err)
	assert.Equal(t, size-3, fi.Size())
	rep, err = wal.Verify(dir, false)
	require.NoError(t, err)
	assert.Zero(t, rep.Torn)
}
