package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Repair: telling a torn tail from damage, and cutting either.
//
// tidwall/wal's binary entries are a uvarint length and the bytes, with no
// checksum, and its Open reads the whole last segment and fails on a short
// entry; zero bytes appended by a crash after the file grew open as extra
// empty entries, and flipped bytes read back without error. So every batch
// carries its own header and checksums (batch.go), Open scans the log
// before tidwall/wal sees it, and the first bad batch is classified here
// (damageClass), then cut or refused as Options.Recovery says (allows).

// damageClass is what a bad batch can be explained by.
type damageClass uint8

const (
	// tornShort: the last batch of the newest segment was cut short; its
	// length prefix and checksummed header agree, so everything to the end
	// of the file is that batch's own bytes. A crash mid-write.
	tornShort damageClass = iota + 1
	// tornEnd: bad bytes in the newest segment with no valid batch after
	// them. A crash mid-write, or a file grown but never written.
	tornEnd
	// unsynced: bad bytes in the newest segment followed by valid batches,
	// none of which claims the bad one durable (their durable index is
	// below it). What a power loss leaves when pages written after the last
	// fsync reach the disk out of order.
	unsynced
	// damage: anything else: a bad batch in an older segment (tidwall/wal
	// fsyncs a segment before it switches away from it), one followed by a
	// batch that claims it was fsynced, or one followed by a version 1
	// batch (which says nothing about fsync, so nothing can be proven).
	damage
)

func (d damageClass) String() string {
	switch d {
	case tornShort:
		return "torn final batch"
	case tornEnd:
		return "torn tail"
	case unsynced:
		return "unsynced tail"
	case damage:
		return "damage"
	}
	return "none"
}

// cut is a place where the log goes bad, and what lies from there to the end.
type cut struct {
	seg    int    // position in the segment list
	path   string // that segment's file
	off    int64  // byte offset of the first bad entry
	index  uint64 // its index
	class  damageClass
	reason string

	after       int  // valid batches found after the bad one in its segment
	syncedAfter bool // one of them claims index durable (or says nothing: version 1)

	bytes   int64 // bytes from off to the end of the log
	batches int   // entries there whose header checks out
	records int   // records those headers announce
}

// torn reports whether a crash or power loss explains the cut: the bytes
// were never fsynced, so cutting them loses nothing acknowledged as
// durable.
func (c *cut) torn() bool { return c.class != damage }

// allows reports whether mode lets Open cut c, and if not, the error.
func (c *cut) allows(mode RecoveryMode) error {
	switch {
	case mode == SkipToPointInTime:
		return nil
	case mode == PointInTime && c.torn():
		return nil
	}
	what := c.class.String()
	hint := "Options.Recovery = SkipToPointInTime cuts from here on"
	if mode == AbsoluteConsistency {
		hint = "Options.Recovery = AbsoluteConsistency refuses any damage; the default, PointInTime, cuts a torn or unsynced tail"
		if c.class == damage {
			hint = "Options.Recovery = SkipToPointInTime cuts from here on"
		}
	} else if c.syncedAfter {
		what += ", followed by batches that were fsynced after it"
	}
	return fmt.Errorf("%s offset %d (batch %d): %s: %s; %d bytes (%d batches, %d records) from here on (%s): %w",
		c.path, c.off, c.index, what, c.reason, c.bytes, c.batches, c.records, hint, ErrCorrupt)
}

func (c *cut) report() RepairReport {
	return RepairReport{
		Bytes: c.bytes, Batches: c.batches, Records: c.records,
		Segment: c.path, Offset: c.off, Index: c.index, Torn: c.torn(), Reason: c.reason,
		Class: c.class.String(), ValidAfter: c.after, SyncedAfter: c.syncedAfter,
	}
}

// scan is the result of reading every segment of a log.
type scan struct {
	segs    []segment
	first   uint64 // index of the first entry (the first segment's name); 0 = no segments
	last    uint64 // index of the last valid entry (first-1 if none)
	batches uint64
	records uint64
	bytes   int64  // bytes of valid entries, framing included
	durable uint64 // highest durable index a valid batch claims
	cut     *cut   // first damage, nil if none
	// The last valid batch: empty (no records) and its durable index. A
	// close marker (writeCloseMarker) is an empty batch claiming the one
	// before it.
	lastEmpty bool
	lastClaim uint64
}

