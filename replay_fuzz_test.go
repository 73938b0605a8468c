package ringwal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/wal"
)

// FuzzReplayHostileValues writes well-formed data directories (real wal
// framing and hashes, through the wal package's writer) holding records
// whose every field the fuzzer chooses, hostile values included, and
// opens an engine on each: Open must return an error wrapping ErrCorrupt
// (or ErrVersion) or an engine whose counts agree with what it delivers,
// which checkpoints, closes and reopens to the same counts; never a
// panic or a hang. A backup with honest hashes is such a directory.
//
// The input is a structured log (decodeFuzzLog): its first byte says how
// many of its records go in a snapshot, then come records, each a kind, a
// mask of the fields it sets and their values, with shortcuts to the
// values at the edges (fuzzSource). The seeds in
// testdata/fuzz/FuzzReplayHostileValues cover every record kind and the
// values that once crashed Open; TestFuzzReplaySeedsAreCurrent writes
// them.
func FuzzReplayHostileValues(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, tail := decodeFuzzLog(data)
		dir := t.TempDir()
		writeFuzzLog(t, dir, snap, tail)
		if msg := fuzzGuard(func() string { return fuzzOpenAndCheck(dir) }); msg != "" {
			t.Fatalf("%s\nsnapshot:\n%s\nlog:\n%s", msg, fuzzDescribe(snap), fuzzDescribe(tail))
		}
	})
}

// fuzzBase is the fake clock's time in the fuzzed engines, which records'
// times are near unless at an edge.
var fuzzBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// fuzzHangAfter is how long an Open, the checks and Close may take before
// the run counts as a hang: far beyond what a log of a few hundred
// records needs, even under -race on a loaded machine.
const fuzzHangAfter = time.Minute

// fuzzGuard runs fn, returning what it returns, a recovered panic, or a hang.
func fuzzGuard(fn func() string) string {
	done := make(chan string, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Sprintf("panic: %v\n%s", p, debug.Stack())
			}
		}()
		done <- fn()
	}()
	select {
	case msg := <-done:
		return msg
	case <-time.After(fuzzHangAfter):
		return fmt.Sprintf("still running after %v: a hang", fuzzHangAfter)
	}
}

// fuzzOpenAndCheck opens dir and checks the engine it gets: "" if it is
// consistent or Open refused the log as it should.
func fuzzOpenAndCheck(dir string) string {
	o := Options{Clock: clock.NewFake(time.Unix(0, fuzzBase)), MaxMessages: 1 << 10}
	e, err := Open(dir, o)
	if err != nil {
		if errors.Is(err, wal.ErrCorrupt) || errors.Is(err, ErrVersion) {
			return ""
		}
		return fmt.Sprintf("Open: an error wrapping neither ErrCorrupt nor ErrVersion: %v", err)
	}
	before := e.Stats()
	msg := fuzzCheckEngine(e, before)
	if err := e.Close(); err != nil && msg == "" {
		msg = fmt.Sprintf("Close: %v", err)
	}
	if msg != "" {
		return msg
	}
	// What the first engine made of the log (and its checkpoint) opens
	// again to the same counts.
	e, err = Open(dir, o)
	if err != nil {
		return fmt.Sprintf("reopening what an engine wrote: %v", err)
	}
	defer e.Close()
	after := e.Stats()
	if got, want := visibleCounts(after), visibleCounts(before); got != want {
		return fmt.Sprintf("reopened with %v, closed with %v", got, want)
	}
	return ""
}

// fuzzCheckEngine checks an engine Open returned: its counts are sane, every
// message it counts pending and free to go is delivered (then given back:
// the reopen counts it again), its dead letters are listed, and a
// checkpoint succeeds.
func fuzzCheckEngine(e *Engine, s Stats) string {
	c := visibleCounts(s)
	if c.Pending < 0 || c.Delayed < 0 || c.Leased != 0 || c.Held < 0 || c.Dead < 0 {
		return fmt.Sprintf("counts after Open: %+v", c)
	}
	var sum statsCounts
	for _, q := range s.Queues {
		sum.Pending += q.Pending
		sum.Delayed += q.Delayed
		sum.Dead += q.Dead
	}
	if sum.Pending != c.Pending || sum.Delayed != c.Delayed || sum.Dead != c.Dead {
		return fmt.Sprintf("the queues count %+v, the engine %+v", sum, c)
	}
	free := !s.DeliveryPaused && s.Waiting == 0
	for _, q := range e.Queues() {
		free = free && !q.Paused
	}
	delivered := 0
	var ids []ID
	for _, q := range s.Queues {
		h := e.Queue(q.Name)
		for range q.Pending + 1 {
			d, ok := h.TryDequeue()
			if !ok {
				break
			}
			if _, err := e.Get(d.ID); err != nil {
				return fmt.Sprintf("Get(%d) of a delivered message: %v", d.ID, err)
			}
			delivered++
			ids = append(ids, d.ID)
		}
	}
	if delivered > c.Pending || free && delivered != c.Pending {
		return fmt.Sprintf("%d pending (free to go: %v), %d delivered", c.Pending, free, delivered)
	}
	for _, id := range ids {
		if err := e.Requeue(id); err != nil {
			return fmt.Sprintf("Requeue(%d): %v", id, err)
		}
	}
	dead, err := e.DeadLetters(dlq.Query{})
	if err != nil {
		return fmt.Sprintf("DeadLetters: %v", err)
	}
	if len(dead) != c.Dead {
		return fmt.Sprintf("%d dead letters listed, %d counted", len(dead), c.Dead)
	}
	if err := e.Checkpoint(); err != nil {
		return fmt.Sprintf("Checkpoint: %v", err)
	}
	return ""
}

