package ringwal

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/internal/wal"
	"github.com/ringwal/ringwal/ring"
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

// replayState holds what replay rebuilds before restore places it. The
// live messages are rebuilt in the slab the engine will run with, each in
// the slot restore leaves it in. A record replay holds is claimed (owned,
// unpublished) from its enqueue record on. Its fields are the message's as
// the log left them; its at is when it is due or ready, as readySince
// reads it. Rebuilding them elsewhere first and copying them
// into the slab at restore was a second pass over every message, with as
// much memory again to fault in, zero and have the GC scan.
type replayState struct {
	slab *slab
	// arenas are the payload arena chunks reserve allocated ahead.
	arenas *spares[[arenaChunk]byte]
	// ahead is slab for prepareRecord, which runs on the log's decoding
	// goroutine: grow replaces slab while it runs.
	ahead atomic.Pointer[slab]
	// states holds, per slot of slab (chunked as the slab is), the state
	// the log left the message in (stPending, stDelayed or stLeased), 0
	// for a slot replay does not hold. The record's word stays stBusy
	// until restore publishes it: only record.go's verbs move a word.
	states [][]uint8
	// IDs are mostly consecutive in a log, so most are indexed densely
	// (dense[id-base] = slot+1); the map takes the stragglers.
	base  uint64
	dense []uint32
	index map[uint64]uint32
	count int // live messages held
	// inOrder says the live messages sit in their IDs' home slots in the
	// order restore places them, read around the slab from firstID's
	// slot. That holds when every message was first enqueued pending, in
	// increasing ID order and ready times, within one slab's size of IDs.
	// And no record since moved one (a lease, nack, requeue or redrive)
	// nor the slab (grow), unless it is gone since. A log of a backlog
	// enqueued, and partly delivered and acked, is so. Restore then need
	// not read every record to order them (noteEnqueue, inOrderSlots).
	inOrder         bool
	firstID, lastID uint64
	lastAt          int64
	// movedIDs holds the live messages a lease, nack or requeue moved
	// (out of the order inOrder keeps); remove forgets them.
	movedIDs map[uint64]struct{}
	tiers    uint // tiers holding a message not delayed (restore's rings)
	maxID    uint64
	err      error // a message found no slot: replay stops
	// late holds a Review of a dead letter whose dead-letter record is
	// further on in the log: engines that made a dead letter visible
	// before they logged it wrote such logs, and replay still reads them.
	// (Today's logs it before, so a Review, Purge or Redrive follows it.)
	late map[uint64]lateDead
	// pauses is the last pause or resume logged per key ("" = all
	// delivery): the pause's end, 0 for a resume.
	pauses map[string]int64
	// deadAdded says a dead-letter record was applied: until then the
	// dead-letter store is empty.
	deadAdded bool
	// redriven is the ID of the last Redrive record: the enqueue record
	// logged with it re-creates the message but is not a first enqueue,
	// so it leaves the DedupID's window where it was.
	redriven uint64
	// failedThrough is, per live message replay holds, the attempts its
	// replayed failure list accounts for (newFailure); absent: none known.
	failedThrough map[uint64]uint32
}

// newFailure says whether the failure r logged (a nack's or a failure
// record's) is not yet in the failure list of r's message, which replay
// holds. When r says which attempt it is of, newFailure notes that it is
// in the list from now on.
//
// A checkpoint's cut comes before its snapshot walks the slab, so a nack
// logged in between is replayed on top of a snapshot that may hold its
// failure already: appending it again would list it twice. Replaying its
// attempts and state again is harmless (they are absolute). The
// snapshot's last failure record of a live message carries the attempts
// its failures account for (liveRecordsOf). Each nack or failure record
// of the log carries the attempt it ended. One of an attempt the failure
// list accounts for is in it. A record of no attempt (the snapshot's other
// entries, an older engine's log) is always new, as a record of the
// attempt the count saturates at is, since several may have that
// number.
func (rs *replayState) newFailure(r *wal.Record) bool {
	if r.Attempt <= 0 || uint32(r.Attempt) >= maxAttempts {
		return true
	}
	a := uint32(r.Attempt)
	if a <= rs.failedThrough[r.ID] {
		return false
	}
	if rs.failedThrough == nil {
		rs.failedThrough = make(map[uint64]uint32)
	}
	rs.failedThrough[r.ID] = a
	return true
}

