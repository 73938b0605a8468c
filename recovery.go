package ringwal

import (
	"cmp"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/wal"
)

// recoveryReport is what Open found, for logs, Stats and metrics.
type recoveryReport struct {
	records   uint64
	bytes     int64
	tornBytes int64
	crashed   int // messages leased at a crash
	poisoned  int // of which dead-lettered for crash-looping
	duration  time.Duration
}

// recovered is a live message rebuilt from the log.
type recovered struct {
	id         uint64
	msg        Message
	enqueuedAt int64
	expiresAt  int64
	deadline   int64
	attempts   int32
	crashes    int32
	state      uint32 // stPending, stDelayed or stLeased
	nextAt     int64
	hist       *history
}

// replayState holds the messages being rebuilt: chunks in order of first
// appearance (no allocation per message, no copying as they grow) and an
// index by ID.
type replayState struct {
	chunks [][]recovered
	n      int32 // entries used across chunks
	// IDs are mostly consecutive in a log, so most are indexed densely
	// (dense[id-base] = entry+1); the map takes the stragglers.
	base     uint64
	dense    []int32
	index    map[uint64]int32
	count    int // live entries in msgs
	slabBits uint
	maxID    uint64
	arena    payloadArena
	// late holds what an operator did to a dead letter whose dead-letter
	// record is further on in the log: the engine makes a dead letter
	// visible before it logs it, so a Review, Purge or Redrive of it can
	// reach the log first.
	late map[uint64]lateDead
	// redriven is the ID of the last Redrive record: the enqueue record
	// logged with it re-creates the message but is not a first enqueue,
	// so it leaves the DedupID's window where it was.
	redriven uint64
}

// lateDead is what the log said of a dead letter before the record that
// made it one.
type lateDead struct {
	redriven   bool // its dead-letter record is stale: the message lives on
	reviewed   bool
	note       string
	reviewedAt int64
}

func (rs *replayState) setLate(id uint64, l lateDead) {
	if rs.late == nil {
		rs.late = make(map[uint64]lateDead)
	}
	rs.late[id] = l
}

const replayChunkBits = 12

func (rs *replayState) at(i int32) *recovered {
	return &rs.chunks[i>>replayChunkBits][i&(1<<replayChunkBits-1)]
}

func (rs *replayState) lookup(id uint64) (int32, bool) {
	if id >= rs.base && id-rs.base < uint64(len(rs.dense)) {
		i := rs.dense[id-rs.base]
		return i - 1, i != 0
	}
	i, ok := rs.index[id]
	return i, ok
}

func (rs *replayState) setIndex(id uint64, i int32) {
	if rs.dense == nil && len(rs.index) == 0 {
		rs.base = id
	}
	if id >= rs.base {
		off := id - rs.base
		if off < uint64(len(rs.dense)) {
			rs.dense[off] = i + 1
			return
		}
		// Grow densely while that stays proportional to what is indexed.
		if off < 2*uint64(len(rs.dense))+1<<16 {
			rs.dense = append(rs.dense, make([]int32, int(off)-len(rs.dense)+1+len(rs.dense)/2)...)
			rs.dense[off] = i + 1
			return
		}
	}
	rs.index[id] = i
}

func (rs *replayState) unindex(id uint64) {
	if id >= rs.base && id-rs.base < uint64(len(rs.dense)) {
		rs.dense[id-rs.base] = 0
		return
	}
	delete(rs.index, id)
}

func (rs *replayState) get(id uint64) *recovered {
	if i, ok := rs.lookup(id); ok {
		return rs.at(i)
	}
	return nil
}

// add makes a new entry for id.
func (rs *replayState) add(id uint64) *recovered {
	i := rs.n
	if int(i>>replayChunkBits) == len(rs.chunks) {
		rs.chunks = append(rs.chunks, make([]recovered, 1<<replayChunkBits))
	}
	rs.n++
	rs.setIndex(id, i)
	rs.count++
	return rs.at(i)
}

