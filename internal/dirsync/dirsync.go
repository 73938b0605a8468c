// Package dirsync fsyncs directories: the one place the module opens a
// directory, fsyncs it and closes it, so that a file created, renamed or
// removed in it survives a power loss. It owns nothing else; the log's
// directory steps (internal/wal/fsops.go) call it and add their test trace.
package dirsync

import "os"

// Sync fsyncs directory dir. The close's error is returned when the
// fsync succeeded.
func Sync(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
