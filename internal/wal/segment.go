package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// What this package relies on in github.com/tidwall/wal's private
// behaviour, all in this one place. ringwal reads, cuts and creates
// tidwall/wal's files itself (the scan before tidwall/wal opens a log, torn
// tail repair, restarting the log after a snapshot), so it depends on
// details the library does not promise. Each is mirrored here from
// tidwall/wal v1.2.1 (wal.go; the version in go.mod), and
// tidwall_compat_test.go checks each one against the library itself, so an
// upgrade that changes one fails that test with the assumption's name:
//
//   - naming: a segment file is named by its first entry's index, in
//     decimal, zero-padded to segNameDigits digits (segmentName), so name
//     order is index order; load (wal.go) ignores every other name
//     (parseSegmentName), which is what lets .broken copies and LOCK live
//     beside segments.
//   - clean-up: an interrupted TruncateFront leaves <index>.START, an
//     interrupted TruncateBack <index>.END; load finishes them (logView
//     predicts the result, normalizeLogDir performs it). atomicWrite's
//     <name>.TEMP files are never needed after a crash and load ignores
//     them, so normalizeLogDir may delete them.
//   - framing: a binary entry is a uvarint length and the bytes (nextEntry,
//     framedLen), and load fails on exactly the entries nextEntry refuses;
//     zero bytes after the last entry load as empty entries.
//   - switching: the segment-switch rule of writeBatch (afterEntry).
//   - empty log: a lone empty segment file named n opens (AllowEmpty) as an
//     empty log whose next index is n (resetLog).
//   - LastIndex comes from the last segment alone (its first index plus its
//     entry count): earlier segments are not read at load, so scanLog
//     checks their boundaries itself.
//
// One more is not testable from outside and was checked by reading wal.go:
// with NoSync, Sync fsyncs only the tail segment, and cycle fsyncs a
// segment before switching away from it (syncLog relies on both).
const (
	segNameDigits = 20
	startSuffix   = ".START"
	endSuffix     = ".END"
	tempSuffix    = ".TEMP"
)

// segKind is how tidwall/wal's load classifies a directory entry.
type segKind uint8

const (
	segNone  segKind = iota // not a segment: load ignores it
	segPlain                // <index>
	segStart                // <index>.START: an interrupted TruncateFront
	segEnd                  // <index>.END: an interrupted TruncateBack
)

// segmentName is the file name of the segment whose first index is index.
func segmentName(index uint64) string { return fmt.Sprintf("%020d", index) }

// parseSegmentName classifies a (non-directory) file name as load does: the
// first segNameDigits characters must be a non-zero decimal index, and the
// name must be exactly that, or that plus .START or .END.
func parseSegmentName(name string) (uint64, segKind) {
	if len(name) < segNameDigits {
		return 0, segNone
	}
	index, err := strconv.ParseUint(name[:segNameDigits], 10, 64)
	if err != nil || index == 0 {
		return 0, segNone
	}
	switch {
	case len(name) == segNameDigits:
		return index, segPlain
	case len(name) == segNameDigits+len(startSuffix) && strings.HasSuffix(name, startSuffix):
		return index, segStart
	case len(name) == segNameDigits+len(endSuffix) && strings.HasSuffix(name, endSuffix):
		return index, segEnd
	}
	return 0, segNone
}

// nextEntry parses one tidwall/wal binary entry (uvarint length, bytes) at
// the front of data. ok is false when the length is malformed or runs past
// the end, which is exactly when tidwall/wal's loader fails.
func nextEntry(data []byte) (entry []byte, n int, ok bool) {
	size, k := uvarint(data)
	if k <= 0 || size > uint64(len(data)-k) {
		return nil, 0, false
	}
	return data[k : k+int(size)], k + int(size), true
}

// framedLen is the bytes tidwall/wal writes for an entry of size bytes.
func framedLen(size int) int { return uvarintLen(uint64(size)) + size }

// afterEntry applies tidwall/wal's segment switching (writeBatch) to one
// entry of n framed bytes written when the tail segment holds tail bytes:
// it switches to a new segment before the write if the tail is over
// segmentSize, and after the entry if that brings the tail to segmentSize.
// It returns the tail's size afterwards and how many segment files were
// created (0, 1, or 2 when both rules fire; each new directory entry needs
// an fsync).
func afterEntry(tail, n, segmentSize int) (newTail, created int) {
	before, after := segmentSwitches(tail, n, segmentSize)
	if before {
		tail = 0
		created++
	}
	tail += n
	if after {
		tail = 0
		created++
	}
	return tail, created
}

