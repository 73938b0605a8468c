package ringwal_test

// The history test's unique DedupIDs (UniqueQueued, UniqueLive, with and
// without Replace): workers send EnqueueBatches in which two messages
// share a DedupID, and lone Enqueues, from small pools of their own, so
// that repeats race the first and each other. A repeat is judged against
// the last message of its DedupID that was accepted (Message.Unique), so
// the model keeps the messages of one DedupID as one partition (a group)
// and which of them the DedupID's entry names: a repeat that finds it
// Pending or Delayed (or Leased, UniqueLive) is refused with the first's
// ID, or with Replace replaces it; otherwise it is a new message and the
// entry names it. A batch's messages of one DedupID are judged one after
// the other, in order, each at a moment of its own inside the call (a
// replacement of an earlier message is visible at once: a dequeue may
// take it before the next is judged), so each is an operation, and the
// group keeps how far each call has got. The entry is let go when its message leaves (ack,
// cancel, dead letter) and taken back by one that returns (Redrive, a
// put-back ack) when nothing holds it. A reopening may find the entry
// where replay put it (the log's last enqueue, or a snapshot's highest
// live ID: TestUniqueRepeatIsJudgedAlikeAfterACheckpointedRestart, a
// known bug), so after a barrier of kind hReopen the model allows any
// live message of the group, or the one the memory had.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ringwal/ringwal"
)

// hEntry is one message of an hEnqueueUnique call.
type hEntry struct {
	queue, payload string
	delayed        bool
	deadline       int64
	replace        bool
}

// hMember is one message of a group.
type hMember struct {
	id ringwal.ID
	s  hState
}

// hGroup is the model's state of a partition: one message, or every
// message of one unique DedupID (historyPartition).
type hGroup struct {
	msgs []hMember // by ID
	// holders are the messages the DedupID's entry may name (0: none),
	// ascending; nil stands for none. More than one only after a reopening.
	holders []ringwal.ID
	// calls are the batches some of whose messages of this DedupID have
	// been judged: the next to judge of each, by call stamp.
	calls []hCallAt
}

// hCallAt is a batch's place: message next (of its messages with the
// group's DedupID) is the next judged.
type hCallAt struct {
	call int64
	next int
}

func (g hGroup) member(id ringwal.ID) hState {
	for _, m := range g.msgs {
		if m.id == id {
			return m.s
		}
	}
	return hState{}
}

// with is g with message id in state s (g is not changed: porcupine keeps
// the states it has seen).
func (g hGroup) with(id ringwal.ID, s hState) hGroup {
	msgs := make([]hMember, 0, len(g.msgs)+1)
	placed := false
	for _, m := range g.msgs {
		switch {
		case m.id == id:
			m.s, placed = s, true
		case m.id > id && !placed:
			msgs, placed = append(msgs, hMember{id, s}), true
		}
		msgs = append(msgs, m)
	}
	if !placed {
		msgs = append(msgs, hMember{id, s})
	}
	return hGroup{msgs: msgs, holders: g.holders, calls: g.calls}
}

// judged is g once the k-th of n messages of call has been judged, or
// false if it is not that call's next.
func (g hGroup) judged(call int64, k, n int) (hGroup, bool) {
	i := slices.IndexFunc(g.calls, func(c hCallAt) bool { return c.call == call })
	if (i >= 0) != (k > 0) || (i >= 0 && g.calls[i].next != k) {
		return g, false
	}
	calls := slices.Clone(g.calls)
	switch {
	case k+1 == n && i >= 0:
		calls = slices.Delete(calls, i, i+1)
	case k+1 == n:
	case i >= 0:
		calls[i].next = k + 1
	default:
		calls = append(calls, hCallAt{call, 1})
	}
	if len(calls) == 0 {
		calls = nil
	}
	g.calls = calls
	return g, true
}

func (g hGroup) holderSet() []ringwal.ID {
	if len(g.holders) == 0 {
		return []ringwal.ID{0}
	}
	return g.holders
}

// withHolders is g with holders hs (a set: sorted, repeats dropped, {0}
// kept as nil).
func (g hGroup) withHolders(hs []ringwal.ID) hGroup {
	hs = slices.Clone(hs)
	slices.Sort(hs)
	hs = slices.Compact(hs)
	if len(hs) == 1 && hs[0] == 0 {
		hs = nil
	}
	g.holders = hs
	return g
}

// moveHolder is g with holder candidate from replaced by to.
func (g hGroup) moveHolder(from, to ringwal.ID) hGroup {
	hs := slices.Clone(g.holderSet())
	for i := range hs {
		if hs[i] == from {
			hs[i] = to
		}
	}
	return g.withHolders(hs)
}

func (g hGroup) equal(o hGroup) bool {
	return slices.Equal(g.msgs, o.msgs) && slices.Equal(g.holders, o.holders) && slices.Equal(g.calls, o.calls)
}

