package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// BackupFile is one file of a backup: its name in the directory and how
// many of its bytes, from the start, the backup holds.
type BackupFile struct {
	// Name is the file's path relative to the log's directory, with
	// forward slashes: "FORMAT", "snap-<20 digits>.zst" or "log/<20 digits>".
	Name string
	// Size is how many bytes, from offset 0, belong to the backup. For the
	// log's tail segment it ends at the last batch written when Backup
	// listed it: later appends go beyond it.
	Size int64
	// File is open for reading (ReadAt). The backup's content stays
	// readable through it while checkpoints delete or replace the file
	// by name, so the caller may copy it at leisure; BackupSet.Close
	// closes it.
	File *os.File
}

// BackupSet is what a backup copies: the FORMAT file, the newest snapshot
// (if any) and every log segment from it on, the last one up to a batch
// boundary.
type BackupSet struct {
	// Files in the order a restore should write them (FORMAT, snapshot,
	// segments by index).
	Files []BackupFile
	// Index is the last batch the set holds: every record appended before
	// Backup was called is at or before it.
	Index uint64
	// Snapshot is the index of the snapshot the set holds (0: none).
	Snapshot uint64
}

// Close closes every file of the set; it returns the first error.
func (s *BackupSet) Close() error {
	var errs []error
	for _, f := range s.Files {
		if f.File != nil {
			errs = append(errs, f.File.Close())
		}
	}
	return errors.Join(errs...)
}

// Backup lists and opens the files a consistent copy of the log needs,
// without stopping appends: a directory holding exactly these files (their
// first Size bytes) opens, with Open, to the state the log had when the
// last of them was written, which includes every record appended before
// the call.
//
// It holds the checkpoint lock only while it lists (so no checkpoint
// deletes a file between the listing and its opening) and runs the listing
// on the writer between two batches (so the tail's size is a batch
// boundary and no truncation is half done): producers wait for at most the
// few opens that takes, like one group commit. Afterwards segments only
// grow beyond the listed sizes, and a checkpoint that deletes or rewrites a
// listed file by name leaves the open descriptor reading the old one. The
// caller copies the files and closes the set. Safe for concurrent use with
// everything but Replay.
func (l *Log) Backup() (*BackupSet, error) {
	l.ckMu.Lock()
	defer l.ckMu.Unlock()
	set := &BackupSet{}
	err := l.control(func() error {
		if l.tw == nil {
			return l.failedErr()
		}
		set.Index = l.last
		if err := set.add(l.dir, formatFileName, -1); err != nil {
			return err
		}
		if l.snap != nil {
			set.Snapshot = l.snap.index
			if err := set.add(l.dir, filepath.Base(l.snap.path), -1); err != nil {
				return err
			}
		}
		segs, _, err := logView(l.logDir)
		if err != nil {
			return err
		}
		for _, s := range segs {
			size := int64(-1)
			if s.index == l.tailIndex {
				size = int64(l.tailSize)
			}
			if err := set.add(l.dir, logDirName+"/"+filepath.Base(s.path), size); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		set.Close()
		return nil, fmt.Errorf("ringwal/wal: backup: %w", err)
	}
	return set, nil
}

// add opens dir/name and appends it with size bytes (-1: the file's size).
func (s *BackupSet) add(dir, name string, size int64) error {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if size < 0 {
		size = fi.Size()
	}
	if size > fi.Size() {
		f.Close()
		return fmt.Errorf("%s holds %d bytes, fewer than the %d written: %w", name, fi.Size(), size, ErrCorrupt)
	}
	s.Files = append(s.Files, BackupFile{Name: name, Size: size, File: f})
	return nil
}

// BackupFileKind classifies a name found in a backup, as restoring it
// into a directory would: "format" (FORMAT), "snapshot" (snap-N.zst, with
// its index), "segment" (log/N, with its index) or "" for any other name,
// which a restore must refuse.
func BackupFileKind(name string) (kind string, index uint64) {
	switch {
	case name == formatFileName:
		return "format", 0
	case strings.HasPrefix(name, logDirName+"/"):
		base := strings.TrimPrefix(name, logDirName+"/")
		if idx, k := parseSegmentName(base); k == segPlain {
			return "segment", idx
		}
	case strings.HasPrefix(name, snapPrefix) && strings.HasSuffix(name, snapSuffix):
		digits := strings.TrimSuffix(strings.TrimPrefix(name, snapPrefix), snapSuffix)
		if len(digits) == segNameDigits {
			if idx, err := strconv.ParseUint(digits, 10, 64); err == nil {
				return "snapshot", idx
			}
		}
	}
	return "", 0
}

// LogDirName is the name of the log's subdirectory of segments.
const LogDirName = logDirName
