package wal

import (
	"fmt"
	"math"
)

// Kind says which engine mutation a Record is.
type Kind uint8

// The record kinds. Their numbers are part of the on-disk format: never
// renumber, only add.
const (
	KindEnqueue    Kind = iota + 1 // a message entered (in snapshots: every live message)
	KindLease                      // ID leased: Attempt (absolute, incl. this one), Until = lease expiry
	KindExtend                     // ID's lease now ends at Until
	KindAck                        // ID done, forget it
	KindNack                       // ID failed an attempt: Attempt, Category, Text, Time; Until = next due time
	KindDeadLetter                 // ID dead-lettered: Category, Text, Time, Attempt
	KindRedrive                    // ID back to pending, attempts reset (Attempt = 0), Time; in a snapshot, a marker before a live message whose enqueue record is not its first (its DedupID window comes from the dedup records)
	KindReview                     // ID reviewed: Text = note, Time
	KindPurge                      // ID purged from the DLQ (forget it)
	KindRequeue                    // ID pending now (from leased, held or delayed), Time; in a snapshot, since when a pending message is ready
	KindFailure                    // one entry of ID's failure history: Category, Text, Time (snapshots; and a nack's failure logged before the TTL verdict that dead-letters it); Attempt, if set, the attempt it ended (the log's) or the attempts the history accounts for (a snapshot's last entry)
	KindDedup                      // snapshot only: DedupID -> ID seen at Time
	// KindCheckpoint is a snapshot's marker record: ID = the next ID the
	// engine will assign, Time = when the snapshot was taken, and the slab
	// size (SlabBits: log2 of the engine's record-slab slot count, so a
	// restart sizes the slab to hold every live record). The slab size is
	// stored in the Attempt field, which checkpoints do not otherwise use;
	// build and read it with CheckpointRecord and Record.SlabBits rather
	// than through Attempt.
	KindCheckpoint
	KindPause  // delivery of Key's messages paused until Until (0: until resumed); Key "" = all delivery; Time
	KindResume // Key's pause (Key "" = the pause of all delivery) ended, Time
	KindCancel // ID cancelled: removed for good (forget it), Time

	// Named queues (issue #26). A log holding any of these, or a record
	// with Queue or Copies, needs format version 2 (Log.RequireFormat).
	KindQueue       // queue declared or updated (the last one per number wins): Queue = its number (absent for the default queue), Key = its name, Time, Text = its options as JSON
	KindQueuePause  // Queue's delivery paused until Until (0: until resumed), Key = its name, Time
	KindQueueResume // Queue's pause ended: Queue, Key = its name, Time
	KindQueueDelete // Queue deleted, its number retired: Queue, Key = its name, Time
	KindPublish     // one message into several queues: its fields as KindEnqueue's, once; ID = the first copy's ID; Copies = every copy's queue and ID

	// Schedules (issue #27; format version 2, as the queue kinds).
	KindSchedule       // schedule added or changed (the last one per name wins): Key = its name, Time, Text = it and its state as JSON
	KindScheduleRemove // schedule Key removed, Time
	KindScheduleTick   // a schedule's tick handled: Text = the schedule's name, Until = the tick (0: a run TriggerSchedule asked for); ID = the run's message, with its fields and Queue as KindEnqueue's, or 0 when Attempt ticks were skipped

	kindMax = KindScheduleTick
)

var kindNames = [...]string{
	KindEnqueue: "enqueue", KindLease: "lease", KindExtend: "extend", KindAck: "ack",
	KindNack: "nack", KindDeadLetter: "deadletter", KindRedrive: "redrive",
	KindReview: "review", KindPurge: "purge", KindRequeue: "requeue",
	KindFailure: "failure", KindDedup: "dedup", KindCheckpoint: "checkpoint",
	KindPause: "pause", KindResume: "resume", KindCancel: "cancel",
	KindQueue: "queue", KindQueuePause: "queuepause", KindQueueResume: "queueresume",
	KindQueueDelete: "queuedelete", KindPublish: "publish",
	KindSchedule: "schedule", KindScheduleRemove: "scheduleremove", KindScheduleTick: "scheduletick",
}