// forgetFailures forgets what newFailure noted of id: its message left,
// or starts again.
func (rs *replayState) forgetFailures(id uint64) {
	if rs.failedThrough != nil {
		delete(rs.failedThrough, id)
	}
}

// lateDead is what the log said of a dead letter before the record that
// made it one.
type lateDead struct {
	reviewed   bool
	note       string
	reviewedAt int64
}

func (rs *replayState) setPause(key string, until int64) {
	if rs.pauses == nil {
		rs.pauses = make(map[string]int64)
	}
	rs.pauses[key] = until
}

func (rs *replayState) setLate(id uint64, l lateDead) {
	if rs.late == nil {
		rs.late = make(map[uint64]lateDead)
	}
	rs.late[id] = l
}

// newReplayState starts a replay into a slab of 1<<bits slots (the size
// the options ask for; replay grows it when the log holds more).
func newReplayState(bits uint) *replayState {
	rs := &replayState{slab: newSlab(bits), index: make(map[uint64]uint32), inOrder: true}
	rs.ahead.Store(rs.slab)
	return rs
}

// state is the state the log left slot's message in, 0 if replay holds
// none there.
func (rs *replayState) state(slot uint32) uint32 {
	if c := slot >> slabChunkBits; int(c) < len(rs.states) && rs.states[c] != nil {
		return uint32(rs.states[c][slot&(slabChunkSlots-1)])
	}
	return 0
}

func (rs *replayState) setState(slot, st uint32) {
	c := slot >> slabChunkBits
	if int(c) >= len(rs.states) {
		rs.states = append(rs.states, make([][]uint8, int(c)+1-len(rs.states))...)
	}
	if rs.states[c] == nil {
		rs.states[c] = make([]uint8, slabChunkSlots)
	}
	rs.states[c][slot&(slabChunkSlots-1)] = uint8(st)
}

func (rs *replayState) lookup(id uint64) (uint32, bool) {
	if id >= rs.base && id-rs.base < uint64(len(rs.dense)) {
		i := rs.dense[id-rs.base]
		return i - 1, i != 0
	}
	i, ok := rs.index[id]
	return i, ok
}

func (rs *replayState) setIndex(id uint64, slot uint32) {
	if rs.dense == nil && len(rs.index) == 0 {
		rs.base = id
	}
	if id >= rs.base {
		off := id - rs.base
		if off < uint64(len(rs.dense)) {
			rs.dense[off] = slot + 1
			return
		}
		// Grow densely while that stays proportional to what is indexed.
		if off < 2*uint64(len(rs.dense))+1<<16 {
			rs.dense = append(rs.dense, make([]uint32, int(off)-len(rs.dense)+1+len(rs.dense)/2)...)
			rs.dense[off] = slot + 1
			return
		}
	}
	rs.index[id] = slot
}

func (rs *replayState) unindex(id uint64) {
	if id >= rs.base && id-rs.base < uint64(len(rs.dense)) {
		rs.dense[id-rs.base] = 0
		return
	}
	delete(rs.index, id)
}

// useTier notes that tier t will hold a message (restore allocates its
// ring ahead).
func (rs *replayState) useTier(t int) {
	if uint(t) < ring.NumTiers {
		rs.tiers |= 1 << t
	}
}

// get returns the record replay holds for id, nil if none.
func (rs *replayState) get(id uint64) (uint32, *rec) {
	if slot, ok := rs.lookup(id); ok {
		return slot, rs.slab.at(slot)
	}
	return 0, nil
}

