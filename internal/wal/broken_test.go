package wal_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// brokenFiles lists the .broken copies in dir's log directory.
func brokenFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "log", "*.broken"))
	require.NoError(t, err)
	return m
}

// tearTail cuts the last batch of the newest segment short by `short`
// bytes and returns the bytes a repair must cut: from that batch's start
// to the new end of the file.
func tearTail(t *testing.T, dir string, short int) []byte {
	t.Helper()
	segs := segments(t, dir)
	seg := segs[len(segs)-1]
	b := entryBounds(t, seg)
	last := b[len(b)-1]
	var cut []byte
	modifyFile(t, seg, func(d []byte) []byte {
		d = d[:len(d)-short]
		cut = append([]byte(nil), d[last[0]:]...)
		return d
	})
	return cut
}

// A repaired torn tail is kept, byte for byte, as a .broken file in the
// log directory; the report and the log line name it; a second repair
// keeps its own copy without touching the first; and the copies confuse
// neither Open, Replay nor the segment listing, however often the log is
// reopened.
func TestRepairKeepsTornTail(t *testing.T) {
	dir := t.TempDir()
	buildLog(t, dir, 5, wal.Options{})
	want1 := tearTail(t, dir, 7)

	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	ids, rep := reopenIDs(t, dir, wal.Options{Logger: logger})
	require.Equal(t, seq(1, 4*perBatch), ids)
	require.True(t, rep.Torn)
	require.Len(t, rep.BrokenFiles, 1)
	first := rep.BrokenFiles[0]
	require.Equal(t, filepath.Join(dir, "log"), filepath.Dir(first), "kept next to the segments")
	require.True(t, strings.HasPrefix(filepath.Base(first), filepath.Base(rep.Segment)+"."), "named after the cut segment: %s", first)
	got, err := os.ReadFile(first)
	require.NoError(t, err)
	require.Equal(t, want1, got, "the .broken file holds exactly the cut bytes")
	require.EqualValues(t, len(want1), rep.Bytes)
	require.Contains(t, logged.String(), first, "the log line names the copy")

	// Append after the repair, tear again: a second copy, the first intact.
	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	r := rec(100)
	require.NoError(t, l.Append(&r))
	require.NoError(t, l.Close())
	dropCloseMarker(t, dir) // as if killed
	want2 := tearTail(t, dir, 1)
	ids, rep = reopenIDs(t, dir, wal.Options{})
	require.Equal(t, seq(1, 4*perBatch), ids)
	require.Len(t, rep.BrokenFiles, 1)
	require.NotEqual(t, first, rep.BrokenFiles[0], "a later repair must not overwrite an older copy")
	got, err = os.ReadFile(rep.BrokenFiles[0])
	require.NoError(t, err)
	require.Equal(t, want2, got)
	got, err = os.ReadFile(first)
	require.NoError(t, err)
	require.Equal(t, want1, got, "the first copy is unchanged")
	require.ElementsMatch(t, []string{first, rep.BrokenFiles[0]}, brokenFiles(t, dir))

	// The copies are not segments: Open, Replay, Stats and Verify ignore them.
	wantIDs := seq(1, 4*perBatch)
	for i := 0; i < 2; i++ {
		l, err := wal.Open(dir, wal.Options{})
		require.NoError(t, err)
		require.Zero(t, l.Repair().Bytes, "open %d found nothing to repair", i+1)
		require.Nil(t, l.Repair().BrokenFiles)
		require.Equal(t, wantIDs, replayIDs(t, l))
		require.Equal(t, len(segments(t, dir)), l.Stats().Segments)
		r := rec(200 + uint64(i))
		require.NoError(t, l.Append(&r))
		wantIDs = append(wantIDs, r.ID)
		require.NoError(t, l.Close())
	}
	vr, err := wal.Verify(dir, false)
	require.NoError(t, err)
	require.Zero(t, vr.Torn.Bytes)
	require.Len(t, brokenFiles(t, dir), 2)
}

// Cutting damage before the tail (Options.RepairCorrupt) keeps the rest of
// the damaged segment and every later segment; together the copies hold
// exactly the bytes cut, in log order.
func TestRepairKeepsRemovedSegments(t *testing.T) {
	dir := t.TempDir()
	o := wal.Options{SegmentSize: 256, CompressAbove: -1}
	buildLog(t, dir, 30, o)
	segs := segments(t, dir)
	require.Greater(t, len(segs), 3)
	var want []byte
	bad := segs[1]
	b := entryBounds(t, bad)
	for i, s := range segs[1:] {
		data, err := os.ReadFile(s)
		require.NoError(t, err)
		if i == 0 {
			data[b[1][0]+10] ^= 0xff // damage the second batch of segment 2
			require.NoError(t, os.WriteFile(s, data, 0o640))
			data = data[b[1][0]:]
		}
		want = append(want, data...)
	}
	_, err := wal.Open(dir, o)
	require.ErrorIs(t, err, wal.ErrCorrupt)

	o.RepairCorrupt = true
	l, err := wal.Open(dir, o)
	require.NoError(t, err)
	rep := l.Repair()
	require.NoError(t, l.Close())
	require.False(t, rep.Torn)
	require.Len(t, rep.BrokenFiles, len(segs)-1)
	var got []byte
	for i, p := range rep.BrokenFiles {
		require.True(t, strings.HasPrefix(filepath.Base(p), filepath.Base(segs[1+i])+"."), "copy %d named after its segment: %s", i, p)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		got = append(got, data...)
	}
	require.Equal(t, want, got, "the copies hold exactly the cut bytes")
	require.EqualValues(t, len(want), rep.Bytes)
	require.Equal(t, segs[:2], segments(t, dir))

	for i := 0; i < 2; i++ {
		ids, rep := reopenIDs(t, dir, wal.Options{SegmentSize: 256})
		require.Zero(t, rep.Bytes)
		require.Len(t, ids, (len(entryBounds(t, segs[0]))+1)*perBatch, "open %d", i+1)
	}
}

// Verify with repair keeps the cut bytes too, and says where.
func TestVerifyRepairKeepsTornTail(t *testing.T) {
	dir := t.TempDir()
	buildLog(t, dir, 3, wal.Options{})
	want := tearTail(t, dir, 2)
	rep, err := wal.Verify(dir, true)
	require.NoError(t, err)
	require.True(t, rep.Repaired)
	require.Len(t, rep.Torn.BrokenFiles, 1)
	got, err := os.ReadFile(rep.Torn.BrokenFiles[0])
	require.NoError(t, err)
	require.Equal(t, want, got)
	ids, _ := reopenIDs(t, dir, wal.Options{})
	require.Equal(t, seq(1, 2*perBatch), ids)
}
