package ringwal

import (
	"fmt"
	"time"
	"unsafe"

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

// recovered is a live message rebuilt from the log. It is kept compact
// (96 bytes rather than a whole Message and more: 200): Open holds one
// per live message until restore, so with a large backlog its size is
// memory to fault in, zero and have the GC scan.
type recovered struct {
	id         uint64
	msg        replayMsg
	enqueuedAt int64
	expiresAt  int64
	attempts   int32
	crashes    int32
	state      uint32 // stPending, stDelayed or stLeased
	ordered    bool   // of an ordered key (restore places those in ID order)
	// nextAt follows the state, as a record's at does: stDelayed, when
	// due; stPending, since when it is ready (Stats.OldestPending, Peek
	// order). Every record that sets one of these states sets it.
	nextAt int64
	hist   *history
}

// replayMsg is a recovered message's Message in compact form: the fields
// every message has inline, the rest behind more (nil when it sets none).
type replayMsg struct {
	Key    string
	payPtr *byte
	*replayMore
	payLen   int32 // a record body is at most 1 GiB
	Priority Priority
}

// replayMore holds the Message fields a message rarely sets.
type replayMore struct {
	DedupID     string
	Headers     map[string]string
	Delay, TTL  time.Duration
	Deadline    time.Time
	MaxAttempts int
}

// message rebuilds the Message.
func (m *replayMsg) message() Message {
	msg := Message{Key: m.Key, Payload: unsafe.Slice(m.payPtr, int(m.payLen)), Priority: m.Priority}
	if x := m.replayMore; x != nil {
		msg.DedupID, msg.Headers, msg.Delay, msg.TTL, msg.Deadline, msg.MaxAttempts = x.DedupID, x.Headers, x.Delay, x.TTL, x.Deadline, x.MaxAttempts
	}
	return msg
}

// setDedupID sets the message's DedupID.
func (m *replayMsg) setDedupID(id string) {
	if m.replayMore == nil {
		m.replayMore = &replayMore{}
	}
	m.DedupID = id
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
}

// lateDead is what the log said of a dead letter before the record that
// made it one.
type lateDead struct {
	redriven   bool // its dead-letter record is stale: the message lives on
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

func newReplayState() *replayState { return &replayState{index: make(map[uint64]int32)} }

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
// after it, applying each record (journal.go); restore then places it.
func (e *Engine) replay() (*replayState, error) {
	rs := newReplayState()
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