// add claims a slot for a new message id, growing the slab first when it
// is seven eighths full (probing would grow long) or has no free slot
// near id's home. It returns a nil record, and sets rs.err, when even the
// largest slab has no room.
func (rs *replayState) add(id uint64) (uint32, *rec) {
	if rs.count >= rs.slab.size()-rs.slab.size()/8 && rs.bits() < maxSlabBits {
		rs.grow(rs.bits() + 1)
	}
	for {
		slot, ok := rs.slab.claimHome(id)
		if !ok {
			slot, ok = rs.slab.claimNear(id)
		}
		if ok {
			rs.setIndex(id, slot)
			rs.count++
			return slot, rs.slab.at(slot)
		}
		if rs.bits() >= maxSlabBits {
			rs.err = fmt.Errorf("ringwal: no slot for message %d in a slab of %d: raise MaxMessages", id, rs.slab.size())
			return 0, nil
		}
		rs.grow(rs.bits() + 1)
	}
}

// noteEnqueue keeps inOrder: id was just enqueued into slot, fresh (not
// a re-enqueue of a message replay holds), pending since at unless
// delayed.
func (rs *replayState) noteEnqueue(id uint64, slot uint32, fresh, delayed bool, at int64) {
	switch {
	case !rs.inOrder:
	case !fresh || delayed || at <= 0 || uint64(slot) != id&rs.slab.mask:
		rs.inOrder = false
	case rs.lastID == 0:
		rs.firstID, rs.lastID, rs.lastAt = id, id, at
	case id > rs.lastID && at >= rs.lastAt && id-rs.firstID < uint64(rs.slab.size()):
		rs.lastID, rs.lastAt = id, at
	default:
		rs.inOrder = false
	}
}

// moved notes that a record moved m (id's message), if replay holds it.
func (rs *replayState) moved(m *rec, id uint64) {
	if m == nil || !rs.inOrder {
		return
	}
	if rs.movedIDs == nil {
		rs.movedIDs = make(map[uint64]struct{})
	}
	rs.movedIDs[id] = struct{}{}
}

// inOrderSlots returns the slots of the live messages in the order
// restore places them, when inOrder says that is slot order from
// firstID's slot on (nil otherwise): it reads the states beside the slab,
// not the records.
func (rs *replayState) inOrderSlots() []uint32 {
	if !rs.inOrder || len(rs.movedIDs) > 0 {
		return nil
	}
	slots := make([]uint32, 0, rs.count)
	start := uint32(rs.firstID & rs.slab.mask)
	collect := func(from, to uint32) { // [from, to)
		for slot := from; slot < to; {
			c := slot >> slabChunkBits
			end := min(to, (c+1)<<slabChunkBits)
			if int(c) < len(rs.states) && rs.states[c] != nil {
				for _, st := range rs.states[c][slot&(slabChunkSlots-1) : end-c<<slabChunkBits] {
					if st != 0 {
						slots = append(slots, slot)
					}
					slot++
				}
			}
			slot = end
		}
	}
	collect(start, uint32(rs.slab.size()))
	collect(0, start)
	return slots
}

// remove forgets id's message, if replay holds it.
func (rs *replayState) remove(id uint64) {
	if slot, r := rs.get(id); r != nil {
		r.free(nil) // replay counts nothing: restore publishes what stays
		rs.setState(slot, 0)
		rs.unindex(id)
		rs.count--
		delete(rs.movedIDs, id)
		rs.forgetFailures(id)
	}
}

func (rs *replayState) bits() uint { return rs.slab.bits() }

// grow moves every message replay holds into a slab of 1<<b slots: a log
// holding more than the options' MaxMessages, or a snapshot taken with a
// larger slab. Rare (the options size the slab for the usual backlog), so
// it moves records through message and fill rather than field by field.
func (rs *replayState) grow(b uint) {
	old, states := rs.slab, rs.states
	rs.slab, rs.states = newSlab(b), nil
	rs.slab.spare = old.spare
	rs.inOrder = false
	rs.ahead.Store(rs.slab)
	rs.base, rs.dense, rs.index = 0, nil, make(map[uint64]uint32)
	rs.count = 0
	for c, sts := range states {
		for j, st := range sts {
			if st == 0 {
				continue
			}
			from := old.at(uint32(c)<<slabChunkBits | uint32(j))
			id := from.id.Load()
			slot, r := rs.add(id)
			msg := from.sharedMessage()
			r.fill(&msg, from.queue, from.enqueuedAt, from.attempts(), from.crashes.Load(), from.fails.Load(), nil)
			r.at = from.at
			rs.setState(slot, uint32(st))
		}
	}
}

