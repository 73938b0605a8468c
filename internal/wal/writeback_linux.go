package wal

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeback starts the kernel's writeback of f's bytes [off, off+n)
// without waiting for it to finish.
func writeback(f *os.File, off, n int64) error {
	return unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