func (rs *replayState) remove(id uint64) {
	if i, ok := rs.lookup(id); ok {
		*rs.at(i) = recovered{}
		rs.unindex(id)
		rs.count--
	}
}

// payloadArena copies recovered payloads into shared chunks: a million
// small allocations would cost recovery more than the copying. A chunk
// stays alive while any of its messages does.
type payloadArena struct{ chunk []byte }

const arenaChunk = 256 << 10

func (a *payloadArena) clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if len(b) > arenaChunk/8 {
		return append([]byte(nil), b...)
	}
	if len(a.chunk) < len(b) {
		a.chunk = make([]byte, arenaChunk)
	}
	out := a.chunk[:len(b):len(b)]
	copy(out, b)
	a.chunk = a.chunk[len(b):]
	return out
}

// replay rebuilds the engine's state from the newest snapshot and the log
// after it. Every record states an absolute fact (attempts so far, the new
// state), so replaying a record whose effect a snapshot already holds is
// harmless.
func (e *Engine) replay() (*replayState, error) {
	rs := &replayState{index: make(map[uint64]int32)}
	stats, err := e.log.Replay(func(r *wal.Record) error {
		e.apply(rs, r)
		return nil
	})
	if err != nil {
		return nil, mapWALError(fmt.Errorf("ringwal: replaying %s: %w", e.dir, err))
	}
	rep := e.log.Repair()
	e.recovered.records = stats.Records
	e.recovered.bytes = stats.Bytes
	e.recovered.tornBytes = rep.Bytes
	// The wal package logs the torn tail it cut; Open's summary repeats
	// the byte count.
	return rs, nil
}

func (e *Engine) apply(rs *replayState, r *wal.Record) {
	if r.ID > rs.maxID && r.Kind != wal.KindCheckpoint {
		rs.maxID = r.ID
	}
	m := rs.get(r.ID)
	switch r.Kind {
	case wal.KindEnqueue:
		// A snapshot newer than this record may have had it dead; the
		// records that follow this one say what became of it.
		if e.dead.Len() > 0 {
			e.dead.Remove(r.ID)
		}
		if m == nil {
			m = rs.add(r.ID)
		}
		*m = recovered{id: r.ID, msg: messageOf(r, &rs.arena), enqueuedAt: r.Time, expiresAt: r.ExpiresAt,
			deadline: r.Deadline, attempts: r.Attempt, crashes: r.Crashes, state: stPending}
		switch {
		case r.Until > 0:
			m.state, m.nextAt = stDelayed, r.Until
		case r.NotBefore > 0:
			m.state, m.nextAt = stDelayed, r.NotBefore
		}
		if r.DedupID != "" && rs.redriven != r.ID {
			e.dedup.restore(r.DedupID, r.ID, r.Time)
		}
		rs.redriven = 0
	case wal.KindLease:
		if m != nil {
			m.attempts, m.state = r.Attempt, stLeased
		}
	case wal.KindAck:
		rs.remove(r.ID)
	case wal.KindNack:
		if m != nil {
			m.attempts, m.state, m.nextAt, m.crashes = r.Attempt, stDelayed, r.Until, 0
			m.hist = m.hist.with(dlq.Failure{At: time.Unix(0, r.Time), Category: classify.Category(r.Category), Error: r.Text})
		}
	case wal.KindRequeue:
		if m != nil {
			m.attempts, m.state, m.crashes = r.Attempt, stPending, r.Crashes
		}
	case wal.KindFailure:
		if m != nil {
			m.hist = m.hist.with(dlq.Failure{At: time.Unix(0, r.Time), Category: classify.Category(r.Category), Error: r.Text})
		}
	case wal.KindDeadLetter:
		if m == nil {
			return
		}
		l, isLate := rs.late[r.ID]
		if isLate {
			delete(rs.late, r.ID)
			if l.redriven {
				return
			}
		}
		if r.DedupID != "" { // a snapshot's
			m.msg.DedupID = r.DedupID
		}
		cat := classify.Category(r.Category)
		h := m.hist.ending(dlq.Failure{At: time.Unix(0, r.Time), Category: cat, Error: r.Text})
		entry := h.deadLetter(r.ID, cat, m.msg, int(r.Attempt), r.Time)
		if l.reviewed {
			entry.Reviewed, entry.Note, entry.ReviewedAt = true, l.note, time.Unix(0, l.reviewedAt)
		}
		rs.remove(r.ID)
		_, _ = e.dead.Remove(r.ID)
		_ = e.dead.Add(entry)
	case wal.KindRedrive:
		rs.redriven = r.ID
		if _, ok := e.dead.Remove(r.ID); !ok && m != nil {
			rs.setLate(r.ID, lateDead{redriven: true})
		}
	case wal.KindPurge:
		if _, ok := e.dead.Remove(r.ID); !ok && m != nil {
			// Purged before its dead-letter record was logged: gone for good.
			rs.remove(r.ID)
			delete(rs.late, r.ID)
		}
	case wal.KindReview:
		if err := e.dead.MarkReviewed(r.ID, r.Text, time.Unix(0, r.Time)); err != nil && m != nil {
			rs.setLate(r.ID, lateDead{reviewed: true, note: r.Text, reviewedAt: r.Time})
		}
	case wal.KindDedup:
		e.dedup.restore(r.DedupID, r.ID, r.Time)
	case wal.KindCheckpoint:
		if r.ID > rs.maxID+1 {
			rs.maxID = r.ID - 1
		}
		if b := uint(r.Attempt); b > rs.slabBits && b <= maxSlabBits {
			rs.slabBits = b
		}
	}
}