// sizeFor grows the slab to at least 1<<b slots.
func (rs *replayState) sizeFor(b uint) {
	if b > rs.bits() && b <= maxSlabBits {
		rs.grow(b)
	}
}

// payloadArena copies recovered payloads into shared chunks: a million
// small allocations would cost recovery more than the copying. A chunk
// stays alive while any of its messages does. Chunks come from the spares
// Open reserved (reserve.go) while there are any.
type payloadArena struct {
	chunk []byte
	spare *spares[[arenaChunk]byte]
}

const (
	arenaChunk      = 256 << 10
	arenaMaxPayload = arenaChunk / 8 // larger payloads get an allocation of their own
)

// arenaHolds says whether a payload of n bytes is copied into an arena.
func arenaHolds(n int) bool { return n > 0 && n <= arenaMaxPayload }

func (a *payloadArena) clone(b []byte) []byte {
	if !arenaHolds(len(b)) {
		if len(b) == 0 {
			return nil
		}
		return append([]byte(nil), b...)
	}
	if len(a.chunk) < len(b) {
		if p := a.spare.take(); p != nil {
			a.chunk = p[:]
		} else {
			a.chunk = make([]byte, arenaChunk)
		}
	}
	out := a.chunk[:len(b):len(b)]
	copy(out, b)
	a.chunk = a.chunk[len(b):]
	return out
}

// prepareRecord does what touches memory no message has used yet, on the
// goroutine that decoded r and before apply sees it. It copies an enqueue
// record's payload into the arena, as the log reuses the bytes it decoded
// into. It allocates the slab chunk of its ID's home slot. With
// a large backlog that first touch, page faults included, costs about as
// much as applying the records; done here, it overlaps with apply.
//
// The log decodes on several goroutines at once: each gets a preparer of
// its own (newPreparer), with its own arena.
func (rs *replayState) newPreparer() func(r *wal.Record) {
	arena := payloadArena{spare: rs.arenas}
	return func(r *wal.Record) { rs.prepareRecord(r, &arena) }
}

func (rs *replayState) prepareRecord(r *wal.Record, arena *payloadArena) {
	switch r.Kind {
	case wal.KindEnqueue, wal.KindPublish:
	case wal.KindScheduleTick:
		if r.ID == 0 {
			return
		}
	default:
		return
	}
	if r.Payload != nil {
		r.Payload = arena.clone(r.Payload) // a Publish's copies share it
	}
	ahead := rs.ahead.Load()
	ahead.prepare(r.ID)
	for _, c := range r.Copies {
		ahead.prepare(c.ID)
	}
}

// replay rebuilds the engine's state from the newest snapshot and the log
// after it, applying each record (journal.go) into a slab of at least
// 1<<bits slots; restore then places it.
func (e *Engine) replay(bits uint) (*replayState, error) {
	rs := newReplayState(bits)
	if h, ok := decodeCloseHint(e.log.Hint()); ok {
		rs.reserve(h)
	}
	stats, err := e.log.ReplayPrepared(rs.newPreparer, func(r *wal.Record) error {
		e.apply(rs, r)
		return rs.err
	})
	rs.endReserve()
	if err != nil {
		return nil, mapWALError(fmt.Errorf("ringwal: replaying %s: %w", e.dir, err))
	}
	// As much to spare as Open gives the options' MaxMessages.
	rs.sizeFor(slabBitsFor(rs.count))
	rep := e.log.Repair()
	e.recovered.records = stats.Records
	e.recovered.bytes = stats.Bytes
	e.recovered.tornBytes = rep.Bytes
	// The wal package logs the torn tail it cut; Open's summary repeats
	// the byte count.
	return rs, nil
}