// visitFunc sees every valid batch of a scan in index order.
type visitFunc func(index uint64, e []byte, h batchHeader) error

// scanLog reads every segment and checks every entry's framing, header and
// body checksum (not the records: visit may decode them). It stops at the
// first bad entry and classifies it (damageClass). A batch written by a
// newer version is an error, not damage. Segment boundaries are checked
// too: a segment must hold exactly the entries up to the next segment's
// first index.
func scanLog(segs []segment, visit visitFunc) (*scan, error) {
	s := &scan{segs: segs}
	if len(segs) == 0 {
		return s, nil
	}
	s.first = segs[0].index
	s.last = s.first - 1
	var buf []byte
	for i, sg := range segs {
		var err error
		if buf, err = readFileInto(sg.path, buf); err != nil {
			return nil, err
		}
		lastSeg := i == len(segs)-1
		index := sg.index
		if index != s.last+1 {
			return nil, fmt.Errorf("segment %s starts at index %d, expected %d: %w", sg.path, index, s.last+1, ErrCorrupt)
		}
		off := 0
		for off < len(buf) {
			if !lastSeg && index == segs[i+1].index {
				s.cut = s.newCut(i, off, index, damage, fmt.Sprintf("entries past the next segment's first index %d", index), buf)
				return s, nil
			}
			e, n, ok := nextEntry(buf[off:])
			var h batchHeader
			var reason string
			if !ok {
				reason = fmt.Sprintf("entry length runs past the end of the file (%d bytes left)", len(buf)-off)
			} else if h, err = checkBatch(e); err != nil {
				if errors.Is(err, ErrVersion) {
					return nil, fmt.Errorf("%s offset %d (index %d): %w", sg.path, off, index, err)
				}
				reason = err.Error()
			}
			if reason != "" {
				s.cut = s.classify(i, off, index, lastSeg, reason, buf)
				return s, nil
			}
			if visit != nil {
				if err := visit(index, e, h); err != nil {
					return nil, fmt.Errorf("%s offset %d (index %d): %w", sg.path, off, index, err)
				}
			}
			s.batches++
			s.records += uint64(h.count)
			s.bytes += int64(n)
			s.durable = max(s.durable, h.durable)
			s.lastEmpty, s.lastClaim = h.count == 0, h.durable
			s.last = index
			index++
			off += n
		}
		if !lastSeg && index != segs[i+1].index {
			s.cut = s.newCut(i, off, index, damage,
				fmt.Sprintf("segment ends at index %d but the next one starts at %d", index-1, segs[i+1].index), buf)
			return s, nil
		}
	}
	return s, nil
}

// classify describes the first bad entry, at (seg, off) with index index,
// whose segment's bytes are buf.
func (s *scan) classify(seg, off int, index uint64, lastSeg bool, reason string, buf []byte) *cut {
	if !lastSeg {
		return s.newCut(seg, off, index, damage, reason, buf)
	}
	if cutShort(buf[off:]) {
		return s.newCut(seg, off, index, tornShort, reason, buf)
	}
	after := validBatchesAfter(buf, off+1)
	class := tornEnd
	switch {
	case after.n > 0 && (after.unknown || after.durable >= index):
		class = damage
	case after.n > 0:
		class = unsynced
	}
	c := s.newCut(seg, off, index, class, reason, buf)
	c.after = after.n
	c.syncedAfter = after.n > 0 && (after.unknown || after.durable >= index)
	return c
}

// newCut describes a cut at (seg, off): what it would remove, counting the
// rest of that segment (whose bytes are in buf) and every later segment.
func (s *scan) newCut(seg, off int, index uint64, class damageClass, reason string, buf []byte) *cut {
	c := &cut{seg: seg, path: s.segs[seg].path, off: int64(off), index: index, class: class, reason: reason}
	c.count(buf[off:])
	for _, sg := range s.segs[seg+1:] {
		data, err := os.ReadFile(sg.path)
		if err != nil {
			continue // counting is best effort; the cut removes the file anyway
		}
		c.count(data)
	}
	return c
}

