package wal

import (
	"fmt"
	"math/bits"
)

// Named queues in the record format (issue #26; design note §2).
//
// A record says its queue by number (Record.Queue), encoded as a uvarint
// behind its own presence bit, and only when not 0: a record of the
// default queue encodes exactly as it did before queues existed
// (TestRecordEncodingBeforeQueuesIsUnchanged), so a log that never uses a
// named queue stays readable by older builds. A record that does use one
// (a Queue, Copies, or one of the queue kinds) needs format version 2:
// the engine calls Log.RequireFormat(2) before its first such record, and
// Append refuses one before that, so that an older build stops at the
// directory's FORMAT file with ErrVersion instead of meeting a record it
// cannot decode and cutting the log there as damage.

// MaxQueue is the largest queue number a record can carry; the decoder
// takes a larger one for damage (ErrCorrupt).
const MaxQueue = 1<<16 - 1

// Copy is one copy of a published message (KindPublish): the queue it went
// to and the ID it got there.
type Copy struct {
	Queue uint32 // at most MaxQueue
	ID    uint64
}

// lastV1Kind is the last kind format version 1 knows.
const lastV1Kind = KindCancel

// usesQueues reports whether r uses a named queue (a queue kind, a Queue
// or Copies) or a uniqueness mode (Unique, which came after queues and
// shares their version). A log holding such a record needs format
// version 2.
func usesQueues(r *Record) bool {
	return r.Kind > lastV1Kind || r.Queue != 0 || len(r.Copies) != 0 || r.Unique != 0
}

// formatOf returns the format version a log holding r needs.
func formatOf(r *Record) int {
	if usesQueues(r) {
		return 2
	}
	return 1
}

// checkQueues returns an error if r's queue fields could not be decoded
// back (a queue number above MaxQueue, or a copy whose ID is below the one
// before it, the first compared with r.ID): written, such a record would
// make the log unreadable from there on.
func checkQueues(r *Record) error {
	if r.Queue > MaxQueue {
		return fmt.Errorf("%s record: queue %d above %d", r.Kind, r.Queue, MaxQueue)
	}
	prev := r.ID
	for i, c := range r.Copies {
		if c.Queue > MaxQueue {
			return fmt.Errorf("%s record: copy %d: queue %d above %d", r.Kind, i, c.Queue, MaxQueue)
		}
		if c.ID < prev {
			return fmt.Errorf("%s record: copy %d: ID %d below the one before it (%d)", r.Kind, i, c.ID, prev)
		}
		prev = c.ID
	}
	return nil
}

// appendQueueFields appends the queue fields mask says r has (out of
// AppendRecord's line: most records have none): the queue number, a
// uvarint; then the copies, a uvarint count, then each copy's queue number
// and its ID's distance from the ID before it (the first copy's from the
// record's ID, which is the first copy's own: 0), both uvarints. IDs are
// claimed in order, so a copy's ID is never below the one before it
// (checkQueues).
func appendQueueFields(dst []byte, r *Record, mask uint32) []byte {
	if mask&fQueue != 0 {
		dst = appendUvarint(dst, uint64(r.Queue))
	}
	if mask&fCopies != 0 {
		dst = appendUvarint(dst, uint64(len(r.Copies)))
		id := r.ID
		for _, c := range r.Copies {
			dst = appendUvarint(dst, uint64(c.Queue))
			dst = appendUvarint(dst, c.ID-id)
			id = c.ID
		}
	}
	return dst
}

// queueShape returns the presence bits and the encoded size of r's queue
// fields (appendQueueFields).
func queueShape(r *Record) (mask uint32, size int) {
	if r.Queue != 0 {
		mask |= fQueue
		size += uvarintLen(uint64(r.Queue))
	}
	if len(r.Copies) != 0 {
		mask |= fCopies
		size += uvarintLen(uint64(len(r.Copies)))
		id := r.ID
		for _, c := range r.Copies {
			size += uvarintLen(uint64(c.Queue)) + uvarintLen(c.ID-id)
			id = c.ID
		}
	}
	return mask, size
}

// queue reads a queue number.
func (d *decoder) queue() uint32 {
	q := d.uvarint()
	if q > MaxQueue {
		d.fail(fmt.Sprintf("queue %d above %d", q, MaxQueue))
		return 0
	}
	return uint32(q)
}

// copies reads the Copies field of a record whose ID is id, into old's
// storage (as Headers reuses its own: replay decodes into one Record).
func (d *decoder) copies(old []Copy, id uint64) []Copy {
	n := d.uvarint()
	// Each copy takes at least two bytes, so a count beyond half the bytes
	// left is damage; checking first keeps a bogus count from allocating.
	if d.err == nil && n > uint64(len(d.b)-d.i)/2 {
		d.fail(fmt.Sprintf("copy count %d exceeds what the %d bytes left hold", n, len(d.b)-d.i))
		return nil
	}
	cs := old[:0]
	for i := uint64(0); i < n && d.err == nil; i++ {
		q, delta := d.uvarint(), d.uvarint()
		if d.err != nil {
			break
		}
		if q > MaxQueue {
			d.fail(fmt.Sprintf("copy %d: queue %d above %d", i, q, MaxQueue))
			break
		}
		next, carry := bits.Add64(id, delta, 0)
		if carry != 0 {
			d.fail(fmt.Sprintf("copy %d: ID %d + %d overflows", i, id, delta))
			break
		}
		cs = append(cs, Copy{Queue: uint32(q), ID: next})
		id = next
	}
	return cs
}
