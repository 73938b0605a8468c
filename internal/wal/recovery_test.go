package wal_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// Recovery modes, the durable index in batch headers, compressed torn
// batches, and reading logs written by batch format version 1.

// holeInBatch zeroes n bytes inside batch k (0-based) of the newest
// segment, from 5 bytes into it: a page that never reached the disk.
func holeInBatch(t *testing.T, dir string, k, n int) {
	t.Helper()
	segs := segments(t, dir)
	seg := segs[len(segs)-1]
	b := entryBounds(t, seg)
	require.Greater(t, len(b), k+1, "need a batch after the hole")
	modifyFile(t, seg, func(d []byte) []byte {
		clear(d[b[k][0]+5 : min(b[k][0]+5+n, b[k][1])])
		return d
	})
}

// A hole in a batch followed by whole batches written before it was ever
// fsynced (Write mode: the consumer loop's lease then ack) is what a power
// loss leaves: the default mode cuts it as an unsynced tail and keeps the
// batches before; AbsoluteConsistency refuses it.
func TestUnsyncedHoleIsCut(t *testing.T) {
	base := t.TempDir()
	buildLog(t, base, 6, wal.Options{}) // Write mode: no batch claims another fsynced
	holeInBatch(t, base, 3, 20)

	dir := t.TempDir()
	copyDir(t, base, dir)
	_, err := wal.Open(dir, wal.Options{Recovery: wal.AbsoluteConsistency})
	require.ErrorIs(t, err, wal.ErrCorrupt)
	assert.Contains(t, err.Error(), "unsynced tail")

	ids, rep := reopenIDs(t, dir, wal.Options{})
	require.Equal(t, seq(1, 3*perBatch), ids)
	assert.True(t, rep.Torn)
	assert.Equal(t, "unsynced tail", rep.Class)
	assert.Equal(t, 2, rep.ValidAfter)
	assert.False(t, rep.SyncedAfter)
	assert.EqualValues(t, 4, rep.Index)
	assert.Len(t, rep.BrokenFiles, 1)
	assert.Contains(t, rep.String(), "unsynced tail at ")
}

// The same hole in an Fsync-mode log is real damage: the batches after it
// claim it fsynced. The default refuses; SkipToPointInTime cuts from it
// on, losing those fsynced batches (kept as .broken).
func TestHoleBeforeFsyncedBatchesIsDamage(t *testing.T) {
	base := t.TempDir()
	buildLog(t, base, 6, wal.Options{Mode: wal.Fsync})
	holeInBatch(t, base, 3, 20)

	for _, mode := range []wal.RecoveryMode{wal.PointInTime, wal.AbsoluteConsistency} {
		dir := t.TempDir()
		copyDir(t, base, dir)
		_, err := wal.Open(dir, wal.Options{Recovery: mode})
		require.ErrorIs(t, err, wal.ErrCorrupt, "mode %v", mode)
		assert.Contains(t, err.Error(), "damage")
		assert.Contains(t, err.Error(), "SkipToPointInTime")
	}
	dir := t.TempDir()
	copyDir(t, base, dir)
	ids, rep := reopenIDs(t, dir, wal.Options{Recovery: wal.SkipToPointInTime})
	require.Equal(t, seq(1, 3*perBatch), ids)
	assert.False(t, rep.Torn)
	assert.True(t, rep.SyncedAfter)
	assert.Equal(t, wal.SkipToPointInTime, rep.Mode)
	assert.Equal(t, "damage", rep.Class)
}

// A torn final batch: cut by PointInTime and SkipToPointInTime, refused by
// AbsoluteConsistency.
func TestRecoveryModesOnTornTail(t *testing.T) {
	base := t.TempDir()
	buildLog(t, base, 4, wal.Options{})
	tearTail(t, base, 9)
	for _, tc := range []struct {
		mode wal.RecoveryMode
		ok   bool
	}{{wal.PointInTime, true}, {wal.AbsoluteConsistency, false}, {wal.SkipToPointInTime, true}} {
		dir := t.TempDir()
		copyDir(t, base, dir)
		l, err := wal.Open(dir, wal.Options{Recovery: tc.mode})
		if !tc.ok {
			require.ErrorIs(t, err, wal.ErrCorrupt, tc.mode.String())
			assert.Contains(t, err.Error(), "AbsoluteConsistency refuses any damage")
			assert.Empty(t, brokenFiles(t, dir), "a refused cut keeps nothing and changes nothing")
			continue
		}
		require.NoError(t, err, tc.mode.String())
		assert.Equal(t, "torn final batch", l.Repair().Class)
		assert.Equal(t, tc.mode, l.Repair().Mode)
		require.Equal(t, seq(1, 3*perBatch), replayIDs(t, l))
		require.NoError(t, l.Close())
	}
	_, err := wal.Open(t.TempDir(), wal.Options{Recovery: 9})
	require.Error(t, err)
	assert.Equal(t, "recovery(9)", wal.RecoveryMode(9).String())
}

