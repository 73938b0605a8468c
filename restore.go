package ringwal

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/wal"
	"github.com/ringwal/ringwal/ring"
)

// restore places the replayed messages into the slab, tiers and wheel.
// Messages leased at a crash come back pending with that attempt counted,
// or are dead-lettered as Poison once they were leased at CrashLoopLimit
// consecutive crashes. Open returns with what the housekeeper's first
// pass would make of the rest. A message whose TTL ended while the engine
// was closed is dead-lettered as Expired, and logged as any expiry. One
// that came due is pending since its due time. So Get, Stats and Peek
// read the same right after Open as a moment later.
func (e *Engine) restore(rs *replayState) error {
	now := e.now()
	// Allocating a tier's ring faults in its pages: a goroutine does it
	// while the loop below orders the messages.
	grown := make(chan struct{})
	go func() {
		defer close(grown)
		for t := range ring.NumTiers {
			if rs.tiers&(1<<t) != 0 {
				e.defaultDelivery.tiers.Tier(t)
			}
		}
	}()
	defer func() { <-grown }()
	// Tiers are FIFO in the order messages became ready, which is what
	// Peek reports too; IDs break ties (and order the rest). An ordered
	// key's messages go last and in ID order: the first placed becomes the
	// key's head, the rest wait in its queue behind it. Replay may have
	// seen the messages enqueued in that order and none moved since, as
	// when no key orders any. Then slot order from the first one's slot is
	// the order, and no record need be read to find it. Otherwise
	// orderRestored reads them all.
	var order []uint32
	if e.keys.policy == nil {
		order = rs.inOrderSlots()
	}
	if order == nil {
		order = e.orderRestored(rs, now)
	}
	// Every message enters the slab here (dead-lettered ones leave it
	// again, counted as they go), and its queue's count.
	e.ctr.added.Add(int64(len(order)))
	var notes []wal.Record
	parts := e.publishPlain(rs, order)
	e.restoreQueueRings(parts)
	for _, part := range parts {
		// The part's plain prefix is published; its refs go to the
		// tiers before anything after them is placed.
		e.pushRefs(part)
		for _, slot := range order[part.from+part.n : part.to] {
			note, err := e.restoreOne(rs, slot, now)
			if err != nil {
				return err
			}
			if note != nil {
				notes = append(notes, *note)
			}
		}
	}
	e.signalAllReady()
	e.restorePauses(rs.pauses, now)
	e.restoreQueuePauses(now)
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

// restoreOne places the replayed message in slot: a lease found at a
// crash counted (or dead-lettered as Poison), an expired message
// dead-lettered, the rest placed as it would be enqueued. It returns the
// requeue record to log for a lease found at a crash.
func (e *Engine) restoreOne(rs *replayState, slot uint32, now int64) (*wal.Record, error) {
	r := rs.slab.at(slot)
	st := rs.state(slot)
	id := r.id.Load()
	// Set now that the message is known to live: keyForPlacement
	// counts it against its key, and its queue counts it too.
	r.ks = e.keyForPlacement(r.key)
	if r.queue != 0 {
		e.queues.at(r.queue).live.Add(1)
	}
	var note *wal.Record
	if st == stLeased {
		e.recovered.crashed++
		crashes := r.crashes.Load() + 1
		if int(crashes) >= e.opts.CrashLoopLimit {
			e.recovered.poisoned++
			cause := fmt.Sprintf("leased at %d consecutive crashes", crashes)
			return nil, e.deadLetter(slot, r, classify.Poison, cause, now, false)
		}
		r.crashes.Store(crashes)
		if !r.expired(now) {
			rec := requeueRecord(id, now, r.attempts(), crashes)
			note = &rec
		}
	}
	if r.expired(now) {
		// Its TTL timer would fire at once.
		return nil, e.expire(slot, r, now, false)
	}
	if exp := r.expiresAt(); exp != 0 {
		e.hk.schedule(exp, schedTTL(id))
	}
	due := int64(0)
	if st == stDelayed && r.at > now {
		due = r.at
	}
	e.place(slot, r, due, r.at, now)
	return note, nil
}

// plainPart is a run of restore's order (order[from:to]) whose leading
// plain messages publishPlain published: refs and tiers hold their refs
// and tiers, in order, for order[from:from+len(refs)].
type plainPart struct {
	from, to int
	n        int   // plain messages published: the prefix order[from:from+n]
	refs     []ref // the default queue's, in order, and their tiers
	tiers    []uint8
	named    []*queueRefs // by queue number: each named queue's, in order; nil if none
}

// queueRefs are a named queue's refs of a part, in order, and their tiers.
type queueRefs struct {
	refs  []ref
	tiers []uint8
}

// plainPartMin is the fewest messages worth a goroutine of their own.
const plainPartMin = 1 << 15

// publishPlain cuts order into parts, one per processor. It publishes
// each part's plain messages on a goroutine of its own, from the part's
// first message up to its first other one. A plain message is pending and
// keyless (or no key has a policy), with no deadline to push and no TTL
// to schedule. So its placement is a publish and a push, and needs
// nothing another message's placement touches. With a large backlog of
// them, this is most of restore, done on every core. The parts come back
// in order. Restore pushes each part's refs and places the rest of it one
// by one, so the tiers get every message in order. It publishes before
// the push, as publishReady says: nothing pops before Open returns.
func (e *Engine) publishPlain(rs *replayState, order []uint32) []plainPart {
	n := max(1, min(runtime.GOMAXPROCS(0), len(order)/plainPartMin))
	parts := make([]plainPart, n)
	var wg sync.WaitGroup
	for i := range parts {
		p := &parts[i]
		p.from, p.to = len(order)*i/n, len(order)*(i+1)/n
		publish := func() {
			keyless, named := e.keys.policy == nil, e.queues.n > 0
			if !named {
				p.refs, p.tiers = make([]ref, 0, p.to-p.from), make([]uint8, 0, p.to-p.from)
			}
			for _, slot := range order[p.from:p.to] {
				r := rs.slab.at(slot)
				if rs.state(slot) != stPending || r.more != nil && (r.deadline() != 0 || r.expiresAt() != 0) || !keyless && r.key != "" {
					return
				}
				tier, rf := e.publishReady(slot, r, r.at)
				p.n++
				if r.queue == 0 {
					p.refs, p.tiers = append(p.refs, rf), append(p.tiers, uint8(tier))
					continue
				}
				if p.named == nil {
					p.named = make([]*queueRefs, int(e.queues.next)+1)
				}
				b := p.named[r.queue]
				if b == nil {
					b = new(queueRefs)
					p.named[r.queue] = b
				}
				b.refs, b.tiers = append(b.refs, rf), append(b.tiers, uint8(tier))
			}
		}
		if i == n-1 {
			publish()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			publish()
		}()
	}
	wg.Wait()
	return parts
}

// restoreQueueRings counts each named queue's plain messages for its cap;
// restoreOne counts the others. It sets up each queue's machinery with
// rings sized for that backlog, within Options.TierCapacity. So the
// backlog goes into its rings in batches rather than spill one message at
// a time.
func (e *Engine) restoreQueueRings(parts []plainPart) {
	var backlog [][ring.NumTiers]int
	for _, p := range parts {
		for n, b := range p.named {
			if b == nil {
				continue
			}
			if backlog == nil {
				backlog = make([][ring.NumTiers]int, len(p.named))
			}
			for _, t := range b.tiers {
				backlog[n][t]++
			}
			e.queues.at(uint16(n)).live.Add(int64(len(b.refs)))
		}
	}
	for n := range backlog {
		q := e.queues.at(uint16(n))
		if q == nil || q.rt.Load() != nil {
			continue
		}
		b := &backlog[n]
		total := 0
		for _, c := range b {
			total += c
		}
		if total == 0 {
			continue
		}
		var tierCap [ring.NumTiers]int
		for t := range tierCap {
			tierCap[t] = max(namedTierCapacity, b[t])
		}
		q.setUp(tierCap)
	}
}

// pushRefs pushes a part's plain refs into their queues' tiers, each
// queue's in order, a run of one tier at a time.
func (e *Engine) pushRefs(p plainPart) {
	pushRuns(&e.defaultDelivery, p.refs, p.tiers)
	for n, b := range p.named {
		if b != nil {
			pushRuns(e.queues.at(uint16(n)).run(), b.refs, b.tiers)
		}
	}
}

// pushRuns pushes refs into rt's tiers (tiers[i] is refs[i]'s), in order.
func pushRuns(rt *queueDelivery, refs []ref, tiers []uint8) {
	for i := 0; i < len(refs); {
		j := i + 1
		for j < len(refs) && tiers[j] == tiers[i] {
			j++
		}
		rt.pushTierBatch(int(tiers[i]), refs[i:j])
		i = j
	}
}

// orderKey orders restored messages: by when they became ready, then by
// ID.
type orderKey struct {
	at int64
	id uint64
}

func (k orderKey) compare(o orderKey) int {
	if c := cmp.Compare(k.at, o.at); c != 0 {
		return c
	}
	return cmp.Compare(k.id, o.id)
}

// slotOrder collects slots to put in the order of their keys. Restore's
// slots usually come in that order already, or in that order but for a
// rotation: slot order of IDs that wrap around the slab. Its add notes
// the descents as the slots come. So sorted undoes a rotation in place, and
// sorts only anything else, reading every key again.
type slotOrder struct {
	slots       []uint32
	first, prev orderKey
	descents    int
	cut         int // where the last descent is
}

func (o *slotOrder) add(slot uint32, k orderKey) {
	if len(o.slots) == 0 {
		o.first = k
	} else if o.prev.compare(k) > 0 {
		o.descents++
		o.cut = len(o.slots)
	}
	o.prev = k
	o.slots = append(o.slots, slot)
}

// join appends p's slots, as if added one by one.
func (o *slotOrder) join(p *slotOrder) {
	if len(p.slots) == 0 {
		return
	}
	if len(o.slots) == 0 {
		*o = slotOrder{slots: append(o.slots, p.slots...), first: p.first, prev: p.prev, descents: p.descents, cut: p.cut}
		return
	}
	n := len(o.slots)
	if p.descents > 0 {
		o.descents, o.cut = o.descents+p.descents, n+p.cut
	}
	if o.prev.compare(p.first) > 0 {
		o.descents++
		if p.descents == 0 {
			o.cut = n
		}
	}
	o.prev = p.prev
	o.slots = append(o.slots, p.slots...)
}

// sorted returns the slots in key order; key gives a slot's key.
func (o *slotOrder) sorted(key func(slot uint32) orderKey) []uint32 {
	switch {
	case o.descents == 0:
	case o.descents == 1 && o.prev.compare(o.first) <= 0:
		// The slots are B A with A and B in order and A before B:
		// reversing each and then the whole gives A B.
		slices.Reverse(o.slots[:o.cut])
		slices.Reverse(o.slots[o.cut:])
		slices.Reverse(o.slots)
	default:
		o.slots = sortByKey(o.slots, key)
	}
	return o.slots
}

// keyedSlot is a slot with its key, read once.
type keyedSlot struct {
	k    orderKey
	slot uint32
}

func (a keyedSlot) compare(b keyedSlot) int { return a.k.compare(b.k) }

// sortByKey returns slots sorted by key, reading each key once, in the
// order given (slot order: the records in memory order). Comparing
// through key would read two records at random per comparison.
//
// Restore's slots come nearly in order. A message that became ready later
// than its neighbours in the slab stands a few places ahead of where it
// belongs. Such a message is a retry, or a sampled message: its ready
// time is a precise reading a little ahead of the cached clock the others
// read.
// One pass sets aside every slot whose key is above the next one's or
// below the last kept; what stays is in order, and the few set aside are
// sorted and merged back. When more than a quarter are set aside, the
// whole is sorted instead.
func sortByKey(slots []uint32, key func(slot uint32) orderKey) []uint32 {
	ks := make([]keyedSlot, len(slots))
	for i, slot := range slots {
		ks[i] = keyedSlot{k: key(slot), slot: slot}
	}
	kept := ks[:0] // compacted in place: kept never passes i
	var aside []keyedSlot
	for i := range ks {
		ahead := i+1 < len(ks) && ks[i].compare(ks[i+1]) > 0
		behind := len(kept) > 0 && kept[len(kept)-1].compare(ks[i]) > 0
		if ahead || behind {
			aside = append(aside, ks[i])
			continue
		}
		kept = append(kept, ks[i])
	}
	if len(aside) > len(slots)/4 {
		all := append(kept, aside...) // kept and aside together are every slot once
		slices.SortFunc(all, keyedSlot.compare)
		for i := range all {
			slots[i] = all[i].slot
		}
		return slots
	}
	slices.SortFunc(aside, keyedSlot.compare)
	out := slots[:0]
	for len(kept) > 0 && len(aside) > 0 {
		if kept[0].compare(aside[0]) < 0 {
			out, kept = append(out, kept[0].slot), kept[1:]
		} else {
			out, aside = append(out, aside[0].slot), aside[1:]
		}
	}
	for _, k := range kept {
		out = append(out, k.slot)
	}
	for _, k := range aside {
		out = append(out, k.slot)
	}
	return out
}

// orderRestored returns the slots of the replayed messages in the order
// restore places them (see restore), setting each record's at to when it
// became ready. Replay left the messages in their IDs' home slots, so
// slot order is mostly ID order, wrapped around where IDs pass the slab's
// size (slotOrder). It reads every record (cache misses, mostly): the two
// halves of the slab are scanned at once, the second on a goroutine of
// its own, and their orders joined.
func (e *Engine) orderRestored(rs *replayState, now int64) []uint32 {
	s := rs.slab
	scan := func(states [][]uint8, first int, plain, ordered *slotOrder) {
		for c, sts := range states {
			for j, st := range sts {
				if st == 0 {
					continue
				}
				slot := uint32(first+c)<<slabChunkBits | uint32(j)
				r := s.at(slot)
				r.at = readySince(uint32(st), r.at, now) // from here on, when it is ready (a delayed one's due time)
				if e.keyOrdered(r.key) {
					ordered.add(slot, orderKey{id: r.id.Load()})
				} else {
					plain.add(slot, orderKey{at: r.at, id: r.id.Load()})
				}
			}
		}
	}
	half := len(rs.states) / 2
	var plain2, ordered2 slotOrder
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		scan(rs.states[half:], half, &plain2, &ordered2)
	}()
	plain := slotOrder{slots: make([]uint32, 0, rs.count)}
	var ordered slotOrder
	scan(rs.states[:half], 0, &plain, &ordered)
	<-scanned
	plain.join(&plain2)
	ordered.join(&ordered2)
	order := plain.sorted(func(slot uint32) orderKey {
		r := s.at(slot)
		return orderKey{at: r.at, id: r.id.Load()}
	})
	return append(order, ordered.sorted(func(slot uint32) orderKey { return orderKey{id: s.at(slot).id.Load()} })...)
}

