package ringwal

import (
	"fmt"
	"math"

	"github.com/ringwal/ringwal/internal/wal"
)

// Replay trusts no value of a well-formed log: a hostile backup has
// honest framing and hashes. A value no engine writes would panic Open or
// build an engine that contradicts itself. A priority of 3 indexes past
// the tiers; a negative count wraps to a huge one; a category past the
// last is dropped by the dead-letter store. A failure's category past the
// last is not refused, though, but read as Unknown, as the engine counts
// it. A custom Classifier may return one, which engines logged as is (see
// recordCategory). The function checkRecord is the one place that knows
// what an engine writes. Replay (apply), Restore and VerifyBackup
// (copyRecords, backup_restore.go) refuse a record it refuses. They
// return an error wrapping wal.ErrCorrupt that names the record, as for a
// torn one.
// It checks each record alone; what needs the records before it (a
// message of a queue the log never declared, a queue's options) is
// apply's.

// maxRecordID is the largest message ID a record may name: IDs are
// claimed one by one from 1, so no engine reaches it, and the ID after it
// still fits (a checkpoint's next ID; nextID never wraps to 0, which names
// no message).
const maxRecordID = 1<<63 - 1

// maxDedupLen bounds a record's DedupID: a message's (maxKeyLen), or a
// published copy's, which is the Publish's plus "/" and its queue's name.
const maxDedupLen = maxKeyLen + 1 + maxQueueName

// maxSlabBitsRecord is the largest slab size a checkpoint record can say
// (wal.CheckpointRecord); replay sizes the slab to at most maxSlabBits.
const maxSlabBitsRecord = 64

// namesMessage says whether a record of kind k names a message by its ID.
func namesMessage(r *wal.Record) bool {
	switch r.Kind {
	case wal.KindCheckpoint, wal.KindPause, wal.KindResume,
		wal.KindQueue, wal.KindQueuePause, wal.KindQueueResume, wal.KindQueueDelete,
		wal.KindSchedule, wal.KindScheduleRemove:
		return false
	case wal.KindScheduleTick:
		return r.ID != 0 // 0: ticks skipped, no run
	}
	return true
}

// checkRecord returns an error wrapping wal.ErrCorrupt if r holds a value
// no engine writes, nil otherwise. It allocates nothing for a good record.
func checkRecord(r *wal.Record) error {
	if namesMessage(r) && (r.ID == 0 || r.ID > maxRecordID) && r.Kind != wal.KindDedup {
		return badRecord(r, "ID %d outside [1, %d]", r.ID, uint64(maxRecordID))
	}
	switch r.Kind {
	case wal.KindSchedule:
		_, _, err := decodeScheduleRecord(r)
		return err
	case wal.KindEnqueue, wal.KindPublish, wal.KindScheduleTick:
		if r.Kind == wal.KindScheduleTick && r.ID == 0 && r.Attempt < 0 { // Attempt: the ticks skipped
			return fmt.Errorf("%w: schedule record %q: a tick record of %d skipped ticks", wal.ErrCorrupt, r.Text, r.Attempt)
		}
		if r.ID != 0 {
			if err := checkMessageFields(r); err != nil {
				return err
			}
		}
		if r.Kind == wal.KindPublish {
			return checkCopies(r)
		}
	case wal.KindLease, wal.KindNack, wal.KindFailure:
		return checkAttempts(r)
	case wal.KindRequeue:
		if err := checkAttempts(r); err != nil {
			return err
		}
		return checkCrashes(r)
	case wal.KindDeadLetter:
		if err := checkAttempts(r); err != nil {
			return err
		}
		if len(r.DedupID) > maxDedupLen {
			return badRecord(r, "DedupID of %d bytes (at most %d)", len(r.DedupID), maxDedupLen)
		}
	case wal.KindDedup:
		switch {
		case r.ID > maxRecordID:
			return badRecord(r, "ID %d above %d", r.ID, uint64(maxRecordID))
		case r.DedupID == "":
			return badRecord(r, "no DedupID")
		case len(r.DedupID) > maxDedupLen:
			return badRecord(r, "DedupID of %d bytes (at most %d)", len(r.DedupID), maxDedupLen)
		}
	case wal.KindCheckpoint:
		switch {
		case r.ID > maxRecordID+1:
			return badRecord(r, "next ID %d above %d", r.ID, uint64(maxRecordID+1))
		case r.Attempt < 0 || r.Attempt > maxSlabBitsRecord:
			return badRecord(r, "slab size 2^%d", r.Attempt)
		}
	case wal.KindQueue:
		// A declaration is checked as DeclareQueue checks one.
		if _, _, _, err := decodeQueueRecord(r); err != nil {
			return err
		}
	case wal.KindPause, wal.KindResume:
		if len(r.Key) > maxKeyLen {
			return badRecord(r, "key of %d bytes (at most %d)", len(r.Key), maxKeyLen)
		}
	}
	return nil
}