// messageOf copies a record's message out of the log's buffers.
func messageOf(r *wal.Record, arena *payloadArena) Message {
	m := Message{
		DedupID:     r.DedupID,
		Key:         r.Key,
		Priority:    Priority(r.Priority),
		MaxAttempts: int(r.MaxAttempts),
	}
	if r.Payload != nil {
		m.Payload = arena.clone(r.Payload)
	}
	if len(r.Headers) > 0 {
		m.Headers = make(map[string]string, len(r.Headers)/2)
		for i := 0; i+1 < len(r.Headers); i += 2 {
			m.Headers[r.Headers[i]] = r.Headers[i+1]
		}
	}
	if r.NotBefore > 0 {
		m.Delay = time.Duration(r.NotBefore - r.Time)
	}
	if r.Deadline != 0 {
		m.Deadline = time.Unix(0, r.Deadline)
	}
	if r.ExpiresAt != 0 {
		m.TTL = time.Duration(r.ExpiresAt - r.Time)
	}
	return m
}

// restore places the replayed messages into the slab, tiers and wheel, in
// ID order so that each tier keeps its FIFO order. Messages leased at a
// crash come back pending with that attempt counted, or are dead-lettered
// as Poison once they were leased at CrashLoopLimit consecutive crashes.
func (e *Engine) restore(rs *replayState) error {
	// Tiers are FIFO: place messages in ID order. The log mostly has them
	// so already; a snapshot lists them by slot.
	order := make([]int32, 0, rs.count)
	for i := int32(0); i < rs.n; i++ {
		if rs.at(i).id != 0 {
			order = append(order, i)
		}
	}
	byID := func(a, b int32) int { return cmp.Compare(rs.at(a).id, rs.at(b).id) }
	if !slices.IsSortedFunc(order, byID) {
		slices.SortFunc(order, byID)
	}
	now := e.now()
	var notes []wal.Record
	for _, i := range order {
		m := rs.at(i)
		id := m.id
		slot, ok := e.slab.claimHome(id)
		if !ok {
			if slot, ok = e.slab.claimNear(id); !ok {
				return fmt.Errorf("ringwal: no slot for message %d in a slab of %d: raise MaxMessages", id, e.slab.size())
			}
		}
		r := e.slab.at(slot)
		r.msg = m.msg
		storeIfChanged32(&r.tier, uint32(m.msg.Priority.tier()))
		r.enqueuedAt, r.expiresAt, r.deadline = m.enqueuedAt, m.expiresAt, m.deadline
		r.setAttempts(uint32(m.attempts))
		storeIfChangedI32(&r.crashes, m.crashes)
		if m.hist != nil {
			r.hist.Store(m.hist)
		}
		e.ctr.added.Add(1)
		if m.expiresAt != 0 {
			e.hk.schedule(m.expiresAt, schedTTL(id))
		}
		switch m.state {
		case stLeased:
			e.recovered.crashed++
			crashes := m.crashes + 1
			if int(crashes) >= e.opts.CrashLoopLimit {
				e.recovered.poisoned++
				cause := fmt.Sprintf("leased at %d consecutive crashes", crashes)
				if err := e.deadLetter(slot, r, classify.Poison, cause, now, false); err != nil {
					return err
				}
				continue
			}
			r.crashes.Store(crashes)
			notes = append(notes, wal.Record{Kind: wal.KindRequeue, ID: id, Time: now, Attempt: m.attempts, Crashes: crashes})
			e.makeReady(slot, r, now)
		case stDelayed:
			e.delay(slot, r, m.nextAt)
		default:
			e.makeReady(slot, r, now)
		}
	}
	if rs.maxID > e.nextID.Load() {
		e.nextID.Store(rs.maxID)
	}
	e.ctr.enqueuedBase = e.nextID.Load()
	if len(notes) > 0 {
		if err := e.log.AppendBatch(notes); err != nil {
			return fmt.Errorf("ringwal: logging crash recovery: %w", err)
		}
		e.opts.Logger.Warn("ringwal: messages were leased at a crash", "requeued", len(notes), "poisoned", e.recovered.poisoned)
	}
	return nil
}