// segmentSwitches is afterEntry's rule spelled out: whether tidwall/wal
// switches to a new segment (fsyncing the old one, then creating the new
// file, named by the next index) before writing an entry of n framed bytes
// to a tail of tail bytes, and whether it switches after it.
func segmentSwitches(tail, n, segmentSize int) (before, after bool) {
	if tail > segmentSize {
		before = true
		tail = 0
	}
	return before, tail+n >= segmentSize
}

// brokenSuffix ends the name of a copy of bytes a repair cut (keepCut).
const brokenSuffix = ".broken"

// brokenName names the n-th copy (from 0) of bytes cut from segment file
// seg at time at: <seg>.<UTC time>.broken, then <seg>.<UTC time>-<n>.broken
// for repairs within the same second. Such a name is never a segment name
// (parseSegmentName), so tidwall/wal and logView ignore the file.
func brokenName(seg string, at time.Time, n int) string {
	name := seg + "." + at.UTC().Format("20060102T150405Z")
	if n > 0 {
		name += "-" + strconv.Itoa(n)
	}
	return name + brokenSuffix
}

// segment is one tidwall/wal segment file: its first entry's index and path.
type segment struct {
	index uint64
	path  string
}

// logView lists the segments of logDir the way tidwall/wal's loader will
// see them once it has finished an interrupted TruncateFront (a .START file)
// or TruncateBack (.END), without changing anything on disk. The returned
// paths are the files as they are now; finish says whether a START/END
// clean-up is pending (normalizeLogDir performs it).
func logView(logDir string) (segs []segment, finish bool, err error) {
	ents, err := os.ReadDir(logDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	// os.ReadDir sorts by name, as tidwall/wal relies on.
	startIdx, endIdx := -1, -1
	for _, de := range ents {
		if de.IsDir() {
			continue
		}
		index, kind := parseSegmentName(de.Name())
		if kind == segNone {
			continue
		}
		if kind == segStart {
			startIdx = len(segs)
		} else if kind == segEnd && endIdx == -1 {
			endIdx = len(segs)
		}
		segs = append(segs, segment{index: index, path: filepath.Join(logDir, de.Name())})
	}
	if startIdx != -1 && endIdx != -1 {
		return nil, false, corruptf("%s has both a %s and an %s segment", logDir, startSuffix, endSuffix)
	}
	if startIdx != -1 {
		segs = segs[startIdx:]
	}
	if endIdx != -1 {
		segs = segs[:endIdx+1]
		if n := len(segs); n > 1 && segs[n-2].index == segs[n-1].index {
			segs = append(segs[:n-2], segs[n-1])
		}
	}
	return segs, startIdx != -1 || endIdx != -1, nil
}

// normalizeLogDir finishes what tidwall/wal would on open: an interrupted
// truncation (START/END files). It also deletes leftover .TEMP files, which
// tidwall/wal ignores. It must run before the torn-tail scan, which needs
// the final layout.
func normalizeLogDir(logDir string) error {
	ents, err := os.ReadDir(logDir)
	if err != nil {
		return err
	}
	removed := false
	for _, de := range ents {
		if strings.HasSuffix(de.Name(), tempSuffix) {
			if _, err := removeFile(filepath.Join(logDir, de.Name())); err != nil {
				return err
			}
			removed = true
		}
	}
	all, finish, err := logView(logDir)
	if err != nil {
		return err
	}
	if !finish {
		if removed {
			return syncDir(logDir)
		}
		return nil
	}
	keep := make(map[string]bool, len(all))
	for _, s := range all {
		keep[s.path] = true
	}
	for _, de := range ents {
		p := filepath.Join(logDir, de.Name())
		if keep[p] || de.IsDir() {
			continue
		}
		if _, kind := parseSegmentName(de.Name()); kind != segNone {
			if _, err := removeFile(p); err != nil {
				return err
			}
		}
	}
	for _, s := range all {
		if base := filepath.Base(s.path); len(base) != segNameDigits {
			if err := renameFile(s.path, filepath.Join(logDir, base[:segNameDigits])); err != nil {
				return err
			}
		}
	}
	return syncDir(logDir)
}

// readFileInto reads a whole file into buf's storage, growing it if needed.
func readFileInto(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return buf, err
	}
	size := int(fi.Size())
	if cap(buf) < size {
		buf = make([]byte, size, size+size/8)
	}
	buf = buf[:size]
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return buf[:0], err
	}
	return buf[:n], nil
}

func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	trace(ioEvent{op: opTruncate, path: path, off: size})
	if err := syncFile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