func (g hGroup) String() string {
	var b strings.Builder
	for _, m := range g.msgs {
		fmt.Fprintf(&b, "%d: %v; ", m.id, m.s)
	}
	if g.holders != nil || (len(g.msgs) > 0 && g.msgs[0].s.unique != ringwal.UniqueWindow) {
		fmt.Fprintf(&b, "entry names %v", g.holderSet())
	}
	for _, c := range g.calls {
		fmt.Fprintf(&b, "; call %d judged up to %d", c.call, c.next)
	}
	return b.String()
}

// blocks: a repeat under mode u finds the message it names in s and is
// refused (or replaces it).
func blocks(u ringwal.Unique, s hState) bool {
	return s.st == msPending || s.st == msDelayed || (u == ringwal.UniqueLive && s.st == msLeased)
}

// groupStep is the model's step on a partition: an operation on one of
// its messages (historyStep), what it does to the entry of a unique
// DedupID, a unique enqueue (uniqueStep), or a barrier over the whole
// group (in.all).
func groupStep(g hGroup, in hIn, out hOut) (bool, hGroup) {
	if in.kind == hEnqueueUnique {
		return uniqueStep(g, in, out)
	}
	if in.all {
		n := g
		for _, m := range g.msgs {
			ok, next := groupStep(n, hIn{kind: in.kind, id: m.id}, out)
			if !ok {
				return false, g
			}
			n = next
		}
		return true, n
	}
	s := g.member(in.id)
	ok, n := historyStep(s, in, out)
	if !ok {
		return false, g
	}
	if n == s && in.kind != hReopen {
		return true, g
	}
	ng := g.with(in.id, n)
	if s.unique != ringwal.UniqueWindow || n.unique != ringwal.UniqueWindow { // (gone keeps no mode)
		switch {
		case in.kind == hReopen && n.alive():
			ng = ng.withHolders(append(slices.Clone(ng.holderSet()), in.id)) // replay may name it
		case s.alive() && !n.alive(): // acked, cancelled, dead-lettered, or an ack on its way
			ng = ng.moveHolder(in.id, 0)
		case !s.alive() && n.alive(): // redriven, or put back: unless another holds the entry
			ng = ng.moveHolder(0, in.id)
		}
	}
	return true, ng
}

// uniqueStep is an hEnqueueUnique: one message (the k-th of n of its
// call with this DedupID: judged after the k-1 before it), answered with
// in.id. It is new (the entry names no message that blocks it) or a
// repeat of the message the entry names: with Replace, one that finds it
// Pending or Delayed replaces its payload and delay; any other repeat is
// refused, and then the call's error wraps ErrDuplicate ("dup"). A lone
// Enqueue's error is "dup" exactly when it was refused; a batch's may be
// "dup" for another of its messages.
func uniqueStep(g hGroup, in hIn, out hOut) (bool, hGroup) {
	if in.id == 0 || (out.err != "" && out.err != "dup") {
		return false, g
	}
	g, ok := g.judged(in.call, in.k, in.n)
	if !ok {
		return false, g
	}
	x, en := g.member(in.id), in.entry
	for _, h := range g.holderSet() {
		blocking := h != 0 && blocks(in.unique, g.member(h))
		s, refused := x, false
		switch {
		case x.st == msAbsent && !blocking:
			s = hState{st: msPending, queue: en.queue, payload: en.payload, dedup: in.dedup, deadline: en.deadline, unique: in.unique}
			if en.delayed {
				s.st = msDelayed
			}
		case h == in.id && blocking && x.dedup == in.dedup && x.unique == in.unique:
			s, refused = repeatUnique(s, en)
		default:
			continue
		}
		if (refused && out.err != "dup") || (in.single && !refused && out.err != "") {
			continue
		}
		return true, g.with(in.id, s).withHolders([]ringwal.ID{in.id})
	}
	return false, g
}

// repeatUnique is a repeat (entry en) of the message in s, which blocks
// it: replaced (payload and delay) or refused.
func repeatUnique(s hState, en hEntry) (hState, bool) {
	if !en.replace || (s.st != msPending && s.st != msDelayed) {
		return s, true
	}
	s.payload, s.st = en.payload, msPending
	if en.delayed {
		s.st = msDelayed
	}
	return s, false
}

// historyPartition partitions a history by message, the messages of one
// unique DedupID (those an hEnqueueUnique answered with) together.
func historyPartition(ops []porcupine.Operation) [][]porcupine.Operation {
	group := map[ringwal.ID]string{}
	for _, op := range ops {
		if in := op.Input.(hIn); in.kind == hEnqueueUnique {
			if _, ok := group[in.id]; !ok {
				group[in.id] = in.dedup
			}
		}
	}
	by := map[string][]porcupine.Operation{}
	for _, op := range ops {
		id := op.Input.(hIn).id
		key := fmt.Sprintf("m%020d", id)
		if d, ok := group[id]; ok {
			key = "u" + d
		}
		by[key] = append(by[key], op)
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, len(keys))
	for i, k := range keys {
		out[i] = by[k]
	}
	return out
}

