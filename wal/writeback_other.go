//go:build !linux

package wal

import "os"

// writeback makes f's bytes durable where sync_file_range does not exist:
// an fsync, on the writeback goroutine, so the writer does not wait.
func writeback(f *os.File, _, _ int64) error {
	return f.Sync()
}
