package wal_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// A crash cuts the final batch short after a payload that happens to hold
// a whole log entry (a message carrying a copy of log bytes). The cut
// batch's length prefix and checksummed header agree, so the embedded
// entry is its own data, not a later batch: the tail is torn, and Open
// repairs it instead of failing.
func TestTornTailWithEmbeddedEntry(t *testing.T) {
	dir := t.TempDir()
	buildLog(t, dir, 3, wal.Options{})
	seg := segments(t, dir)[0]
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	b := entryBounds(t, seg)
	embedded := append([]byte(nil), data[b[0][0]:b[0][1]]...)

	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	r := rec(100)
	r.Payload = append(append([]byte("prefix"), embedded...), make([]byte, 200)...)
	require.NoError(t, l.Append(&r))
	require.NoError(t, l.Close())
	dropCloseMarker(t, dir)

	b = entryBounds(t, seg)
	require.Len(t, b, 4)
	last := b[3]
	modifyFile(t, seg, func(d []byte) []byte { return d[:last[1]-100] }) // inside the zero filler

	ids, rep := reopenIDs(t, dir, wal.Options{})
	require.Equal(t, seq(1, 3*perBatch), ids)
	require.True(t, rep.Torn)
	require.EqualValues(t, last[1]-100-last[0], rep.Bytes)
}

// The converse guard: a damaged length prefix of a batch that is followed
// by valid batches that were written after it was fsynced (Fsync mode)
// still makes Open fail, even when the bad length runs past the end of the
// file.
func TestBadLengthBeforeValidBatchesIsDamage(t *testing.T) {
	dir := t.TempDir()
	buildLog(t, dir, 5, wal.Options{Mode: wal.Fsync})
	seg := segments(t, dir)[0]
	b := entryBounds(t, seg)
	require.Less(t, b[3][1]-b[3][0], 128, "one-byte length prefix")
	// The high bit makes the length two bytes long: +128 (the next byte,
	// the batch version, is 1), past the end of the file.
	modifyFile(t, seg, func(d []byte) []byte { d[b[3][0]] |= 0x80; return d })
	_, err := wal.Open(dir, wal.Options{})
	require.ErrorIs(t, err, wal.ErrCorrupt)
	require.Contains(t, err.Error(), "runs past the end")
}