// requeueLeasedOnClose logs every leased message as requeued, so that a
// clean Close is not counted as a crash against them.
func (e *Engine) requeueLeasedOnClose() error {
	now := e.now()
	var recs []wal.Record
	e.slab.each(func(_ uint32, r *rec) {
		w := r.stableWord()
		if wordState(w) != stLeased {
			return
		}
		recs = append(recs, wal.Record{Kind: wal.KindRequeue, ID: r.id.Load(), Time: now,
			Attempt: int32(wordAttempts(w)), Crashes: r.crashes.Load()})
	})
	if len(recs) == 0 {
		return nil
	}
	return e.log.AppendBatch(recs)
}

// Checkpoint writes a snapshot of the engine's live state and lets the log
// drop what the snapshot covers, so disk use follows live data. It runs
// automatically once the log passes Options.CheckpointBytes. Safe to call
// concurrently with everything else; a no-op for a memory-only engine.
func (e *Engine) Checkpoint() error {
	if err := e.usable(); err != nil {
		return err
	}
	if e.log == nil {
		return nil
	}
	_, err := e.log.Checkpoint(e.snapshot)
	if err != nil {
		return fmt.Errorf("ringwal: checkpoint: %w", err)
	}
	return nil
}

// snapshot streams the live state as records whose replay rebuilds it.
func (e *Engine) snapshot(emit func(*wal.Record) error) error {
	now := e.now()
	if err := emit(&wal.Record{Kind: wal.KindCheckpoint, ID: e.nextID.Load() + 1, Time: now,
		Attempt: int32(bits.Len64(e.slab.mask))}); err != nil {
		return err
	}
	var rec wal.Record
	for slot := 0; slot < e.slab.size(); slot++ {
		r := e.slab.lookup(uint32(slot))
		if r == nil { // a chunk never used: skip it whole
			slot |= slabChunkSlots - 1
			continue
		}
		state, leaseExpiry, ok := e.snapshotRecord(r, &rec)
		if !ok {
			continue
		}
		if err := emit(&rec); err != nil {
			return err
		}
		if h := r.hist.Load(); h != nil {
			for _, f := range h.failures {
				if err := emit(&wal.Record{Kind: wal.KindFailure, ID: rec.ID, Time: f.At.UnixNano(),
					Category: uint8(f.Category), Text: f.Error}); err != nil {
					return err
				}
			}
		}
		if state == stLeased {
			if err := emit(&wal.Record{Kind: wal.KindLease, ID: rec.ID, Time: now, Attempt: rec.Attempt,
				Until: leaseExpiry}); err != nil {
				return err
			}
		}
	}
	dead, err := e.dead.Query(dlq.Query{})
	if err != nil {
		return err
	}
	for i := range dead {
		if err := e.snapshotDead(&dead[i], emit); err != nil {
			return err
		}
	}
	if e.opts.DedupWindow > 0 {
		return e.dedup.each(now, int64(e.opts.DedupWindow), func(dedupID string, id uint64, at int64) error {
			return emit(&wal.Record{Kind: wal.KindDedup, ID: id, Time: at, DedupID: dedupID})
		})
	}
	return nil
}