// readySince is when a recovered message in state st became ready, or,
// placed at now, becomes ready, given its at as replay left it. A delayed
// one is ready at its due time, one leased at a crash now. A pending one
// is ready when its records say (see applyEnqueue and applyRequeue). For
// a delayed one not yet due it only orders.
func readySince(st uint32, at, now int64) int64 {
	switch {
	case st == stDelayed:
		return at
	case st == stLeased || at == 0:
		return now
	}
	return at
}

// closeLog logs every leased message as requeued, so that a clean Close
// is not counted as a crash against them when restore meets them again.
// Then it closes the log, leaving the next Open the size of what its
// replay will rebuild (reserve.go). Runs in Close, once nothing else can
// lease.
func (e *Engine) closeLog() error {
	now := e.now()
	var recs []wal.Record
	var hint closeHint
	e.slab.each(func(_ uint32, r *rec) {
		prev, ok := r.ownAny(liveStates)
		if !ok {
			return
		}
		hint.add(r.payLen)
		if prev.state() == stLeased {
			recs = append(recs, requeueRecord(r.id.Load(), now, prev.attempts(), r.crashes.Load()))
		}
		r.putBack(prev)
	})
	var err error
	if len(recs) > 0 {
		err = e.log.AppendBatch(recs)
	}
	if err != nil {
		hint = closeHint{} // the log may not hold what the hint says
	}
	if cerr := e.log.CloseWithHint(hint.encode()); err == nil {
		err = cerr
	}
	return err
}
