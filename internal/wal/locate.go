package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Reading one record back from the log, by where it was written. The log
// already holds every payload it was given; a caller that keeps only a
// record's Location (a backlog larger than memory) reads the record again
// when it needs it, without replaying anything.
//
// A read opens the segment file itself and reads exactly one entry with
// pread, rather than calling tidwall/wal's Read: that loads a whole
// segment into memory, and its cache is written under a read lock.
// Reading a file the writer appends to is safe: a Location is handed out
// only once its batch's write(2) has returned, and the bytes before the
// tail never change until a truncation removes or rewrites the file.

// Location names a written record: its segment file (by the file's first
// batch index, its name), the byte offset of its batch's framed entry in
// that file, and the record's byte offset in the batch's body once
// decompressed. It stays valid until a front truncation reaches its
// segment: tidwall/wal deletes the segments before the index it is given
// and rewrites the one holding it (under that index's name), so a caller
// that keeps Locations truncates at a segment's first index or before
// its oldest Location's segment.
type Location struct {
	Segment uint64
	Entry   uint32
	Record  uint32
}

// IsZero reports whether loc names nothing (the zero Location).
func (loc Location) IsZero() bool { return loc.Segment == 0 }

func (loc Location) String() string {
	return fmt.Sprintf("log/%s offset %d, record at %d", segmentName(loc.Segment), loc.Entry, loc.Record)
}

// Location is where the record of a one-record append was written. ok is
// false until its batch's write has succeeded (in Fsync mode, until the
// fsync that covers it), and for good if it failed. It does not wait.
func (c Commit) Location() (loc Location, ok bool) { return c.LocationAt(c.off) }

// LocationAt is Location for the record at off in the batch, as
// AppendBatchCommitLocated reported it.
func (c Commit) LocationAt(off uint32) (loc Location, ok bool) {
	if c.res == nil {
		return Location{}, false
	}
	select {
	case <-c.res.done:
	default:
		return Location{}, false
	}
	if c.res.err != nil || c.res.segment == 0 {
		return Location{}, false
	}
	return Location{Segment: c.res.segment, Entry: c.res.entry, Record: off}, true
}

// reader holds what reads by Location keep between calls: the files
// opened, and the body of the batch read last, so that a consumer reading
// the records of one batch in order decompresses it once.
type reader struct {
	mu      sync.Mutex
	files   map[uint64]*os.File
	lastAt  Location // Segment and Entry of body; Record unused
	body    []byte
	scratch []byte
}

// maxOpenSegments bounds the files reads keep open.
const maxOpenSegments = 8

// ReadAt decodes the record at loc into r. r's byte fields are the
// caller's own (nothing aliases the log's buffers). A damaged entry or
// record is ErrCorrupt; a missing file is an error wrapping
// fs.ErrNotExist; both name the file and the offset. Safe for concurrent
// use, also with appends and checkpoints.
func (l *Log) ReadAt(loc Location, r *Record) error {
	if loc.IsZero() {
		return fmt.Errorf("ringwal/wal: read: %w", errors.New("the zero Location names no record"))
	}
	rd := &l.reader
	rd.mu.Lock()
	defer rd.mu.Unlock()
	body, err := rd.batchBody(l.logDir, loc)
	if err != nil {
		return fmt.Errorf("ringwal/wal: reading %s: %w", loc, err)
	}
	if int(loc.Record) >= len(body) {
		return fmt.Errorf("ringwal/wal: reading %s: %w", loc, corruptf("the batch body has only %d bytes", len(body)))
	}
	var got Record // r is written only on success: nothing half-read is handed out
	if _, err := DecodeRecord(body[loc.Record:], &got); err != nil {
		return fmt.Errorf("ringwal/wal: reading %s: %w", loc, err)
	}
	got.Payload = bytes.Clone(got.Payload)
	*r = got
	return nil
}

// batchBody returns the body of the batch at loc's entry, from the last
// read when it is the same batch. rd.mu is held.
func (rd *reader) batchBody(logDir string, loc Location) ([]byte, error) {
	if rd.body != nil && rd.lastAt.Segment == loc.Segment && rd.lastAt.Entry == loc.Entry {
		return rd.body, nil
	}
	f, err := rd.file(logDir, loc.Segment)
	if err != nil {
		return nil, err
	}
	var head [binary.MaxVarintLen64]byte
	n, err := f.ReadAt(head[:], int64(loc.Entry))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	size, k := binary.Uvarint(head[:n])
	if k <= 0 || size > maxBatchBody+batchHeaderSize {
		return nil, corruptf("no entry length at the offset")
	}
	// The length is checked against the file before it is trusted with
	// an allocation: damage must not cost a gigabyte.
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if left := fi.Size() - int64(loc.Entry) - int64(k); int64(size) > left {
		return nil, corruptf("the entry's %d bytes run past the end of the file", size)
	}
	entry := make([]byte, size)
	if _, err := f.ReadAt(entry, int64(loc.Entry)+int64(k)); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, corruptf("the entry's %d bytes run past the end of the file", size)
		}
		return nil, err
	}
	h, err := checkBatch(entry)
	if err != nil {
		return nil, err
	}
	body, scratch, err := batchBody(entry, h, rd.scratch)
	if err != nil {
		return nil, err
	}
	if h.flags&flagS2 != 0 {
		// body is scratch: keep it, and give the next read a fresh one.
		rd.scratch = nil
	} else {
		rd.scratch = scratch
	}
	rd.body, rd.lastAt = body, Location{Segment: loc.Segment, Entry: loc.Entry}
	return body, nil
}

// file returns segment's file, opened read-only on first use. rd.mu is
// held.
func (rd *reader) file(logDir string, segment uint64) (*os.File, error) {
	if f := rd.files[segment]; f != nil {
		return f, nil
	}
	if len(rd.files) >= maxOpenSegments {
		rd.closeFiles()
	}
	f, err := os.Open(filepath.Join(logDir, segmentName(segment)))
	if err != nil {
		return nil, err
	}
	if rd.files == nil {
		rd.files = make(map[uint64]*os.File)
	}
	rd.files[segment] = f
	return f, nil
}

// forget drops what reads keep: after a truncation removed or rewrote
// files (an open descriptor would still read a deleted file), and at
// Close.
func (rd *reader) forget() {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	rd.closeFiles()
	rd.body, rd.lastAt = nil, Location{}
}

func (rd *reader) closeFiles() {
	for seg, f := range rd.files {
		_ = f.Close() // read-only: nothing to lose
		delete(rd.files, seg)
	}
}
