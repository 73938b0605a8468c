package wal

import (
	"os"
	"path/filepath"
)

// VerifyReport is what Verify found.
type VerifyReport struct {
	Dir        string // the directory checked
	Segments   int    // segment files in the log
	FirstIndex uint64 // first batch index in the log (0 = no segments)
	LastIndex  uint64 // last valid batch index
	Batches    uint64 // valid batches
	Records    uint64 // records in them, every one decoded
	Bytes      int64  // bytes of valid batches, framing included
	// Snapshots describes every snapshot file, newest first.
	Snapshots []SnapshotReport
	// Snapshot is the file recovery would start from ("" = none).
	Snapshot string
	// Torn describes a torn tail (zero if none); Repaired says it was cut.
	Torn     RepairReport
	Repaired bool
}

// SnapshotReport describes one snapshot file.
type SnapshotReport struct {
	Path    string // snapshot file
	Index   uint64 // last log batch it covers
	Records uint64 // records decoded
	Bytes   int64  // file size
	Err     error  // nil if the file is valid
}

// Verify checks a log directory offline: every batch's framing, header,
// checksum and every record, and every snapshot (header, checksum and
// records). What Open's default recovery mode (PointInTime) would cut, a
// torn or unsynced tail, is reported in VerifyReport.Torn and cut only if
// repair is true. Other damage is an error (wrapping ErrCorrupt) that names
// the segment file and offset; so is a log that does not continue right
// after the newest usable snapshot.
//
// Without repair it takes no lock and changes nothing, so it can inspect a
// directory in use (a batch being written may then show as a torn tail).
// With repair it takes the directory lock (ErrLocked if the log is open)
// and also finishes an interrupted truncation.
func Verify(dir string, repair bool) (VerifyReport, error) {
	rep := VerifyReport{Dir: dir}
	if _, err := os.Stat(dir); err != nil {
		return rep, err
	}
	if _, err := readFormat(dir); err != nil {
		return rep, err
	}
	logDir := filepath.Join(dir, logDirName)
	if repair {
		lk, err := lockDir(dir, defaultPerms.file)
		if err != nil {
			return rep, err
		}
		defer lk.release()
		if _, err := os.Stat(logDir); err == nil {
			if err := normalizeLogDir(logDir); err != nil {
				return rep, err
			}
		}
	}
	segs, _, err := logView(logDir)
	if err != nil {
		return rep, err
	}
	rep.Segments = len(segs)
	var r Record
	var scratch []byte
	sc, err := scanLog(segs, func(_ uint64, e []byte, h batchHeader) error {
		var body []byte
		var err error
		if body, scratch, err = batchBody(e, h, scratch); err != nil {
			return err
		}
		return forEachRecord(body, h.count, 0, &r, nil)
	})
	if err != nil {
		return rep, err
	}
	rep.FirstIndex, rep.LastIndex = sc.first, sc.last
	rep.Batches, rep.Records, rep.Bytes = sc.batches, sc.records, sc.bytes
	if c := sc.cut; c != nil {
		if err := c.allows(PointInTime); err != nil {
			return rep, err
		}
		rep.Torn = c.report()
		if repair {
			kept, err := applyCut(segs, c)
			rep.Torn.BrokenFiles = kept
			if err != nil {
				return rep, err
			}
			rep.Repaired = true
		}
	}
	snaps, err := listSnapshots(dir)
	if err != nil {
		return rep, err
	}
	for _, sf := range snaps {
		sr := SnapshotReport{Path: sf.path, Index: sf.index}
		if fi, err := os.Stat(sf.path); err == nil {
			sr.Bytes = fi.Size()
		}
		if _, sr.Err = checkSnapshot(sf); sr.Err == nil {
			sr.Records, sr.Err = replaySnapshot(sf.path, nil, func(*Record) error { return nil })
		}
		rep.Snapshots = append(rep.Snapshots, sr)
	}
	snap, err := chooseSnapshot(dir, sc.first)
	if err != nil {
		return rep, err
	}
	if snap != nil {
		rep.Snapshot = snap.path
	}
	return rep, nil
}

// Dump calls fn for every record recovery would replay: the snapshot's
// records (with index = the snapshot's index), then the log's records after
// it (with their batch index). It stops at a torn or unsynced tail; other
// damage is an error. It takes no lock and changes nothing. fn's *Record is
// reused: its Payload and Headers are valid only during the call.
func Dump(dir string, fn func(index uint64, r *Record) error) error {
	if _, err := os.Stat(dir); err != nil {
		return err
	}
	if _, err := readFormat(dir); err != nil {
		return err
	}
	segs, _, err := logView(filepath.Join(dir, logDirName))
	if err != nil {
		return err
	}
	sc, err := scanLog(segs, nil)
	if err != nil {
		return err
	}
	if c := sc.cut; c != nil {
		if err := c.allows(PointInTime); err != nil {
			return err
		}
	}
	snap, err := chooseSnapshot(dir, sc.first)
	if err != nil {
		return err
	}
	var after uint64
	if snap != nil && snap.path != "" {
		after = snap.index
		if _, err := replaySnapshot(snap.path, nil, func(r *Record) error { return fn(after, r) }); err != nil {
			return err
		}
	}
	var cur uint64
	_, _, _, err = replayLog(segs, after, sc.last,
		func(index uint64) { cur = index }, nil,
		func(r *Record) error { return fn(cur, r) })
	return err
}
