package wal_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// Close must write Buffered records that are still waiting out a long
// FlushInterval.
func TestCloseWritesBuffered(t *testing.T) {
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{Mode: wal.Buffered, FlushInterval: time.Hour})
	require.NoError(t, err)
	for id := uint64(1); id <= 100; id++ {
		r := rec(id)
		require.NoError(t, l.Append(&r))
	}
	require.NoError(t, l.Close())
	ids, _ := reopenIDs(t, dir, wal.Options{})
	require.Equal(t, seq(1, 100), ids)
}

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// An Open that fails on damage releases the lock and leaks no descriptor.
func TestFailedOpenReleasesLockAndFDs(t *testing.T) {
	dir := t.TempDir()
	buildLog(t, dir, 5, wal.Options{Mode: wal.Fsync}) // later batches claim the damaged one fsynced
	seg := segments(t, dir)[0]
	b := entryBounds(t, seg)
	modifyFile(t, seg, func(d []byte) []byte { d[b[1][0]+10] ^= 0xff; return d })
	before := countFDs(t)
	for i := 0; i < 5; i++ {
		_, err := wal.Open(dir, wal.Options{})
		require.ErrorIs(t, err, wal.ErrCorrupt)
		require.False(t, errors.Is(err, wal.ErrLocked))
	}
	require.Equal(t, before, countFDs(t))
	ids, rep := reopenIDs(t, dir, wal.Options{RepairCorrupt: true})
	require.Equal(t, seq(1, 3), ids)
	require.Equal(t, filepath.Base(seg), filepath.Base(rep.Segment))
}
