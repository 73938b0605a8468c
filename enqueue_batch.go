package ringwal

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ringwal/ringwal/internal/wal"
)

// This file owns EnqueueBatch: admitting a batch as a whole, so that it
// never waits while it holds something another goroutine may wait for.

// EnqueueBatch adds ms with one log write and returns their IDs in order.
// It waits for space as Enqueue does. Messages whose DedupID repeats get
// the first message's ID, are not added again, and the error wraps
// ErrDuplicate; the others are added all the same. Unique and Replace
// work as for Enqueue. A message of the batch counts as the first of a
// later one with its DedupID, which, with Replace, replaces it. Replaces
// of messages from before the batch are done as the batch meets them:
// they stay done if the batch then fails. Invalid input (a
// message Enqueue would refuse, or more than MaxMessages messages) rejects
// the whole batch with ErrInvalid before anything is added. Safe for
// concurrent use.
//
// It may wait for room, for a key's MaxQueued, or for a repeat's first
// enqueue being logged. Whatever it waits for, it waits holding no
// record. It admits every key and claims every record without waiting.
// When one of them would wait, it gives back all it took, waits, and
// starts again. A batch that held records while it waited would stall
// every scan that waits out a busy record, the housekeeper's among them.
// With that scan it would stall the timers that would make room. If it
// fails, it leaves nothing behind: no record, no key count, no DedupID
// reservation.
func (e *Engine) EnqueueBatch(ctx context.Context, ms []Message) ([]ID, error) {
	return e.enqueueBatch(ctx, ms, nil)
}