// checkMessageFields checks the message an enqueue, publish or schedule
// run record carries. Its times may be anything int64 holds: Unix
// nanoseconds span 1677 to 2262, and the API takes any instant there.
// But the delay and TTL, which replay reads as durations from Time, must
// be ones the API takes: not negative, and not past the last instant.
func checkMessageFields(r *wal.Record) error {
	switch {
	case r.Priority < int8(Background) || r.Priority > int8(Critical):
		return badRecord(r, "priority %d outside [%d, %d]", r.Priority, Background, Critical)
	case len(r.Key) > maxKeyLen:
		return badRecord(r, "key of %d bytes (at most %d)", len(r.Key), maxKeyLen)
	case len(r.DedupID) > maxDedupLen:
		return badRecord(r, "DedupID of %d bytes (at most %d)", len(r.DedupID), maxDedupLen)
	case len(r.Headers)%2 != 0:
		return badRecord(r, "%d header strings, not name and value pairs", len(r.Headers))
	case !durationFrom(r.Time, r.NotBefore):
		return badRecord(r, "due time %d is no delay from its time %d", r.NotBefore, r.Time)
	case !durationFrom(r.Time, r.ExpiresAt):
		return badRecord(r, "expiry %d is no TTL from its time %d", r.ExpiresAt, r.Time)
	}
	if err := checkAttempts(r); err != nil {
		return err
	}
	return checkCrashes(r)
}

// durationFrom says whether at (0: none) is a time.Duration, not
// negative, from t.
func durationFrom(t, at int64) bool {
	return at == 0 || at >= t && at-t >= 0
}

// checkCopies checks a publish record's copies: the first is the
// record's own message, and each copy's ID is above the one before it
// (each copy claimed an ID of its own).
func checkCopies(r *wal.Record) error {
	if len(r.Copies) == 0 {
		return badRecord(r, "no copies")
	}
	prev := r.ID - 1
	for i, c := range r.Copies {
		switch {
		case c.ID > maxRecordID:
			return badRecord(r, "copy %d: ID %d above %d", i, c.ID, uint64(maxRecordID))
		case i == 0 && c.ID != r.ID:
			return badRecord(r, "copy 0: ID %d, not the record's", c.ID)
		case c.ID <= prev:
			return badRecord(r, "copy %d: ID %d not above the one before it (%d)", i, c.ID, prev)
		}
		prev = c.ID
	}
	return nil
}

func checkAttempts(r *wal.Record) error {
	if r.Attempt < 0 {
		return badRecord(r, "attempts %d", r.Attempt)
	}
	return nil
}

// checkCrashes refuses a crash count restore could not add one to.
func checkCrashes(r *wal.Record) error {
	if r.Crashes < 0 || r.Crashes == math.MaxInt32 {
		return badRecord(r, "crashes %d outside [0, %d)", r.Crashes, math.MaxInt32)
	}
	return nil
}

// badRecord is checkRecord's error: the record (its kind, and its
// message's ID when it names one) and what is wrong with it.
func badRecord(r *wal.Record, format string, args ...any) error {
	what := fmt.Sprintf("%v record", r.Kind)
	if namesMessage(r) {
		what = fmt.Sprintf("%v record of message %d", r.Kind, r.ID)
	}
	return fmt.Errorf("%w: %s: %s", wal.ErrCorrupt, what, fmt.Sprintf(format, args...))
}
