package wal

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every directory entry this package creates, renames or removes is
// followed by an fsync of its parent directory before the operation that
// made it returns: a new data directory (and its missing parents), log/,
// LOCK, FORMAT, segment files at each switch (in Fsync mode, before the
// append returns), snapshots and their temporary files, the segments a
// checkpoint truncates, .broken copies and the cuts of a repair.
func TestEveryDirectoryChangeIsSynced(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "data")
	rc := record(t, root)
	check := func(what string) {
		t.Helper()
		evs := rc.events()
		assert.Empty(t, unsyncedDirChanges(evs), "after %s", what)
	}

	l, err := Open(dir, Options{Mode: Fsync, SegmentSize: 512, CompressAbove: -1})
	require.NoError(t, err)
	check("Open of a new directory")
	ops := map[ioOp]int{}
	for _, ev := range rc.events() {
		ops[ev.op]++
	}
	assert.Equal(t, 4, ops[opMkdir], "a, b, data, log")
	for i := uint64(1); i <= 60; i++ {
		r := Record{Kind: KindEnqueue, ID: i, Payload: make([]byte, 40)}
		require.NoError(t, l.Append(&r))
		check("an Fsync append")
	}
	_, err = l.Checkpoint(emitIDs(1, 60))
	require.NoError(t, err)
	check("Checkpoint")
	for i := uint64(61); i <= 80; i++ {
		r := Record{Kind: KindEnqueue, ID: i, Payload: make([]byte, 40)}
		require.NoError(t, l.Append(&r))
	}
	_, err = l.Checkpoint(emitIDs(1, 80))
	require.NoError(t, err)
	check("a second Checkpoint (removes the first snapshot)")
	require.NoError(t, l.Close())
	check("Close")

	// A torn tail: the repair keeps a .broken copy and cuts.
	segs, _, err := logView(filepath.Join(dir, logDirName))
	require.NoError(t, err)
	tail := segs[len(segs)-1].path
	data, err := os.ReadFile(tail)
	require.NoError(t, err)
	if len(data) == 0 {
		l, err := Open(dir, Options{Mode: Fsync, SegmentSize: 512, CompressAbove: -1})
		require.NoError(t, err)
		r := Record{Kind: KindEnqueue, ID: 99, Payload: make([]byte, 40)}
		require.NoError(t, l.Append(&r))
		require.NoError(t, l.Close())
		data, err = os.ReadFile(tail)
		require.NoError(t, err)
	}
	require.NoError(t, os.WriteFile(tail, data[:len(data)-3], 0o640))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "log", segmentName(1)+tempSuffix), nil, 0o640))
	l, err = Open(dir, Options{})
	require.NoError(t, err)
	require.NotEmpty(t, l.Repair().BrokenFiles)
	check("Open with a repair")
	require.NoError(t, l.Close())

	ops = map[ioOp]int{}
	for _, ev := range rc.events() {
		ops[ev.op]++
	}
	for _, op := range []ioOp{opCreate, opMkdir, opRename, opRemove, opSyncDir, opSync, opWrite, opTruncate} {
		assert.Positive(t, ops[op], "the run exercised %s", op)
	}
}
