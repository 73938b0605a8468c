package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// A snapshot file holds the caller's live state as records, as of a log
// index. Layout (little endian):
//
//	[0:6]    magic "RWSNAP"
//	[6:8]    snapshot format version
//	[8:16]   index: the last log batch the state includes
//	[16:24]  record count
//	[24:32]  body length (compressed)
//	[32:40]  creation time, unix ns
//	[40:44]  CRC32C of the body
//	[44:48]  CRC32C of bytes [0:44]
//	[48:]    body: one zstd stream of records as AppendRecord wrote them
//
// It is written under a temporary name and renamed only once complete and
// fsynced, so a file with the final name is either whole or damaged by the
// disk, which the checksums catch.
const (
	snapMagic      = "RWSNAP"
	snapVersion    = 1
	snapHeaderSize = 48
	snapPrefix     = "snap-"
	snapSuffix     = ".zst"
	snapTmpSuffix  = ".tmp"
	// snapChunk: emitted records are gathered into chunks of about this
	// size before going to the zstd encoder.
	snapChunk = 128 << 10
)

type snapHeader struct {
	version uint16
	index   uint64
	records uint64
	bodyLen uint64
	created int64
	bodyCRC uint32
}

func snapName(index uint64) string { return snapPrefix + segmentName(index) + snapSuffix }

func (h *snapHeader) encode() []byte {
	b := make([]byte, snapHeaderSize)
	copy(b, snapMagic)
	binary.LittleEndian.PutUint16(b[6:], h.version)
	binary.LittleEndian.PutUint64(b[8:], h.index)
	binary.LittleEndian.PutUint64(b[16:], h.records)
	binary.LittleEndian.PutUint64(b[24:], h.bodyLen)
	binary.LittleEndian.PutUint64(b[32:], uint64(h.created))
	binary.LittleEndian.PutUint32(b[40:], h.bodyCRC)
	binary.LittleEndian.PutUint32(b[44:], crc32.Checksum(b[:44], castagnoli))
	return b
}

func parseSnapHeader(b []byte) (snapHeader, error) {
	if len(b) < snapHeaderSize {
		return snapHeader{}, corruptf("snapshot of %d bytes is shorter than its header", len(b))
	}
	if string(b[:6]) != snapMagic {
		return snapHeader{}, corruptf("snapshot magic %q", b[:6])
	}
	if crc32.Checksum(b[:44], castagnoli) != binary.LittleEndian.Uint32(b[44:48]) {
		return snapHeader{}, corruptf("snapshot header checksum mismatch")
	}
	h := snapHeader{
		version: binary.LittleEndian.Uint16(b[6:]),
		index:   binary.LittleEndian.Uint64(b[8:]),
		records: binary.LittleEndian.Uint64(b[16:]),
		bodyLen: binary.LittleEndian.Uint64(b[24:]),
		created: int64(binary.LittleEndian.Uint64(b[32:])),
		bodyCRC: binary.LittleEndian.Uint32(b[40:]),
	}
	if h.version > snapVersion {
		return h, fmt.Errorf("snapshot format version %d, this build reads versions up to %d: %w", h.version, snapVersion, ErrVersion)
	}
	if h.version == 0 {
		return h, corruptf("snapshot format version 0")
	}
	return h, nil
}

// snapFile is a snapshot file found in a directory.
type snapFile struct {
	path  string
	index uint64 // from the name; the header must agree
}

// listSnapshots returns dir's snapshot files, newest (highest index) first.
func listSnapshots(dir string) ([]snapFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []snapFile
	for _, de := range ents {
		name := de.Name()
		if de.IsDir() || !strings.HasPrefix(name, snapPrefix) || !strings.HasSuffix(name, snapSuffix) {
			continue
		}
		idx, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, snapPrefix), snapSuffix), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, snapFile{path: filepath.Join(dir, name), index: idx})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].index > out[j].index })
	return out, nil
}

// removeSnapshotTemps deletes temporary files of checkpoints that never
// finished.
func removeSnapshotTemps(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	removed := false
	for _, de := range ents {
		if n := de.Name(); strings.HasPrefix(n, snapPrefix) && strings.HasSuffix(n, snapTmpSuffix) {
			if _, err := removeFile(filepath.Join(dir, n)); err != nil {
				return err
			}
			removed = true
		}
	}
	if removed {
		return syncDir(dir)
	}
	return nil
}

// checkSnapshot validates a snapshot's header and body checksum without
// decompressing it.
func checkSnapshot(sf snapFile) (snapHeader, error) {
	f, err := os.Open(sf.path)
	if err != nil {
		return snapHeader{}, err
	}
	defer f.Close()
	hb := make([]byte, snapHeaderSize)
	if _, err := io.ReadFull(f, hb); err != nil {
		return snapHeader{}, corruptf("%s: reading header: %v", sf.path, err)
	}
	h, err := parseSnapHeader(hb)
	if err != nil {
		return h, fmt.Errorf("%s: %w", sf.path, err)
	}
	if h.index != sf.index {
		return h, corruptf("%s: header says index %d", sf.path, h.index)
	}
	fi, err := f.Stat()
	if err != nil {
		return h, err
	}
	if uint64(fi.Size()-snapHeaderSize) != h.bodyLen {
		return h, corruptf("%s: body is %d bytes, header says %d", sf.path, fi.Size()-snapHeaderSize, h.bodyLen)
	}
	crc := crc32.New(castagnoli)
	if _, err := io.Copy(crc, bufio.NewReaderSize(f, 256<<10)); err != nil {
		return h, err
	}
	if crc.Sum32() != h.bodyCRC {
		return h, corruptf("%s: body checksum mismatch", sf.path)
	}
	return h, nil
}