// count adds data's bytes, and the batches and records that its readable
// headers announce, to the cut.
func (c *cut) count(data []byte) {
	c.bytes += int64(len(data))
	for len(data) > 0 {
		e, n, ok := nextEntry(data)
		if !ok {
			// A batch cut short: its header may still be whole.
			if size, k := uvarint(data); k > 0 && size >= batchHeaderV1 && len(data)-k >= batchHeaderV1 {
				if h, err := decodeBatchHeader(data[k:]); err == nil || errors.Is(err, ErrVersion) {
					c.batches++
					c.records += int(h.count)
				}
			}
			return
		}
		if h, err := parseBatchHeader(e); err == nil {
			c.batches++
			c.records += int(h.count)
		}
		data = data[n:]
	}
}

// cutShort reports whether data starts with a batch whose length prefix
// runs past the end of data and agrees with its checksummed header (the
// stored length of a version 2 batch, compressed or not; the raw length of
// an uncompressed version 1 batch): the length is genuine, so the write
// was cut short, and whatever follows up to the end is that batch's own
// bytes (its payload may even hold a copy of a log entry), not a later
// batch.
func cutShort(data []byte) bool {
	size, k := uvarint(data)
	if k <= 0 || size <= uint64(len(data)-k) || len(data)-k < batchHeaderV1 {
		return false
	}
	h, err := decodeBatchHeader(data[k:])
	if err != nil {
		return false
	}
	n, ok := h.entryLen()
	return ok && n == size
}

// afterDamage is what validBatchesAfter found.
type afterDamage struct {
	n       int    // valid batches
	durable uint64 // the highest durable index they claim
	unknown bool   // one of them makes no claim (version 1) or is newer than this build
}

// validBatchesAfter finds the valid batches from offset `from` on: any
// offset may start one (the bytes before are damaged, so entry boundaries
// are lost). Garbage is rejected by the length (it must fit) and the
// 18-byte header checksum, so the scan is fast even over megabytes. After a
// valid batch the scan goes on from its end: the entries after it are
// framed normally, and its own body (a payload may hold entry-shaped
// bytes) is not searched.
func validBatchesAfter(data []byte, from int) afterDamage {
	var a afterDamage
	for q := from; q < len(data); {
		e, n, ok := nextEntry(data[q:])
		if !ok || len(e) < batchHeaderV1 {
			q++
			continue
		}
		h, err := checkBatch(e)
		switch {
		case errors.Is(err, ErrVersion):
			a.n++
			a.unknown = true
		case err == nil:
			a.n++
			if h.claims() {
				a.durable = max(a.durable, h.durable)
			} else {
				a.unknown = true
			}
		default:
			q++
			continue
		}
		q += n
	}
	return a
}

// Keeping what a repair cuts: before a cut removes anything, the bytes go
// to .broken files in the log directory (etcd's WAL repair keeps
// <file>.broken the same way), so that an operator can still look at, or
// salvage, what a crash or a bad disk left. The tail of the segment where
// the cut starts is copied; every later segment, which the cut removes
// whole, is renamed. Names carry the segment, the time and if needed a
// counter (brokenName), so no repair overwrites an older copy, and
// tidwall/wal and this package ignore them (they are not segment names).

// keepCut saves what c removes from segs as .broken files and makes them
// durable. It returns their paths in log order; on error, the paths of the
// copies completed so far.
func keepCut(segs []segment, c *cut, now time.Time) ([]string, error) {
	var kept []string
	src := segs[c.seg].path
	data, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > c.off {
		p, err := writeBroken(src, data[c.off:], now)
		if err != nil {
			return nil, err
		}
		kept = append(kept, p)
	}
	// Later segments go last first, as cutFiles removes them: a failure
	// half way leaves the log a prefix of itself, never with a gap.
	later := make([]string, len(segs)-c.seg-1)
	for i := len(segs) - 1; i > c.seg; i-- {
		p, err := freeBrokenPath(segs[i].path, now)
		if err == nil {
			err = renameFile(segs[i].path, p)
		}
		if err != nil {
			for _, p := range later {
				if p != "" {
					kept = append(kept, p)
				}
			}
			return kept, err
		}
		later[i-c.seg-1] = p
	}
	kept = append(kept, later...)
	if len(kept) == 0 {
		return nil, nil
	}
	return kept, syncDir(filepath.Dir(src))
}