// describePartition names a partition's message, or its DedupID and
// messages.
func describePartition(part []porcupine.Operation) string {
	var ids []ringwal.ID
	dedup := ""
	for _, op := range part {
		in := op.Input.(hIn)
		if in.kind == hEnqueueUnique {
			dedup = in.dedup
		}
		if !slices.Contains(ids, in.id) {
			ids = append(ids, in.id)
		}
	}
	if dedup == "" {
		return fmt.Sprintf("message %d", part[0].Input.(hIn).id)
	}
	slices.Sort(ids)
	return fmt.Sprintf("the messages %v of unique DedupID %q", ids, dedup)
}

// The unique pools: "q<n>" under UniqueQueued, "l<n>" under UniqueLive,
// small so that repeats meet firsts in every state; or, one time in
// three, fresh (named after fresh, never drawn again), so that a batch
// also meets its own first, new, with no entry before it.
const historyUniquePool = 6

func uniqueDedup(rng *rand.Rand, fresh string) (string, ringwal.Unique) {
	n := fmt.Sprint(rng.IntN(historyUniquePool))
	if rng.IntN(3) == 0 {
		n = "-" + fresh
	}
	if rng.IntN(2) == 0 {
		return "q" + n, ringwal.UniqueQueued
	}
	return "l" + n, ringwal.UniqueLive
}

// uniqueMessage is m (h.message's: a payload, a priority, maybe a Delay
// and a Deadline) under a unique DedupID of mode u, replacing sometimes.
func uniqueMessage(rng *rand.Rand, m ringwal.Message, dedup string, u ringwal.Unique) ringwal.Message {
	m.DedupID, m.Unique, m.Replace = dedup, u, rng.IntN(2) == 0
	return m
}

func entryOf(m ringwal.Message, queue string) hEntry {
	return hEntry{queue: queue, payload: string(m.Payload), delayed: m.Delay > 0, deadline: unixOrZero(m.Deadline),
		replace: m.Replace}
}

// uniqueEnqueue is one Enqueue of a unique DedupID into a queue.
func (h *historyRun) uniqueEnqueue(w int, rng *rand.Rand, n int) {
	dedup, u := uniqueDedup(rng, fmt.Sprintf("%d-%d-%d", len(h.phases), w, n))
	m := uniqueMessage(rng, h.message(rng, w, n), dedup, u)
	q := historyQueue(rng)
	c := h.now()
	id, err := h.enqueue(rng, q, m)
	in := hIn{kind: hEnqueueUnique, id: id, dedup: dedup, unique: u, entry: entryOf(m, q), call: c, n: 1, single: true}
	h.record1(w, c, in, hOut{err: errClass(err)})
}

// uniqueBatch is an EnqueueBatch of 2 to 5 messages, most of them under
// one or two unique DedupIDs, the second message repeating the first's
// (so that the batch meets its own entry), a few plain. Each unique
// message is an hEnqueueUnique, numbered among its DedupID's in the
// batch.
func (h *historyRun) uniqueBatch(w int, rng *rand.Rand, n int) {
	var pool [2]struct {
		dedup string
		u     ringwal.Unique
	}
	for i := range pool {
		pool[i].dedup, pool[i].u = uniqueDedup(rng, fmt.Sprintf("%d-%d-%d-%d", len(h.phases), w, n, i))
	}
	ms := make([]ringwal.Message, 2+rng.IntN(4))
	for i := range ms {
		m := h.message(rng, w, n*10+i)
		m.DedupID = ""
		switch p := pool[rng.IntN(len(pool))]; {
		case i == 1:
			ms[i] = uniqueMessage(rng, m, ms[0].DedupID, ms[0].Unique)
		case i > 1 && rng.IntN(5) == 0:
			ms[i] = m // plain
		default:
			ms[i] = uniqueMessage(rng, m, p.dedup, p.u)
		}
	}
	c := h.now()
	qs, ids, err := h.enqueueBatch(rng, ms)
	class := errClass(err)
	if len(ids) != len(ms) {
		ids = make([]ringwal.ID, len(ms)) // an error: id 0, which the model refuses
	}
	var ins []hIn
	count := map[string]int{}
	for _, m := range ms {
		count[m.DedupID]++
	}
	k := map[string]int{}
	for i, m := range ms {
		if m.DedupID == "" {
			ins = append(ins, enqIn(hEnqueue, ids[i], m, qs[i]))
			continue
		}
		ins = append(ins, hIn{kind: hEnqueueUnique, id: ids[i], dedup: m.DedupID, unique: m.Unique, entry: entryOf(m, qs[i]),
			call: c, k: k[m.DedupID], n: count[m.DedupID]})
		k[m.DedupID]++
	}
	outs := make([]hOut, len(ins))
	for i := range outs {
		outs[i].err = class
		if ins[i].kind == hEnqueue && class == "dup" {
			outs[i].err = "" // a plain message is never the repeat
		}
	}
	h.record(w, c, ins, outs)
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