// crcWriter passes writes through and checksums them.
type crcWriter struct {
	w   io.Writer
	crc uint32
	n   int64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += int64(n)
	return n, err
}

// writeSnapshot writes a snapshot (mode perm) for index through fn:
// temporary file, zstd stream, header, fsync, rename, directory fsync. On
// error nothing with the final name has been created.
func writeSnapshot(dir string, perm os.FileMode, index uint64, fn func(emit func(*Record) error) error) (info CheckpointInfo, err error) {
	final := filepath.Join(dir, snapName(index))
	tmp := final + snapTmpSuffix
	f, err := createTemp(tmp, perm)
	if err != nil {
		return info, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(make([]byte, snapHeaderSize)); err != nil {
		return info, err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	cw := &crcWriter{w: bw}
	enc, err := zstd.NewWriter(cw, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return info, err
	}
	var chunk []byte
	var records uint64
	done := false
	emit := func(r *Record) error {
		if done {
			return errors.New("ringwal/wal: emit called after the checkpoint function returned")
		}
		if !r.Kind.Valid() {
			return fmt.Errorf("ringwal/wal: checkpoint record of unknown kind %d", r.Kind)
		}
		if err := checkQueues(r); err != nil {
			return fmt.Errorf("ringwal/wal: checkpoint: %w", err)
		}
		chunk = AppendRecord(chunk, r)
		records++
		if len(chunk) >= snapChunk {
			if _, err := enc.Write(chunk); err != nil {
				return err
			}
			chunk = chunk[:0]
		}
		return nil
	}
	err = fn(emit)
	done = true
	if err == nil && len(chunk) > 0 {
		_, err = enc.Write(chunk)
	}
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return info, err
	}
	if err = bw.Flush(); err != nil {
		return info, err
	}
	h := snapHeader{version: snapVersion, index: index, records: records, bodyLen: uint64(cw.n), created: time.Now().UnixNano(), bodyCRC: cw.crc}
	if _, err = f.WriteAt(h.encode(), 0); err != nil {
		return info, err
	}
	traceWholeFile(tmp)
	if err = syncFile(f); err != nil {
		return info, err
	}
	if err = f.Close(); err != nil {
		return info, err
	}
	fail("checkpoint-before-rename")
	if err = renameFile(tmp, final); err != nil {
		return info, err
	}
	if err = syncDir(dir); err != nil {
		return info, err
	}
	return CheckpointInfo{Index: index, Records: records, Bytes: snapHeaderSize + cw.n, Path: final}, nil
}

// chosenSnapshot is the snapshot recovery starts from.
type chosenSnapshot struct {
	snapFile
	header  snapHeader
	skipped []string // newer, damaged snapshots passed over
}

// chooseSnapshot picks the newest valid snapshot and checks that the log
// (whose first index is logFirst; 0 = no segments) continues right after
// it. A damaged newest snapshot falls back to an older one only if the log
// still covers it; otherwise recovery is impossible and the error says so.
// With no usable snapshot the log must start at index 1. Returns nil for
// "no snapshot".
func chooseSnapshot(dir string, logFirst uint64) (*chosenSnapshot, error) {
	snaps, err := listSnapshots(dir)
	if err != nil {
		return nil, err
	}
	var skipped []string
	var firstErr error
	for _, sf := range snaps {
		h, err := checkSnapshot(sf)
		if errors.Is(err, ErrVersion) {
			return nil, err
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			skipped = append(skipped, sf.path)
			continue
		}
		if logFirst > sf.index+1 {
			if firstErr != nil {
				return nil, fmt.Errorf("newest snapshot damaged (%v) and the log starts at index %d, after snapshot %s (index %d): %w",
					firstErr, logFirst, sf.path, sf.index, ErrCorrupt)
			}
			return nil, fmt.Errorf("log starts at index %d but snapshot %s covers only up to %d: batches %d..%d are missing: %w",
				logFirst, sf.path, sf.index, sf.index+1, logFirst-1, ErrCorrupt)
		}
		return &chosenSnapshot{snapFile: sf, header: h, skipped: skipped}, nil
	}
	if logFirst > 1 {
		if firstErr != nil {
			return nil, fmt.Errorf("no usable snapshot (%v) and the log starts at index %d: %w", firstErr, logFirst, ErrCorrupt)
		}
		return nil, fmt.Errorf("no snapshot and the log starts at index %d: batches 1..%d are missing: %w", logFirst, logFirst-1, ErrCorrupt)
	}
	if len(skipped) > 0 {
		return &chosenSnapshot{skipped: skipped}, nil
	}
	return nil, nil
}

// removeSnapshotsBefore deletes snapshots older than index, durably.
func removeSnapshotsBefore(dir string, index uint64) error {
	snaps, err := listSnapshots(dir)
	if err != nil {
		return err
	}
	removed := false
	for _, sf := range snaps {
		if sf.index < index {
			ok, err := removeFile(sf.path)
			if err != nil {
				return err
			}
			removed = removed || ok
		}
	}
	if removed {
		return syncDir(dir)
	}
	return nil
}