// writeFuzzLog writes dir's log: snap as its snapshot (none if empty),
// tail after it. A record the writer refuses (one that could not be
// decoded back) is left out: the log stays well-formed.
func writeFuzzLog(t testing.TB, dir string, snap, tail []wal.Record) {
	t.Helper()
	l, err := wal.Open(dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Replay(func(*wal.Record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := l.RequireFormat(2); err != nil {
		t.Fatal(err)
	}
	if len(snap) > 0 {
		_, err := l.Checkpoint(func(emit func(*wal.Record) error) error {
			for i := range snap {
				_ = emit(&snap[i])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range tail {
		_ = l.Append(&tail[i])
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func fuzzDescribe(rs []wal.Record) string {
	out := ""
	for _, r := range rs {
		out += fmt.Sprintf("  %+v\n", r)
	}
	return out
}

// --- the input format

// Field bits of a fuzzed record's mask, in the order its values follow.
const (
	ffID = 1 << iota
	ffTime
	ffPriority
	ffKey
	ffDedupID
	ffHeaders
	ffPayload
	ffNotBefore
	ffDeadline
	ffExpiresAt
	ffMaxAttempts
	ffAttempt
	ffUntil
	ffCategory
	ffText
	ffCrashes
	ffQueue
	ffCopies
	ffUnique
)

// numRecordKinds is how many record kinds there are (wal.KindScheduleTick is
// the last): a kind byte is taken modulo it.
const numRecordKinds = int(wal.KindScheduleTick)

// fuzzStrings are the strings a selector below 0x80 picks: names, JSON
// option texts valid and not, a key longer than any the engine takes.
var fuzzStrings = []string{
	"", "k", "q1", "q2", "d",
	`{}`, `{"max":1}`, `{"max":-1}`, `{"lease":-1}`, `{"strict":true,"max":2}`,
	fuzzBadPolicies, `{"topics":["t"]}`, `[`, fuzzScheduleJSON, fuzzLongString,
	"\xff\xfe", "a/b", "x\u202e",
}

var (
	fuzzBadPolicies = `{"policies":{"transient":{"MaxAttempts":-3}}}`
	// fuzzScheduleJSON is a schedule record's text that runs hourly from
	// fuzzBase. (Hostile schedule texts are the schedule appliers' to
	// refuse; see journal_schedule.go.)
	fuzzScheduleJSON = fmt.Sprintf(`{"spec":"@every 1h","message":{},"anchor":%d,"from":%d}`, fuzzBase, fuzzBase)
	// fuzzLongString is longer than any key or name the engine takes.
	fuzzLongString = string(make([]byte, 5000))
)

// fuzzSource reads a fuzzed log's values; past its end every read is 0.
type fuzzSource struct{ b []byte }

func (s *fuzzSource) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

func (s *fuzzSource) raw(n int) uint64 {
	var v uint64
	for i := range n {
		v |= uint64(s.byte()) << (8 * i)
	}
	return v
}

// u64 reads an ID: a selector below 0xF8 is the ID itself, the others
// an edge or raw bytes.
func (s *fuzzSource) u64() uint64 {
	switch sel := s.byte(); sel {
	case 0xF8:
		return s.raw(8)
	case 0xF9:
		return math.MaxUint64
	case 0xFA:
		return 1 << 63
	case 0xFB:
		return 1<<63 - 1
	case 0xFC:
		return 1 << 62
	default:
		return uint64(sel)
	}
}

// i64 reads a time or another int64, by a selector: raw bytes, 0, an
// edge, or near fuzzBase.
func (s *fuzzSource) i64() int64 {
	switch sel := s.byte(); sel % 8 {
	case 0:
		return int64(s.raw(8))
	case 1:
		return 0
	case 2:
		return math.MinInt64
	case 3:
		return math.MaxInt64
	case 4:
		return fuzzBase + int64(int8(s.byte()))*int64(time.Second)
	case 5:
		return int64(s.byte())
	case 6:
		return math.MinInt64 + int64(s.byte())
	default:
		return math.MaxInt64 - int64(s.byte())
	}
}

// i32 reads an attempt count or another int32: a selector below 0xF8 is
// the value plus 8 (so -8 to 239), the others an edge or raw bytes.
func (s *fuzzSource) i32() int32 {
	switch sel := s.byte(); sel {
	case 0xF8:
		return int32(uint32(s.raw(4)))
	case 0xF9:
		return math.MinInt32
	case 0xFA:
		return math.MaxInt32
	case 0xFB:
		return 1<<24 - 1
	case 0xFC:
		return 1 << 24
	default:
		return int32(sel) - 8
	}
}

// str reads a string: a selector below 0x80 picks one of fuzzStrings,
// the others are followed by a length byte and the bytes.
func (s *fuzzSource) str() string {
	sel := s.byte()
	if sel < 0x80 {
		return fuzzStrings[int(sel)%len(fuzzStrings)]
	}
	n := int(s.byte())
	b := make([]byte, 0, n)
	for range n {
		b = append(b, s.byte())
	}
	return string(b)
}

// queue reads a queue number: a selector below 0xF0 is taken modulo 4,
// the others are followed by two bytes of it.
func (s *fuzzSource) queue() uint32 {
	if sel := s.byte(); sel < 0xF0 {
		return uint32(sel % 4)
	}
	return uint32(s.raw(2))
}

// decodeFuzzLog turns a fuzzer's input into the records of a snapshot and
// of the log after it.
func decodeFuzzLog(data []byte) (snap, tail []wal.Record) {
	s := &fuzzSource{b: data}
	inSnap := int(s.byte())
	var recs []wal.Record
	for len(s.b) > 0 && len(recs) < 256 {
		recs = append(recs, s.record())
	}
	inSnap = min(inSnap, len(recs))
	return recs[:inSnap], recs[inSnap:]
}

func (s *fuzzSource) record() wal.Record {
	r := wal.Record{Kind: wal.Kind(int(s.byte())%numRecordKinds + 1)}
	mask := s.raw(3)
	if mask&ffID != 0 {
		r.ID = s.u64()
	}
	if mask&ffTime != 0 {
		r.Time = s.i64()
	}
	if mask&ffPriority != 0 {
		r.Priority = int8(s.byte())
	}
	if mask&ffKey != 0 {
		r.Key = s.str()
	}
	if mask&ffDedupID != 0 {
		r.DedupID = s.str()
	}
	if mask&ffHeaders != 0 {
		for range s.byte() % 9 {
			r.Headers = append(r.Headers, s.str())
		}
	}
	if mask&ffPayload != 0 {
		r.Payload = make([]byte, s.byte())
		for i := range r.Payload {
			r.Payload[i] = s.byte()
		}
	}
	if mask&ffNotBefore != 0 {
		r.NotBefore = s.i64()
	}
	if mask&ffDeadline != 0 {
		r.Deadline = s.i64()
	}
	if mask&ffExpiresAt != 0 {
		r.ExpiresAt = s.i64()
	}
	if mask&ffMaxAttempts != 0 {
		r.MaxAttempts = s.i32()
	}
	if mask&ffAttempt != 0 {
		r.Attempt = s.i32()
	}
	if mask&ffUntil != 0 {
		r.Until = s.i64()
	}
	if mask&ffCategory != 0 {
		r.Category = s.byte()
	}
	if mask&ffText != 0 {
		r.Text = s.str()
	}
	if mask&ffCrashes != 0 {
		r.Crashes = s.i32()
	}
	if mask&ffQueue != 0 {
		r.Queue = s.queue()
	}
	if mask&ffCopies != 0 {
		id := r.ID
		for range s.byte() % 5 {
			q := s.queue()
			id += uint64(s.byte()) // never below the one before: the writer refuses that
			r.Copies = append(r.Copies, wal.Copy{Queue: q, ID: id})
		}
	}
	if mask&ffUnique != 0 {
		r.Unique = s.byte()
	}
	return r
}

// --- writing inputs (the seeds)

// encodeFuzzLog is decodeFuzzLog's inverse for the records it can
// express (strings of at most 255 bytes, copies at most 255 IDs apart,
// at most 4 of them and 8 headers): the seeds are written with it.
func encodeFuzzLog(snap, tail []wal.Record) []byte {
	out := []byte{byte(len(snap))}
	for _, r := range append(append([]wal.Record(nil), snap...), tail...) {
		out = appendFuzzRecord(out, &r)
	}
	return out
}

func appendFuzzRecord(b []byte, r *wal.Record) []byte {
	var mask uint64
	set := func(bit uint64, on bool) {
		if on {
			mask |= bit
		}
	}
	set(ffID, r.ID != 0)
	set(ffTime, r.Time != 0)
	set(ffPriority, r.Priority != 0)
	set(ffKey, r.Key != "")
	set(ffDedupID, r.DedupID != "")
	set(ffHeaders, len(r.Headers) != 0)
	set(ffPayload, len(r.Payload) != 0)
	set(ffNotBefore, r.NotBefore != 0)
	set(ffDeadline, r.Deadline != 0)
	set(ffExpiresAt, r.ExpiresAt != 0)
	set(ffMaxAttempts, r.MaxAttempts != 0)
	set(ffAttempt, r.Attempt != 0)
	set(ffUntil, r.Until != 0)
	set(ffCategory, r.Category != 0)
	set(ffText, r.Text != "")
	set(ffCrashes, r.Crashes != 0)
	set(ffQueue, r.Queue != 0)
	set(ffCopies, len(r.Copies) != 0)
	set(ffUnique, r.Unique != 0)
	b = append(b, byte(r.Kind-1), byte(mask), byte(mask>>8), byte(mask>>16))
	u64 := func(v uint64) {
		if v < 0xF8 {
			b = append(b, byte(v))
			return
		}
		b = binary.LittleEndian.AppendUint64(append(b, 0xF8), v)
	}
	i64 := func(v int64) { b = binary.LittleEndian.AppendUint64(append(b, 0), uint64(v)) }
	i32 := func(v int32) {
		if v >= -8 && v < 0xF8-8 {
			b = append(b, byte(v+8))
			return
		}
		b = binary.LittleEndian.AppendUint32(append(b, 0xF8), uint32(v))
	}
	str := func(v string) {
		for i, p := range fuzzStrings {
			if p == v {
				b = append(b, byte(i))
				return
			}
		}
		if len(v) > 255 {
			panic(fmt.Sprintf("a seed string of %d bytes that is not in fuzzStrings", len(v)))
		}
		b = append(append(b, 0x80, byte(len(v))), v...)
	}
	queue := func(v uint32) { b = binary.LittleEndian.AppendUint16(append(b, 0xF0), uint16(v)) }
	if r.ID != 0 {
		u64(r.ID)
	}
	if r.Time != 0 {
		i64(r.Time)
	}
	if r.Priority != 0 {
		b = append(b, byte(r.Priority))
	}
	if r.Key != "" {
		str(r.Key)
	}
	if r.DedupID != "" {
		str(r.DedupID)
	}
	if len(r.Headers) != 0 {
		b = append(b, byte(len(r.Headers)))
		for _, h := range r.Headers {
			str(h)
		}
	}
	if len(r.Payload) != 0 {
		b = append(append(b, byte(len(r.Payload))), r.Payload...)
	}
	for _, v := range []int64{r.NotBefore, r.Deadline, r.ExpiresAt} {
		if v != 0 {
			i64(v)
		}
	}
	if r.MaxAttempts != 0 {
		i32(r.MaxAttempts)
	}
	if r.Attempt != 0 {
		i32(r.Attempt)
	}
	if r.Until != 0 {
		i64(r.Until)
	}
	if r.Category != 0 {
		b = append(b, r.Category)
	}
	if r.Text != "" {
		str(r.Text)
	}
	if r.Crashes != 0 {
		i32(r.Crashes)
	}
	if r.Queue != 0 {
		queue(r.Queue)
	}
	if len(r.Copies) != 0 {
		b = append(b, byte(len(r.Copies)))
		id := r.ID
		for _, c := range r.Copies {
			queue(c.Queue)
			b = append(b, byte(c.ID-id))
			id = c.ID
		}
	}
	if r.Unique != 0 {
		b = append(b, r.Unique)
	}
	return b
}

// statsCounts is the part of Stats that a reopened engine must agree on.
type statsCounts struct {
	Pending, Delayed, Leased, Held, Dead int
}

func visibleCounts(s Stats) statsCounts {
	return statsCounts{s.Pending, s.Delayed, s.Leased, s.Held, s.Dead}
}
