package wal_test

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// copyBackup writes the first Size bytes of each file of set under dir.
func copyBackup(t *testing.T, set *wal.BackupSet, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, wal.LogDirName), 0o700))
	for _, f := range set.Files {
		out, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(f.Name)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		require.NoError(t, err)
		_, err = io.Copy(out, io.NewSectionReader(f.File, 0, f.Size))
		require.NoError(t, err)
		require.NoError(t, out.Close())
	}
}

// A backup's files, copied while appends and checkpoints go on (small
// segments, so that the tail switches and checkpoints delete files the
// set holds open), open as a log holding every record appended before
// Backup was called, with no damage to repair.
func TestBackupFilesOpenToEverythingAppendedBefore(t *testing.T) {
	src := t.TempDir()
	l, err := wal.Open(src, wal.Options{SegmentSize: 4 << 10})
	require.NoError(t, err)
	defer l.Close()
	st := newState()
	for id := uint64(1); id <= 500; id++ {
		r := rec(id)
		require.NoError(t, l.Append(&r))
		require.NoError(t, st.apply(&r))
	}
	_, err = l.Checkpoint(st.emit)
	require.NoError(t, err)
	for id := uint64(501); id <= 1000; id++ {
		r := rec(id)
		require.NoError(t, l.Append(&r))
		require.NoError(t, st.apply(&r))
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // appends and checkpoints while the backup copies
		defer wg.Done()
		for id := uint64(1001); !stop.Load(); id++ {
			r := rec(id)
			if l.Append(&r) != nil || st.apply(&r) != nil {
				return
			}
			if id%200 == 0 {
				if _, err := l.Checkpoint(st.emit); err != nil {
					return
				}
			}
		}
	}()
	set, err := l.Backup()
	require.NoError(t, err)
	for id := uint64(1001); id < 3000; id++ { // let appends and checkpoints overtake the listing
		r := rec(id + 1_000_000)
		require.NoError(t, l.Append(&r))
	}
	_, err = l.Checkpoint(st.emit)
	require.NoError(t, err)
	dst := t.TempDir()
	copyBackup(t, set, dst)
	require.NoError(t, set.Close())
	stop.Store(true)
	wg.Wait()

	c, err := wal.Open(dst, wal.Options{})
	require.NoError(t, err)
	defer c.Close()
	assert.Zero(t, c.Repair())
	got := newState()
	_, err = c.Replay(got.apply)
	require.NoError(t, err)
	for id := uint64(1); id <= 1000; id++ {
		require.True(t, got.live[id], "record %d, appended before the backup, is not in it", id)
	}
	assert.Equal(t, set.Index, c.Stats().LastIndex)
}