// enqueueBatch is EnqueueBatch; with of set, ms are the copies of a
// Publish of *of, logged as one record (publishRecord).
func (e *Engine) enqueueBatch(ctx context.Context, ms []Message, of *Message) ([]ID, error) {
	if err := e.errIfClosing(); err != nil {
		return nil, err
	}
	if len(ms) > e.opts.MaxMessages {
		return nil, invalidf("batch of %d exceeds MaxMessages %d", len(ms), e.opts.MaxMessages)
	}
	if e.opts.OnEnqueue != nil && of == nil { // Publish ran it on *of
		ms = slices.Clone(ms) // the hook changes the engine's copies, not the caller's
		for i := range ms {
			ms[i] = e.onEnqueue(ctx, ms[i])
		}
	}
	for i := range ms {
		if err := e.validate(&ms[i]); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	qs, err := e.batchQueues(ms)
	if err != nil {
		return nil, err
	}
	b := batchIntake{e: e, ms: ms, qs: qs, of: of, ids: make([]ID, len(ms)), slots: make([]uint32, 0, len(ms))}
	for i := range ms {
		if ms[i].Unique != UniqueWindow {
			if err := e.requireUnique(); err != nil {
				return nil, err
			}
			b.uniq = make([]batchUnique, len(ms))
			break
		}
	}
	for {
		ids, again, err := b.try(ctx)
		if !again {
			return ids, err
		}
	}
}

// batchIntake is one EnqueueBatch call's state across its tries.
type batchIntake struct {
	e     *Engine
	ms    []Message
	qs    []*queue // ms[i]'s queue; nil when every message goes to the default queue
	of    *Message // the published message, when ms are its copies
	ids   []ID
	slots []uint32      // claimed records of messages to add, in order
	kss   []*keyState   // keys admitted for messages not yet claimed
	mine  *dedupLogging // the batch's DedupID reservations, while logging
	now   int64
	uniq  []batchUnique // per message, when the batch has a unique mode
	// replaced counts the messages of the current try that replaced an
	// earlier message of the batch.
	replaced int
}

// batchUnique is a unique message's verdict, judged before the batch
// holds anything (judgeUniques).
type batchUnique struct {
	answered bool   // refused or replaced a message from before the batch: final
	replaced bool   // answered by replacing
	first    ID     // the answer
	seen     uint64 // accepted: the seq of the entry judged
}

// try is one attempt at the whole batch. again reports that it met
// something to wait for, gave back all it held, waited, and the batch
// must start over.
func (b *batchIntake) try(ctx context.Context) (_ []ID, again bool, _ error) {
	e := b.e
	if err := b.awaitFirsts(ctx); err != nil {
		return nil, false, err
	}
	if err := b.judgeUniques(ctx); err != nil {
		return nil, false, err
	}
	if err := b.awaitQueueRoom(ctx); err != nil {
		return nil, false, err
	}
	if need := len(b.ms) - b.answered(); need > 0 && !e.hasSpace(&e.defaultQueue, -1, need) {
		// Repeats need no room (see enqueue); reserve still decides.
		known := make([]ID, len(b.ms))
		for i := range b.ms {
			if first, dup := e.knownDuplicate(&b.ms[i]); dup {
				known[i] = first
				need--
			}
		}
		b.answer(known)
		if need == 0 {
			e.ctr.duplicates.Add(uint64(len(b.ms)))
			return known, false, fmt.Errorf("%d of %d messages: %w", len(b.ms), len(b.ms), ErrDuplicate)
		}
		if err := e.awaitSpace(ctx, &e.defaultQueue, -1, need, true); err != nil {
			return nil, false, err
		}
	}
	if again, err := b.admitKeys(ctx); again || err != nil {
		return nil, again, err
	}
	if again, err := b.claim(ctx); again || err != nil {
		return nil, again, err
	}
	if e.log != nil && len(b.slots) > 0 {
		for _, slot := range b.slots {
			e.slab.at(slot).commit(e.counts)
		}
		if err := e.log.AppendBatch(b.records()); err != nil {
			for _, slot := range b.slots {
				e.slab.at(slot).uncommit()
			}
			b.giveBack()
			return nil, false, fmt.Errorf("ringwal: enqueue batch: %w", mapWALError(err))
		}
		if b.mine != nil {
			for _, slot := range b.slots {
				r := e.slab.at(slot)
				if d := r.dedupID(); d != "" {
					e.dedup.logged(d, r.id.Load())
				}
			}
			close(b.mine.done)
		}
	}
	for _, slot := range b.slots {
		q := e.queueOf(e.slab.at(slot)) // read while the record is ours
		e.publish(slot, b.now)
		if q.num != 0 {
			q.enqueued.Add(1)
		}
	}
	b.answer(b.ids)
	dups := len(b.ms) - len(b.slots) - b.replaced
	for _, u := range b.uniq {
		if u.replaced {
			dups--
		}
	}
	if dups > 0 {
		return b.ids, false, fmt.Errorf("%d of %d messages: %w", dups, len(b.ms), ErrDuplicate)
	}
	return b.ids, false, nil
}

// records returns the log records of the claimed messages: one enqueue
// record each, or the one record of a Publish's copies.
func (b *batchIntake) records() []wal.Record {
	e := b.e
	if b.of != nil && len(b.slots) > 1 {
		recs := make([]wal.Record, 1)
		e.publishRecord(&recs[0], b.slots, b.of.DedupID)
		return recs
	}
	recs := make([]wal.Record, len(b.slots))
	for i, slot := range b.slots {
		r := e.slab.at(slot)
		enqueueRecord(&recs[i], r, r.id.Load())
	}
	return recs
}

// batchQueues resolves each message's queue (declaring those not declared
// yet), or returns nil when all go to the default queue.
func (e *Engine) batchQueues(ms []Message) ([]*queue, error) {
	var qs []*queue
	for i := range ms {
		if ms[i].Queue == "" {
			continue
		}
		if qs == nil {
			qs = make([]*queue, len(ms))
			for j := range qs {
				qs[j] = &e.defaultQueue
			}
		}
		q, err := e.queueNamed(ms[i].Queue, true)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		q.run()
		qs[i] = q
	}
	return qs, nil
}

func (b *batchIntake) queue(i int) *queue {
	if b.qs == nil {
		return &b.e.defaultQueue
	}
	return b.qs[i]
}

// awaitQueueRoom waits, holding nothing, until each named queue's cap
// has room for the batch's messages of that queue.
func (b *batchIntake) awaitQueueRoom(ctx context.Context) error {
	if b.qs == nil {
		return nil
	}
	need := make(map[*queue]int)
	for _, q := range b.qs {
		if q.num != 0 {
			need[q]++
		}
	}
	for q, n := range need {
		if c := q.eff.Load().maxMessages; c > 0 && int64(n) > c {
			return invalidf("batch of %d messages for queue %q exceeds its MaxMessages %d", n, q.name, c)
		}
		if err := b.e.awaitSpace(ctx, q, -1, n, true); err != nil {
			return err
		}
	}
	return nil
}

// awaitFirsts waits, holding nothing, until no first enqueue of the
// batch's DedupIDs is being logged.
func (b *batchIntake) awaitFirsts(ctx context.Context) error {
	if b.e.log == nil {
		return nil
	}
	for i := range b.ms {
		if m := &b.ms[i]; b.e.dedups(m) {
			if err := b.e.dedup.awaitLogged(ctx, m.DedupID, b.e.done); err != nil {
				return err
			}
		}
	}
	return nil
}

// admitKeys counts every message against its key (isolation, MaxQueued)
// without waiting. When a key is at MaxQueued it gives every admission
// back, waits for that key's room, and asks for another try. A batch that
// held one key's room while it waited for another's could wait forever on
// a batch doing the reverse.
func (b *batchIntake) admitKeys(ctx context.Context) (again bool, err error) {
	e := b.e
	b.kss = b.kss[:0]
	for i := range b.ms {
		var ks *keyState
		if key := b.ms[i].Key; key != "" && !b.isAnswered(i) {
			if ks, err = e.keyForEnqueue(ctx, key, false); err != nil {
				b.giveBack()
				if !errors.Is(err, ErrFull) || b.isolated(key) {
					return false, err
				}
				// At MaxQueued: wait for room, holding nothing else, and
				// give that room back too: the next try takes it with the rest.
				if ks, err = e.keyForEnqueue(ctx, key, true); err != nil {
					return false, err
				}
				ks.unenter()
				return true, nil
			}
		}
		b.kss = append(b.kss, ks)
	}
	return false, nil
}

// isolated reports whether key is refused for isolation (its breaker is
// open and its held messages fill their share), which no wait cures.
func (b *batchIntake) isolated(key string) bool {
	if b.e.held.cappedKeys.Load() == 0 {
		return false
	}
	_, capped := b.e.held.capped(key)
	return capped
}

// claim claims a record for every admitted message and reserves its
// DedupID, without waiting. A message that repeats a durable DedupID is
// answered with the first's ID and not added. When no slot is free, or a
// DedupID's first enqueue is being logged by someone else, it gives all
// back and asks for another try (after a pause for a slot; awaitFirsts
// waits for the log).
func (b *batchIntake) claim(ctx context.Context) (again bool, err error) {
	e := b.e
	var ownFirsts map[string]ID // unique DedupIDs this try has reserved
	for i := range b.ms {
		m := &b.ms[i]
		ks := b.kss[i]
		if b.isAnswered(i) {
			continue // refused or replaced before the batch held anything
		}
		if m.Unique != UniqueWindow && e.dedups(m) {
			// A repeat of an earlier message of the batch: that one is
			// queued (the batch holds it), so the repeat is its duplicate
			// under either mode. The dedup index cannot tell: its entry
			// is the batch's own and judgeUniques judged nothing for it.
			if first, ok := ownFirsts[m.DedupID]; ok {
				ks.unenter()
				b.kss[i] = nil
				b.ids[i] = first
				e.ctr.duplicates.Add(1)
				if m.Replace {
					b.replaceMine(first, m)
				}
				continue
			}
		}
		slot, id, err := e.claim(e.now(), m, b.queue(i), ks)
		if err == nil && b.of != nil && len(b.slots) > 0 {
			// A Publish's copies are one record, with one Time: each
			// copy counts its Delay and TTL from the first's (the record
			// is ours: filled again, it changes nothing else).
			if at := e.slab.at(b.slots[0]).enqueuedAt; e.slab.at(slot).enqueuedAt != at {
				e.slab.at(slot).fill(m, b.queue(i).num, at, 0, 0, nil, ks)
			}
		}
		b.kss[i] = nil // the record carries it from here (unclaim unenters it)
		if err == errQueueGone {
			ks.unenter()
			b.giveBack()
			if b.qs, err = e.batchQueues(b.ms); err != nil {
				return false, err
			}
			return true, nil
		}
		if err != nil {
			ks.unenter()
			b.giveBack()
			if err := e.pause(ctx); err != nil {
				return false, err
			}
			return true, nil
		}
		now := e.slab.at(slot).enqueuedAt
		b.now = now
		if e.dedups(m) {
			if e.log != nil && b.mine == nil {
				b.mine = newDedupLogging() // the first reservation of this try
			}
			var seen uint64
			if b.uniq != nil {
				seen = b.uniq[i].seen
			}
			first, dup, again := e.reserveDedup(m, slot, id, now, seen, b.mine)
			if again {
				b.giveBack()
				return true, nil
			}
			if dup {
				b.ids[i] = first
				if m.Replace && m.Unique != UniqueWindow {
					b.replaceMine(first, m)
				}
				continue
			}
		}
		b.ids[i] = id
		b.slots = append(b.slots, slot)
		if m.Unique != UniqueWindow && e.dedups(m) {
			if ownFirsts == nil {
				ownFirsts = make(map[string]ID)
			}
			ownFirsts[m.DedupID] = id
		}
	}
	return false, nil
}

// giveBack undoes everything the current try holds: claimed records (and
// their DedupID reservations, whose waiters then go on), and key
// admissions of messages not yet claimed.
func (b *batchIntake) giveBack() {
	for _, slot := range b.slots {
		b.e.giveBack(slot, true)
	}
	b.slots = b.slots[:0]
	for i, ks := range b.kss {
		ks.unenter()
		b.kss[i] = nil
	}
	if b.mine != nil {
		close(b.mine.done)
		b.mine = nil
	}
	for i := range b.ids {
		b.ids[i] = 0
	}
	b.replaced = 0
}

// judgeUniques judges, holding nothing, each unique message of the batch
// whose DedupID no earlier message of the batch carries. The others are
// judged against that earlier message as the batch claims them. Refused
// and replaced ones are answered for good. Accepted ones remember the
// entry they were judged against.
func (b *batchIntake) judgeUniques(ctx context.Context) error {
	if b.uniq == nil {
		return nil
	}
	var before map[string]bool // DedupIDs of earlier messages the batch adds
	for i := range b.ms {
		m, u := &b.ms[i], &b.uniq[i]
		if u.answered || !b.e.dedups(m) {
			continue
		}
		if before[m.DedupID] {
			u.seen = 0 // the batch's own message is the first
			continue
		}
		if m.Unique != UniqueWindow {
			first, v, seen, err := b.e.awaitUnique(ctx, m)
			switch v {
			case uniqueRefused, uniqueReplaced:
				if err != nil {
					return fmt.Errorf("message %d: %w", i, err)
				}
				*u = batchUnique{answered: true, replaced: v == uniqueReplaced, first: first}
				continue
			case uniqueAgain:
				return err
			}
			u.seen = seen
		}
		if before == nil {
			before = make(map[string]bool)
		}
		before[m.DedupID] = true
	}
	return nil
}

// isAnswered reports whether message i was answered by judgeUniques.
func (b *batchIntake) isAnswered(i int) bool { return b.uniq != nil && b.uniq[i].answered }

// answered is how many messages judgeUniques answered.
func (b *batchIntake) answered() int {
	n := 0
	for _, u := range b.uniq {
		if u.answered {
			n++
		}
	}
	return n
}

// answer writes judgeUniques' answers into ids.
func (b *batchIntake) answer(ids []ID) {
	for i, u := range b.uniq {
		if u.answered {
			ids[i] = u.first
		}
	}
}

// replaceMine replaces the message first, claimed earlier in this try
// and not yet logged, with m (Message.Replace within a batch): its record
// is the batch's own, so its fields change in place and its enqueue
// record says the new ones.
func (b *batchIntake) replaceMine(first ID, m *Message) {
	e := b.e
	for _, slot := range b.slots {
		if r := e.slab.at(slot); r.id.Load() == first {
			r.replace(m, r.at)
			b.replaced++
			// reserveDedup counted m as a duplicate: it is not one.
			e.ctr.duplicates.Add(^uint64(0))
			return
		}
	}
}