// snapshotRecord fills rec with a live record's enqueue record and reports
// its state (and lease expiry, when leased); ok is false for a free slot.
func (e *Engine) snapshotRecord(r *rec, rec *wal.Record) (state uint32, leaseExpiry int64, ok bool) {
	for {
		w := r.word.Load()
		switch st := wordState(w); st {
		case stFree:
			return 0, 0, false
		case stBusy, stCommitting:
			// Someone owns it for a moment. A committing record is not ours
			// to read either: once its enqueue record is written it is
			// published, and may be leased, settled and reused while we
			// read. The log writer runs on while a checkpoint does, so the
			// commit ends.
			runtime.Gosched()
			continue
		default:
			if !r.word.CompareAndSwap(w, withState(w, stBusy)) {
				continue
			}
			e.enqueueRecord(rec, r, r.id.Load())
			rec.Crashes = r.crashes.Load()
			switch st {
			case stDelayed:
				rec.Until = r.nextAt.Load()
			case stLeased:
				leaseExpiry = r.leaseExpiry
			}
			r.word.Store(w)
			return st, leaseExpiry, true
		}
	}
}

func (e *Engine) snapshotDead(d *DeadLetter, emit func(*wal.Record) error) error {
	var rec wal.Record
	m := &d.Message
	// The enqueue record carries no DedupID: replaying it would restore the
	// dedup entry as first seen at DeadAt. The dead-letter record carries
	// it instead; a fresh dedup entry has a record of its own.
	rec = wal.Record{Kind: wal.KindEnqueue, ID: d.ID, Time: d.DeadAt.UnixNano(), Priority: int8(m.Priority),
		Key: m.Key, Payload: m.Payload, MaxAttempts: int32(m.MaxAttempts)}
	if len(m.Headers) > 0 {
		rec.Headers = flattenHeaders(m.Headers)
	}
	if !m.Deadline.IsZero() {
		rec.Deadline = m.Deadline.UnixNano()
	}
	// Delay and TTL are read back relative to the record's Time.
	if m.Delay > 0 {
		rec.NotBefore = addSat(rec.Time, int64(m.Delay))
	}
	if m.TTL > 0 {
		rec.ExpiresAt = addSat(rec.Time, int64(m.TTL))
	}
	if err := emit(&rec); err != nil {
		return err
	}
	last := ""
	for _, f := range d.Failures {
		last = f.Error
		if err := emit(&wal.Record{Kind: wal.KindFailure, ID: d.ID, Time: f.At.UnixNano(),
			Category: uint8(f.Category), Text: f.Error}); err != nil {
			return err
		}
	}
	if err := emit(&wal.Record{Kind: wal.KindDeadLetter, ID: d.ID, Time: d.DeadAt.UnixNano(),
		Attempt: int32(d.Attempts), Category: uint8(d.Category), Text: last, DedupID: m.DedupID}); err != nil {
		return err
	}
	if d.Reviewed {
		return emit(&wal.Record{Kind: wal.KindReview, ID: d.ID, Time: d.ReviewedAt.UnixNano(), Text: d.Note})
	}
	return nil
}