// String returns the kind's lower-case name.
func (k Kind) String() string {
	if k >= KindEnqueue && k <= kindMax {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Valid reports whether k is a kind this version knows.
func (k Kind) Valid() bool { return k >= KindEnqueue && k <= kindMax }

// Record is one engine mutation. Fields a Kind does not use are zero; zero
// fields are not encoded, so any combination round-trips exactly.
type Record struct {
	Kind Kind
	ID   uint64
	Time int64 // unix nanoseconds when it happened

	// KindEnqueue:
	Priority    int8     // -2..2
	Key         string   // downstream target
	DedupID     string   // caller-supplied dedup ID
	Headers     []string // flattened key, value pairs (len even)
	Payload     []byte   // message body
	NotBefore   int64    // unix ns; 0 = none (delay)
	Deadline    int64    // unix ns; 0 = none
	ExpiresAt   int64    // unix ns; 0 = none (TTL)
	MaxAttempts int32

	// Several kinds:
	Attempt  int32  // absolute attempts counted so far
	Until    int64  // Lease/Extend: lease expiry; Nack: next due time; snapshot Enqueue: due time of a delayed message
	Category uint8  // classify.Category
	Text     string // Nack/DeadLetter/Failure: error text; Review: note
	Crashes  int32  // Requeue and snapshot Enqueue: consecutive crashes the message was leased at

	// Named queues (format version 2):
	Queue  uint32 // Enqueue and the queue kinds: the queue's number, 0 = the default queue; at most MaxQueue
	Copies []Copy // Publish: each copy's queue and ID, in order of ID (none below the one before it)

	// Uniqueness (format version 2 as well):
	Unique uint8 // Enqueue and Publish: the message's uniqueness mode (the engine's Unique), 0 = by window
}

// CheckpointRecord returns the KindCheckpoint record that opens a snapshot:
// nextID is the next ID the engine will assign, at the snapshot's time (unix
// nanoseconds), slabBits the log2 of the record slab's slot count (0 =
// unknown; the engine then sizes the slab from its options).
//
// slabBits is encoded in the Attempt field (the on-disk form predates this
// constructor and is unchanged); it must be at most 64, the log2 of the
// largest slot count a uint64 can hold, and a larger value panics as a
// programming error.
func CheckpointRecord(nextID uint64, at int64, slabBits uint) Record {
	if slabBits > 64 {
		panic(fmt.Sprintf("ringwal/wal: CheckpointRecord slabBits %d above 64", slabBits))
	}
	return Record{Kind: KindCheckpoint, ID: nextID, Time: at, Attempt: int32(slabBits)}
}

// SlabBits returns a KindCheckpoint record's slab size (log2 of the slot
// count; see CheckpointRecord), and 0 for every other kind or for a
// checkpoint that carries none. A damaged negative value also reads as 0;
// the caller still bounds the result by what it can allocate.
func (r *Record) SlabBits() uint {
	if r.Kind != KindCheckpoint || r.Attempt < 0 {
		return 0
	}
	return uint(r.Attempt)
}

// Field presence bits, in encoding order. Part of the on-disk format.
const (
	fID uint32 = 1 << iota
	fTime
	fPriority
	fKey
	fDedupID
	fHeaders
	fPayload
	fNotBefore
	fDeadline
	fExpiresAt
	fMaxAttempts
	fAttempt
	fUntil
	fCategory
	fText
	fCrashes
	fQueue  // format version 2
	fCopies // format version 2
	fUnique // format version 2

	fAll = fUnique<<1 - 1
)

// maxRecordBody bounds one record's encoded size; anything larger in a log
// is damage, not data (the engine caps payloads far below this).
const maxRecordBody = 1 << 30

// AppendRecord appends r's encoding to dst and returns the extended slice.
// It does not allocate when dst has room. The encoding is a uvarint body
// length, then the kind, a uvarint field-presence mask and the present
// fields: integers as (u)varints, the optional times as varint deltas from
// Time (so they stay short), strings and bytes as uvarint length + bytes.
//
// r.Kind should be valid (Kind.Valid); DecodeRecord rejects unknown kinds.
// Safe for concurrent use with distinct dst.
func AppendRecord(dst []byte, r *Record) []byte {
	mask, size := recordShape(r)
	dst = appendUvarint(dst, uint64(size))
	dst = append(dst, byte(r.Kind))
	dst = appendUvarint(dst, uint64(mask))
	if mask&fID != 0 {
		dst = appendUvarint(dst, r.ID)
	}
	if mask&fTime != 0 {
		dst = appendVarint(dst, r.Time)
	}
	if mask&fPriority != 0 {
		dst = append(dst, byte(r.Priority))
	}
	if mask&fKey != 0 {
		dst = appendString(dst, r.Key)
	}
	if mask&fDedupID != 0 {
		dst = appendString(dst, r.DedupID)
	}
	if mask&fHeaders != 0 {
		dst = appendUvarint(dst, uint64(len(r.Headers)))
		for _, h := range r.Headers {
			dst = appendString(dst, h)
		}
	}
	if mask&fPayload != 0 {
		dst = appendUvarint(dst, uint64(len(r.Payload)))
		dst = append(dst, r.Payload...)
	}
	if mask&fNotBefore != 0 {
		dst = appendVarint(dst, r.NotBefore-r.Time)
	}
	if mask&fDeadline != 0 {
		dst = appendVarint(dst, r.Deadline-r.Time)
	}
	if mask&fExpiresAt != 0 {
		dst = appendVarint(dst, r.ExpiresAt-r.Time)
	}
	if mask&fMaxAttempts != 0 {
		dst = appendVarint(dst, int64(r.MaxAttempts))
	}
	if mask&fAttempt != 0 {
		dst = appendVarint(dst, int64(r.Attempt))
	}
	if mask&fUntil != 0 {
		dst = appendVarint(dst, r.Until-r.Time)
	}
	if mask&fCategory != 0 {
		dst = append(dst, r.Category)
	}
	if mask&fText != 0 {
		dst = appendString(dst, r.Text)
	}
	if mask&fCrashes != 0 {
		dst = appendVarint(dst, int64(r.Crashes))
	}
	if mask&(fQueue|fCopies) != 0 {
		dst = appendQueueFields(dst, r, mask)
	}
	if mask&fUnique != 0 {
		dst = append(dst, r.Unique)
	}
	return dst
}

// recordShape returns the presence mask and the body size of r, so the
// length prefix can be written first without encoding twice.
func recordShape(r *Record) (mask uint32, size int) {
	size = 1 // kind
	if r.ID != 0 {
		mask |= fID
		size += uvarintLen(r.ID)
	}
	if r.Time != 0 {
		mask |= fTime
		size += varintLen(r.Time)
	}
	if r.Priority != 0 {
		mask |= fPriority
		size++
	}
	if r.Key != "" {
		mask |= fKey
		size += uvarintLen(uint64(len(r.Key))) + len(r.Key)
	}
	if r.DedupID != "" {
		mask |= fDedupID
		size += uvarintLen(uint64(len(r.DedupID))) + len(r.DedupID)
	}
	if len(r.Headers) != 0 {
		mask |= fHeaders
		size += uvarintLen(uint64(len(r.Headers)))
		for _, h := range r.Headers {
			size += uvarintLen(uint64(len(h))) + len(h)
		}
	}
	if len(r.Payload) != 0 {
		mask |= fPayload
		size += uvarintLen(uint64(len(r.Payload))) + len(r.Payload)
	}
	if r.NotBefore != 0 {
		mask |= fNotBefore
		size += varintLen(r.NotBefore - r.Time)
	}
	if r.Deadline != 0 {
		mask |= fDeadline
		size += varintLen(r.Deadline - r.Time)
	}
	if r.ExpiresAt != 0 {
		mask |= fExpiresAt
		size += varintLen(r.ExpiresAt - r.Time)
	}
	if r.MaxAttempts != 0 {
		mask |= fMaxAttempts
		size += varintLen(int64(r.MaxAttempts))
	}
	if r.Attempt != 0 {
		mask |= fAttempt
		size += varintLen(int64(r.Attempt))
	}
	if r.Until != 0 {
		mask |= fUntil
		size += varintLen(r.Until - r.Time)
	}
	if r.Category != 0 {
		mask |= fCategory
		size++
	}
	if r.Text != "" {
		mask |= fText
		size += uvarintLen(uint64(len(r.Text))) + len(r.Text)
	}
	if r.Crashes != 0 {
		mask |= fCrashes
		size += varintLen(int64(r.Crashes))
	}
	if r.Queue != 0 || len(r.Copies) != 0 {
		m, n := queueShape(r)
		mask |= m
		size += n
	}
	if r.Unique != 0 {
		mask |= fUnique
		size++
	}
	size += uvarintLen(uint64(mask))
	return mask, size
}

// DecodeRecord decodes one record from the front of b into r and returns
// the number of bytes consumed. Every length is checked against b; on any
// inconsistency it returns an error wrapping ErrCorrupt and never panics.
//
// All of r's fields are overwritten. Strings are copied (a string equal to
// the one already in r is kept, which saves an allocation per record when
// replaying many records of one key). r.Payload aliases b and r.Headers
// reuses r's previous Headers storage: both are valid only until the next
// call that reuses r or b; copy them to keep them. r.Copies, like
// r.Headers, reuses r's previous Copies storage.
func DecodeRecord(b []byte, r *Record) (n int, err error) {
	size, k := uvarint(b)
	if k <= 0 {
		return 0, corruptf("record length: truncated or overlong varint")
	}
	if size > uint64(len(b)-k) || size > maxRecordBody {
		return 0, corruptf("record length %d exceeds the %d bytes left", size, len(b)-k)
	}
	end := k + int(size)
	if err := decodeRecordBody(b[k:end], r); err != nil {
		return 0, err
	}
	return end, nil
}

// decodeRecordBody decodes a record body (without its length prefix); the
// body must be consumed exactly.
//
// Fields are decoded into locals and then stored one by one, a string or
// slice field only when it changes, rather than r being cleared first:
// replay decodes a million records into reused Records while the GC is
// often marking (the heap grows as it replays), and every pointer store
// then goes through the write barrier; clearing the whole Record stored
// five pointer fields a record where a typical one changes only Payload.
func decodeRecordBody(b []byte, r *Record) error {
	d := decoder{b: b}
	kind := Kind(d.byte())
	if d.err == nil && !kind.Valid() {
		return corruptf("unknown record kind %d", uint8(kind))
	}
	m := d.uvarint()
	if d.err == nil && m&^uint64(fAll) != 0 {
		return corruptf("unknown field bits %#x in a %s record", m&^uint64(fAll), kind)
	}
	mask := uint32(m)
	var (
		id                                 uint64
		at, notBefore, deadline, expiresAt int64
		until                              int64
		priority                           int8
		category                           uint8
		maxAttempts, attempt, crashes      int32
		queue                              uint32
		unique                             uint8
		key, dedupID, text                 string
		headers                            []string
		payload                            []byte
		copies                             []Copy
	)
	if mask&fID != 0 {
		id = d.uvarint()
	}
	if mask&fTime != 0 {
		at = d.varint()
	}
	if mask&fPriority != 0 {
		priority = int8(d.byte())
	}
	if mask&fKey != 0 {
		key = d.str(r.Key)
	}
	if mask&fDedupID != 0 {
		dedupID = d.str(r.DedupID)
	}
	if mask&fHeaders != 0 {
		n := d.uvarint()
		// Each header takes at least one byte, so a count beyond the bytes
		// left is damage; checking first keeps a bogus count from
		// allocating.
		if d.err == nil && n > uint64(len(d.b)-d.i) {
			return corruptf("header count %d exceeds the %d bytes left", n, len(d.b)-d.i)
		}
		hdrs := r.Headers[:0]
		for i := uint64(0); i < n && d.err == nil; i++ {
			var old string
			if int(i) < cap(hdrs) {
				old = hdrs[:i+1][i]
			}
			hdrs = append(hdrs, d.str(old))
		}
		headers = hdrs
	}
	if mask&fPayload != 0 {
		payload = d.bytes()
	}
	if mask&fNotBefore != 0 {
		notBefore = d.varint() + at
	}
	if mask&fDeadline != 0 {
		deadline = d.varint() + at
	}
	if mask&fExpiresAt != 0 {
		expiresAt = d.varint() + at
	}
	if mask&fMaxAttempts != 0 {
		maxAttempts = d.int32()
	}
	if mask&fAttempt != 0 {
		attempt = d.int32()
	}
	if mask&fUntil != 0 {
		until = d.varint() + at
	}
	if mask&fCategory != 0 {
		category = d.byte()
	}
	if mask&fText != 0 {
		text = d.str(r.Text)
	}
	if mask&fCrashes != 0 {
		crashes = d.int32()
	}
	if mask&fQueue != 0 {
		queue = d.queue()
	}
	if mask&fCopies != 0 {
		copies = d.copies(r.Copies, id)
	}
	if mask&fUnique != 0 {
		unique = d.byte()
	}
	r.Kind, r.ID, r.Time, r.Priority = kind, id, at, priority
	r.NotBefore, r.Deadline, r.ExpiresAt, r.Until = notBefore, deadline, expiresAt, until
	r.MaxAttempts, r.Attempt, r.Category, r.Crashes = maxAttempts, attempt, category, crashes
	r.Queue, r.Unique = queue, unique
	setString(&r.Key, key)
	setString(&r.DedupID, dedupID)
	setString(&r.Text, text)
	if headers != nil || r.Headers != nil {
		r.Headers = headers
	}
	if payload != nil || r.Payload != nil {
		r.Payload = payload
	}
	if copies != nil || r.Copies != nil {
		r.Copies = copies
	}
	if d.err != nil {
		return fmt.Errorf("%s record: %w", kind, d.err)
	}
	if d.i != len(d.b) {
		return corruptf("%s record: %d trailing bytes", kind, len(d.b)-d.i)
	}
	return nil
}

// setString stores v in *p unless *p holds those bytes already (the same
// string, usually, which str kept): no write, no write barrier.
func setString(p *string, v string) {
	if *p != v {
		*p = v
	}
}

// decoder reads fields from a record body; the first failure sticks in err
// and every later read returns zero, so decodeRecordBody checks once.
type decoder struct {
	b   []byte
	i   int
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = corruptf("%s at byte %d of %d", what, d.i, len(d.b))
	}
	// Every later read finds nothing left and returns zero (the fast
	// paths below need not check err).
	d.i = len(d.b)
}

// The reads need not check err: a failure leaves nothing to read, and a
// read of nothing fails (again: the first failure is the one kept).
func (d *decoder) byte() byte {
	if i := d.i; i < len(d.b) {
		d.i = i + 1
		return d.b[i]
	}
	d.fail("truncated byte")
	return 0
}

func (d *decoder) uvarint() uint64 {
	// Most fields are one-byte values: no call for those.
	if i := d.i; i < len(d.b) && d.b[i] < 0x80 {
		d.i = i + 1
		return uint64(d.b[i])
	}
	v, n := uvarint(d.b[d.i:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.i += n
	return v
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("int32 out of range")
		return 0
	}
	return int32(v)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.i) {
		d.fail(fmt.Sprintf("length %d exceeds the bytes left", n))
		return nil
	}
	s := d.b[d.i : d.i+int(n) : d.i+int(n)]
	d.i += int(n)
	return s
}

// str copies the next string, or returns old when the bytes are equal (the
// comparison does not allocate).
func (d *decoder) str(old string) string {
	b := d.bytes()
	if string(b) == old {
		return old
	}
	return string(b)
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrCorrupt)
}