// writeBroken writes data to a new .broken file for segment file seg and
// fsyncs it. O_EXCL: an existing copy is never overwritten. The copy gets
// seg's mode (Open set it), never more than group-readable: whoever may
// read the segment may read what was cut from it.
func writeBroken(seg string, data []byte, now time.Time) (string, error) {
	perm := defaultPerms.file
	if fi, err := os.Stat(seg); err == nil {
		perm = fi.Mode().Perm() & 0o640
	}
	for n := 0; ; n++ {
		p := filepath.Join(filepath.Dir(seg), brokenName(filepath.Base(seg), now, n))
		f, err := createFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err == nil {
			trace(ioEvent{op: opWrite, path: p, data: append([]byte(nil), data...)})
			err = syncFile(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(p)
			return "", err
		}
		return p, nil
	}
}

// freeBrokenPath returns an unused .broken path for segment file seg. The
// caller holds the directory lock, so nobody else creates one meanwhile.
func freeBrokenPath(seg string, now time.Time) (string, error) {
	for n := 0; ; n++ {
		p := filepath.Join(filepath.Dir(seg), brokenName(filepath.Base(seg), now, n))
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p, nil
		} else if err != nil {
			return "", err
		}
	}
}

// applyCut keeps what the cut removes (keepCut), then truncates the cut's
// segment at its offset and removes every later segment, and makes that
// durable. What remains is a valid log whose last index is c.index-1. If
// the bytes cannot be kept, nothing is cut.
func applyCut(segs []segment, c *cut) (kept []string, err error) {
	kept, err = keepCut(segs, c, time.Now())
	if err != nil {
		return kept, fmt.Errorf("keeping a copy of the bytes to cut: %w", err)
	}
	return kept, cutFiles(segs, c)
}

// cutFiles truncates the cut's segment and removes every later segment (or
// what is left of them: keepCut renamed them away).
func cutFiles(segs []segment, c *cut) error {
	for i := len(segs) - 1; i > c.seg; i-- {
		if _, err := removeFile(segs[i].path); err != nil {
			return err
		}
	}
	if err := truncateFile(segs[c.seg].path, c.off); err != nil {
		return err
	}
	return syncDir(filepath.Dir(segs[c.seg].path))
}

// cutAfter removes every entry after index last from the log in logDir. The
// writer uses it after a failed write, when the file may hold part (or all)
// of a batch it has reported as failed.
//
// Unlike Open's repair it cuts even if keeping a copy fails: the bytes are
// a batch no producer was told was written, and the failure is often a
// full disk, where no copy can be written and refusing to cut would leave
// the log unusable for good. It returns the copies made, and keepErr for
// the writer to log.
func cutAfter(logDir string, last uint64) (kept []string, keepErr, err error) {
	segs, _, err := logView(logDir)
	if err != nil {
		return nil, nil, err
	}
	// The segment that holds (or would hold) index last+1.
	k := -1
	for i, s := range segs {
		if s.index <= last+1 {
			k = i
		}
	}
	if k == -1 {
		return nil, nil, fmt.Errorf("no segment holds index %d: %w", last+1, ErrCorrupt)
	}
	data, err := os.ReadFile(segs[k].path)
	if err != nil {
		return nil, nil, err
	}
	off := 0
	for idx := segs[k].index; idx <= last; idx++ {
		_, n, ok := nextEntry(data[off:])
		if !ok {
			return nil, nil, fmt.Errorf("%s ends before index %d, which was written: %w", segs[k].path, last, ErrCorrupt)
		}
		off += n
	}
	c := &cut{seg: k, off: int64(off)}
	kept, keepErr = keepCut(segs, c, time.Now())
	return kept, keepErr, cutFiles(segs, c)
}