// Damage in an older segment is refused by the default even with nothing
// after it but unsynced batches: tidwall/wal fsyncs a segment before it
// switches away, so a power loss cannot explain it.
func TestOlderSegmentDamageIsRefused(t *testing.T) {
	base := t.TempDir()
	buildLog(t, base, 41, wal.Options{SegmentSize: 1024, CompressAbove: -1}) // Write mode
	segs := segments(t, base)
	require.Greater(t, len(segs), 2)
	b := entryBounds(t, segs[1])
	modifyFile(t, segs[1], func(d []byte) []byte { d[b[1][0]+7] ^= 1; return d })
	_, err := wal.Open(base, wal.Options{})
	require.ErrorIs(t, err, wal.ErrCorrupt)
	assert.Contains(t, err.Error(), filepath.Base(segs[1]))
}

// incompressible returns n bytes no compressor can shrink.
func incompressible(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// A torn final batch that is s2-compressed, whose payload holds whole log
// entries (a version 1 batch, which claims nothing about fsync, and a
// version 2 one), stored as literals inside the compressed block: the
// stored length in its header agrees with the tidwall/wal length prefix,
// so it is a torn tail at any cut inside it, not damage followed by data
// (which is what the entry-shaped bytes alone would suggest).
func TestTornCompressedBatchWithEntryShapedPayload(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	v1seg := segments(t, filepath.Join("testdata", "v1log"))[0]
	v1data, err := os.ReadFile(v1seg)
	require.NoError(t, err)
	vb := entryBounds(t, v1seg)
	embedded := append([]byte(nil), v1data[vb[1][0]:vb[1][1]]...)
	src := t.TempDir()
	l, err := wal.Open(src, wal.Options{CompressAbove: -1})
	require.NoError(t, err)
	r := wal.Record{Kind: wal.KindEnqueue, ID: rng.Uint64(), Time: int64(rng.Uint64() >> 1), Payload: incompressible(rng, 200)}
	require.NoError(t, l.Append(&r))
	require.NoError(t, l.Close())
	srcData, err := os.ReadFile(segments(t, src)[0])
	require.NoError(t, err)
	embedded = append(embedded, srcData...)

	base := t.TempDir()
	var compressed []bool
	l, err = wal.Open(base, wal.Options{Mode: wal.Fsync, OnBatch: func(b wal.BatchInfo) {
		if b.Records > 0 {
			compressed = append(compressed, b.Compressed)
		}
	}})
	require.NoError(t, err)
	for i := uint64(1); i <= 3; i++ {
		r := rec(i)
		require.NoError(t, l.Append(&r))
	}
	r = rec(4)
	// A repeated pattern makes the body compress; the embedded entries
	// stay literals (nothing before them repeats their bytes).
	fill := bytes.Repeat([]byte("qwertyuiop"), 600)
	r.Payload = append(append(append([]byte(nil), fill...), embedded...), fill...)
	require.NoError(t, l.Append(&r))
	require.NoError(t, l.Close())
	require.Equal(t, []bool{false, false, false, true}, compressed, "the last batch is compressed")
	seg := segments(t, base)[0]
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	bounds := entryBounds(t, seg)
	last := bounds[3]
	found, unknown := wal.ValidBatchesAfter(data[:last[1]-1], last[0]+1)
	require.Positive(t, found, "the compressed batch holds entry-shaped bytes that check as batches")
	require.True(t, unknown, "one of them is a version 1 batch, which claims nothing")

	cuts := []int{last[0] + 1, last[0] + 40, last[1] - 1}
	for i := 0; i < 30; i++ {
		cuts = append(cuts, last[0]+1+rng.IntN(last[1]-last[0]-1))
	}
	shaped := 0
	for _, c := range cuts {
		if n, _ := wal.ValidBatchesAfter(data[:c], last[0]+1); n > 0 {
			shaped++
		}
		dir := t.TempDir()
		copyDir(t, base, dir)
		modifyFile(t, segments(t, dir)[0], func(d []byte) []byte { return d[:c] })
		ids, rep := reopenIDs(t, dir, wal.Options{})
		require.Equal(t, seq(1, 3), ids, "cut at %d", c)
		require.True(t, rep.Torn, "cut at %d", c)
		if c >= last[0]+2+34 {
			require.Equal(t, "torn final batch", rep.Class, "cut at %d", c)
		}
	}
	require.Positive(t, shaped, "some cuts leave the entry-shaped bytes in the tail")
}

// Each batch records the last batch known fsynced when it was written:
// in Fsync mode the previous sync point, in Write mode nothing until an
// explicit Sync (or a checkpoint); Close appends an empty marker batch
// that records its final fsync; and Open fsyncs the log it found, so the
// first batch after a reopen claims all of it.
func TestBatchesRecordDurableIndex(t *testing.T) {
	durables := func(dir string) []uint64 { return wal.DurableIndexes(t, dir) }
	dir := t.TempDir()
	l := open(t, dir, wal.Options{Mode: wal.Fsync})
	for i := uint64(1); i <= 3; i++ {
		r := rec(i)
		require.NoError(t, l.Append(&r))
	}
	require.NoError(t, l.Close())
	require.Equal(t, []uint64{0, 1, 2, 3}, durables(dir), "three batches, then the close marker")

	dir = t.TempDir()
	l = open(t, dir, wal.Options{Mode: wal.Write})
	for i := uint64(1); i <= 2; i++ {
		r := rec(i)
		require.NoError(t, l.Append(&r))
	}
	require.NoError(t, l.Sync())
	r := rec(3)
	require.NoError(t, l.Append(&r))
	require.NoError(t, l.Close()) // marker at 4, claiming 3
	l = open(t, dir, wal.Options{Mode: wal.Write})
	r = rec(4)
	require.NoError(t, l.Append(&r)) // batch 5 claims 4: Open fsynced the log
	require.NoError(t, l.Close())    // marker at 6
	require.Equal(t, []uint64{0, 0, 2, 3, 4, 5}, durables(dir))

	// An idle Open and Close adds nothing: the log already ends with a
	// marker.
	l = open(t, dir, wal.Options{})
	require.NoError(t, l.Close())
	require.Len(t, durables(dir), 6)
}

// A cleanly closed Write-mode log (no batch in it was fsynced when
// written): the close marker records the final fsync, so a damaged batch
// in it is damage, not a power-loss tail; tearing the marker itself loses
// nothing.
func TestCloseMarkerMakesDamageDetectable(t *testing.T) {
	base := t.TempDir()
	l := open(t, base, wal.Options{})
	for i := uint64(1); i <= 5; i++ {
		r := rec(i)
		require.NoError(t, l.Append(&r))
	}
	require.NoError(t, l.Close())
	seg := segments(t, base)[0]
	b := entryBounds(t, seg)
	require.Len(t, b, 6)

	dir := t.TempDir()
	copyDir(t, base, dir)
	modifyFile(t, segments(t, dir)[0], func(d []byte) []byte { d[b[1][0]+9] ^= 4; return d })
	_, err := wal.Open(dir, wal.Options{})
	require.ErrorIs(t, err, wal.ErrCorrupt)
	assert.Contains(t, err.Error(), "fsynced after it")

	dir = t.TempDir()
	copyDir(t, base, dir)
	modifyFile(t, segments(t, dir)[0], func(d []byte) []byte { return d[:len(d)-3] })
	ids, rep := reopenIDs(t, dir, wal.Options{})
	require.Equal(t, seq(1, 5), ids)
	assert.True(t, rep.Torn)
	assert.Zero(t, rep.Records)
}

// A log written by batch format version 1 (testdata/v1log, by the build
// before version 2) opens, replays exactly as it did then, verifies, and
// takes version 2 batches after its own.
func TestReadsFormatV1Log(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "v1log"), dir)
	want, err := os.ReadFile(filepath.Join("testdata", "v1log.replay"))
	require.NoError(t, err)
	replayLines := func(l *wal.Log) string {
		var sb strings.Builder
		_, err := l.Replay(func(r *wal.Record) error {
			fmt.Fprintf(&sb, "%s %d %d\n", r.Kind, r.ID, len(r.Payload))
			return nil
		})
		require.NoError(t, err)
		return sb.String()
	}
	rep, err := wal.Verify(dir, false)
	require.NoError(t, err)
	require.EqualValues(t, 3, rep.Segments)
	require.Zero(t, rep.Torn)

	l := open(t, dir, wal.Options{})
	require.Zero(t, l.Repair())
	require.Equal(t, string(want), replayLines(l))
	last := l.Stats().LastIndex
	r := wal.Record{Kind: wal.KindAck, ID: 7}
	require.NoError(t, l.Append(&r))
	require.NoError(t, l.Close())

	l = open(t, dir, wal.Options{})
	got := replayLines(l)
	require.NoError(t, l.Close())
	require.Equal(t, string(want)+"ack 7 0\n", got)
	d := wal.DurableIndexes(t, dir)
	assert.Zero(t, d[0], "version 1 batches claim nothing")
	assert.Equal(t, []uint64{last, last + 1}, d[len(d)-2:],
		"the first batch after Open claims the whole log Open found (it fsyncs it); then the close marker")
}

// Damage in a version 1 log followed by version 1 batches stays an error:
// they say nothing about fsync, so nothing proves the tail unsynced.
func TestV1DamageFollowedByV1BatchesIsRefused(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "v1log"), dir)
	segs := segments(t, dir)
	seg := segs[len(segs)-1]
	b := entryBounds(t, seg)
	require.Greater(t, len(b), 2)
	modifyFile(t, seg, func(d []byte) []byte { d[b[0][0]+3] ^= 0x20; return d })
	_, err := wal.Open(dir, wal.Options{})
	require.ErrorIs(t, err, wal.ErrCorrupt)
	assert.Contains(t, err.Error(), "fsynced after it")

	// A torn final version 1 batch is still a torn tail.
	dir = t.TempDir()
	copyDir(t, filepath.Join("testdata", "v1log"), dir)
	tearTail(t, dir, 3)
	_, rep := reopenIDs(t, dir, wal.Options{})
	assert.True(t, rep.Torn)
}
