package sched

import (
	"math"
	"math/bits"
	"time"
)

// Entry is what a timer or a deadline carries; the engine interprets it.
//
// Cancellation is lazy: the engine bumps a per-record generation when the
// record moves on, and an entry whose Gen no longer matches is dropped when
// it surfaces (in the fire callback, or by DeadlineHeap.PopIf's valid
// function). Nothing in this package removes an entry early, which is what
// keeps Add O(1) and lock-free feeding possible.
type Entry struct {
	ID   uint64 // record handle
	Gen  uint32 // the record's generation when the entry was scheduled
	Kind uint8  // engine-defined: due (delay or retry), lease expiry, TTL expiry, ...
}

const (
	// DefaultTick is the wheel's resolution when none is given.
	DefaultTick = time.Millisecond

	// MinHorizon is the delay every wheel covers without the overflow list;
	// later entries still fire on time, they just wait in the overflow list
	// until the wheel's top level reaches them.
	MinHorizon = 30 * 24 * time.Hour

	wheelBits  = 6 // 64 slots per level: one uint64 occupancy word per level
	wheelSlots = 1 << wheelBits
	wheelMask  = wheelSlots - 1
	maxLevels  = 10 // 64^10 = 2^60 ticks, more than 36 years at 1ns a tick

	chunkBits = 12 // nodes are allocated 4096 at a time and, past the first 4096, never moved
	chunkSize = 1 << chunkBits
	chunkMask = chunkSize - 1
	// firstChunk is the first chunk's size in a new wheel (2 KiB); it
	// doubles, copied, until it reaches chunkSize, so that an owner with
	// a handful of entries (an idle engine) does not hold 128 KiB.
	firstChunk = 64
)

// wheelNode is one pending entry. Nodes live in chunks and link by index,
// so adding copies existing nodes only while the first chunk grows to its
// full size, and a node costs 32 bytes with no pointer for the garbage
// collector to scan. A *wheelNode is valid until the next alloc.
type wheelNode struct {
	at   int64 // due time as nanoseconds since Wheel.start (saturating)
	e    Entry
	next uint32 // index of the next node in the same list; 0 ends it
}

// list is a FIFO of nodes linked by index; the zero value is empty. Index 0
// is never handed out, so it serves as the nil link.
type list struct{ head, tail uint32 }

// Wheel is a hierarchical timing wheel (Varghese and Lauck's scheme 6, with
// Kafka's cascading of coarser levels into finer ones as time reaches them).
//
// Level L has 64 slots of 64^L ticks each. An entry due at tick t sits at
// the lowest level whose slot spans t within the current rotation of the
// next level up; when time enters that slot, the entry moves down, until it
// reaches level 0 and fires. Levels are added until 64^levels ticks cover
// MinHorizon; anything further sits in an overflow list that is re-sorted
// each time the top level completes a rotation.
//
// Add is O(1). Advance costs O(fired + moved) plus O(levels) per occupied
// slot it reaches: it jumps over empty stretches using a per-level
// occupancy bitmap, so advancing by 40 days with nothing due is cheap.
//
// A Wheel is not safe for concurrent use: it belongs to one goroutine (in
// ringwal, the engine's housekeeper; or a Timers owner). Nodes are recycled through a free list, so
// in steady state neither Add nor Advance allocates.
type Wheel struct {
	tick   int64     // nanoseconds per tick, > 0
	start  time.Time // tick 0; due times are stored relative to it
	cur    uint64    // the next tick Advance has yet to process
	levels int

	occupied [maxLevels]uint64 // bit s of level L set: slots[L][s] is non-empty
	slots    [maxLevels][wheelSlots]list
	slotMin  [wheelSlots]int64 // earliest due offset in each non-empty level-0 slot
	overflow list              // due beyond the top level's current rotation
	ready    list              // already due; handed out at the next Advance
	readyMin int64             // earliest due time in ready (valid when ready is non-empty)

	n      int // pending entries
	chunks [][]wheelNode
	nodes  uint32 // nodes the chunks hold
	used   uint32 // nodes ever handed out, including the nil node 0
	free   uint32 // head of the free list
}

// NewWheel returns an empty wheel whose tick 0 is start. A tick <= 0 means
// DefaultTick.
func NewWheel(tick time.Duration, start time.Time) *Wheel {
	if tick <= 0 {
		tick = DefaultTick
	}
	w := &Wheel{tick: int64(tick), start: start}
	// Enough levels that 64^levels ticks reach MinHorizon.
	horizonTicks := uint64(MinHorizon / tick)
	w.levels = 1
	for w.levels < maxLevels && horizonTicks>>(wheelBits*w.levels) != 0 {
		w.levels++
	}
	w.chunks = [][]wheelNode{make([]wheelNode, firstChunk)}
	w.nodes = firstChunk
	w.used = 1 // node 0 is the nil link
	return w
}

// Tick returns the wheel's resolution. It never changes, so it is safe
// to call from any goroutine.
func (w *Wheel) Tick() time.Duration { return time.Duration(w.tick) }

// Len returns the number of entries not yet handed out. Not safe for
// concurrent use (see Wheel).
func (w *Wheel) Len() int { return w.n }

// Add schedules e to be handed out by the first Advance whose now is at or
// after at; an at in the past (or before the wheel's start) is handed out
// by the next Advance (whose now must not be earlier than the previous
// one's). The wheel never hands an entry out before its time.
//
// O(1); no allocation once the node pool has grown to the peak number of
// pending entries. Not safe for concurrent use.
func (w *Wheel) Add(at time.Time, e Entry) {
	w.addOffset(int64(at.Sub(w.start)), e) // saturates at ±292 years, fine for due times
}

// addOffset is Add with the due time given as nanoseconds since the
// wheel's start (what Timers' producers compute).
func (w *Wheel) addOffset(off int64, e Entry) {
	i := w.alloc()
	nd := w.node(i)
	nd.at, nd.e = off, e
	w.n++
	w.place(i, off)
}

// dueTick is the first tick at whose processing off is due: off rounded up
// to the tick, so that nothing fires early. Negative offsets (before start)
// report ok=false: they are due now.
func (w *Wheel) dueTick(off int64) (t uint64, ok bool) {
	if off < 0 {
		return 0, false
	}
	q := off / w.tick
	if off%w.tick != 0 {
		q++
	}
	return uint64(q), true
}

// place links node i (due at offset off) into the list where it belongs
// relative to w.cur.
func (w *Wheel) place(i uint32, off int64) {
	t, ok := w.dueTick(off)
	if !ok || t < w.cur {
		// Already due: the tick it belongs to has been processed. It waits
		// for the next Advance rather than firing from inside this one, so a
		// fire callback that keeps re-adding past entries cannot loop.
		if w.ready.head == 0 || off < w.readyMin {
			w.readyMin = off
		}
		w.push(&w.ready, i)
		return
	}
	// The level is the highest base-64 digit in which t and cur differ:
	// within level L's slot for t, every tick shares t's higher digits with
	// cur, so the slot is reached before the level above rotates.
	level := 0
	if x := t ^ w.cur; x >= wheelSlots {
		level = (bits.Len64(x) - 1) / wheelBits
	}
	if level >= w.levels {
		w.push(&w.overflow, i)
		return
	}
	slot := (t >> (wheelBits * level)) & wheelMask
	if level == 0 && (w.occupied[0]&(1<<slot) == 0 || off < w.slotMin[slot]) {
		w.slotMin[slot] = off
	}
	w.push(&w.slots[level][slot], i)
	w.occupied[level] |= 1 << slot
}

// Advance hands every entry due at or before now to fire, and no other,
// earlier ticks before later ones (entries of the same tick in the order
// they reached it), and returns how many it handed out. It is exact: the
// tick only sets the granularity of the buckets, not of the due times. fire may call Add: entries it
// adds that are already due wait for the next Advance. A nil fire drops the
// entries. A now earlier than a previous Advance's hands out only entries
// added in the past since then.
//
// Not safe for concurrent use.
func (w *Wheel) Advance(now time.Time, fire func(at time.Time, e Entry)) int {
	fired := 0
	if w.ready.head != 0 {
		due := w.ready
		w.ready = list{}
		fired += w.fireList(due, fire)
	}
	off := int64(now.Sub(w.start))
	if off < 0 {
		return fired
	}
	target := uint64(off / w.tick) // the last tick now has reached
	for {
		ev, ok := w.nextEvent()
		if !ok || ev > target {
			break
		}
		if ev != w.cur {
			// A coarser slot is reached: move its entries down.
			w.cur = ev
			w.cascade()
			continue
		}
		slot := w.cur & wheelMask
		due := w.slots[0][slot]
		w.slots[0][slot] = list{}
		w.occupied[0] &^= 1 << slot
		// Move past this tick before firing so that whatever fire adds is
		// placed relative to the ticks still to come.
		w.cur++
		w.cascade()
		fired += w.fireList(due, fire)
	}
	if target+1 > w.cur {
		// Nothing is due in between: jump. Every occupied slot lies beyond
		// target, so the placement of pending entries stays valid.
		w.cur = target + 1
		w.cascade()
	}
	// now may lie inside tick cur: hand out the entries of that tick that
	// are due by now, so that Advance is exact rather than tick-rounded.
	if slot := w.cur & wheelMask; w.occupied[0]&(1<<slot) != 0 && w.slotMin[slot] <= off {
		fired += w.fireDueInSlot(slot, off, fire)
	}
	return fired
}

// fireDueInSlot hands out the entries of level-0 slot (the current,
// partially elapsed tick) due at or before off and keeps the rest.
func (w *Wheel) fireDueInSlot(slot uint64, off int64, fire func(time.Time, Entry)) int {
	pending := w.slots[0][slot]
	w.slots[0][slot] = list{}
	w.occupied[0] &^= 1 << slot
	var due list
	for i := pending.head; i != 0; {
		nd := w.node(i)
		next := nd.next
		if nd.at <= off {
			w.push(&due, i)
		} else {
			w.place(i, nd.at) // back into the same slot, keeping slotMin right
		}
		i = next
	}
	return w.fireList(due, fire)
}

// NextAt returns a lower bound on the earliest pending due time: an Advance
// with an earlier now hands out nothing (unless Add is called in between).
// It is exact when the earliest entry sits in the finest level (always so
// within 64 ticks), and otherwise the start of the coarser slot that holds
// it, which is what a sleeping owner needs: sleep until NextAt, Advance,
// ask again. After an Advance(now) it is always after now. ok is false
// when the wheel is empty. Not safe for concurrent use.
func (w *Wheel) NextAt() (at time.Time, ok bool) {
	if w.ready.head != 0 {
		return w.start.Add(time.Duration(w.readyMin)), true
	}
	ev, ok := w.nextEvent()
	if !ok {
		return time.Time{}, false
	}
	if w.occupied[0]&(1<<(ev&wheelMask)) != 0 && ev-w.cur < wheelSlots {
		return w.start.Add(time.Duration(w.slotMin[ev&wheelMask])), true
	}
	// A coarser slot starting at tick ev holds ticks >= ev, whose due
	// offsets exceed (ev-1) ticks.
	if ev-1 >= uint64(math.MaxInt64/w.tick) {
		return w.start.Add(time.Duration(math.MaxInt64)), true
	}
	return w.start.Add(time.Duration(int64(ev-1)*w.tick + 1)), true
}

// nextEvent returns the first tick >= cur at which something happens: a
// level-0 slot fires, a coarser slot cascades, or the overflow list is
// re-sorted. Finer levels always come first: their slots lie within the
// current rotation of the level above.
func (w *Wheel) nextEvent() (uint64, bool) {
	cur := w.cur
	if m := w.occupied[0] >> (cur & wheelMask); m != 0 {
		return cur + uint64(bits.TrailingZeros64(m)), true
	}
	for level := 1; level < w.levels; level++ {
		shift := uint(wheelBits * level)
		digit := (cur >> shift) & wheelMask
		// Slots at or before cur's digit are empty at levels >= 1: an entry
		// whose digit equals cur's sits lower down.
		if m := w.occupied[level] >> digit >> 1; m != 0 {
			slot := digit + 1 + uint64(bits.TrailingZeros64(m))
			base := cur >> (shift + wheelBits) << (shift + wheelBits)
			return base + slot<<shift, true
		}
	}
	if w.overflow.head != 0 {
		shift := uint(wheelBits * w.levels)
		return (cur>>shift + 1) << shift, true
	}
	return 0, false
}

// cascade moves down the entries of every coarser slot that w.cur has just
// entered, coarsest first, and re-sorts the overflow list when the top
// level has rotated.
func (w *Wheel) cascade() {
	cur := w.cur
	top := bits.TrailingZeros64(cur) / wheelBits // levels whose boundary cur is on
	if top == 0 {
		return
	}
	if top >= w.levels {
		if w.overflow.head != 0 {
			moving := w.overflow
			w.overflow = list{}
			w.replace(moving)
		}
		top = w.levels - 1
	}
	for level := top; level >= 1; level-- {
		slot := (cur >> (wheelBits * level)) & wheelMask
		if w.occupied[level]&(1<<slot) == 0 {
			continue
		}
		moving := w.slots[level][slot]
		w.slots[level][slot] = list{}
		w.occupied[level] &^= 1 << slot
		w.replace(moving)
	}
}

// replace places every node of l again, relative to the current tick.
func (w *Wheel) replace(l list) {
	for i := l.head; i != 0; {
		nd := w.node(i)
		next := nd.next
		nd.next = 0
		w.place(i, nd.at)
		i = next
	}
}

// fireList hands out and frees every node of l.
func (w *Wheel) fireList(l list, fire func(time.Time, Entry)) int {
	n := 0
	for i := l.head; i != 0; {
		nd := w.node(i)
		next, off, e := nd.next, nd.at, nd.e
		w.release(i) // before fire, so that an Add from fire can reuse it
		w.n--
		n++
		if fire != nil {
			fire(w.start.Add(time.Duration(off)), e)
		}
		i = next
	}
	return n
}

func (w *Wheel) push(l *list, i uint32) {
	w.node(i).next = 0
	if l.head == 0 {
		l.head = i
	} else {
		w.node(l.tail).next = i
	}
	l.tail = i
}

func (w *Wheel) node(i uint32) *wheelNode {
	return &w.chunks[i>>chunkBits][i&chunkMask]
}

// alloc returns a free node index, growing the pool when the free list is
// empty: the first chunk doubles (its nodes copied) up to chunkSize, then
// the pool grows by one chunk (amortized: one allocation per 4096 nodes of
// peak). It may move the first chunk's nodes: no *wheelNode survives it.
func (w *Wheel) alloc() uint32 {
	if i := w.free; i != 0 {
		w.free = w.node(i).next
		return i
	}
	i := w.used
	if i == w.nodes {
		if i < chunkSize {
			w.chunks[0] = append(w.chunks[0], make([]wheelNode, i)...)
		} else {
			w.chunks = append(w.chunks, make([]wheelNode, chunkSize))
		}
		w.nodes += min(i, chunkSize)
	}
	w.used++
	return i
}

func (w *Wheel) release(i uint32) {
	w.node(i).next = w.free
	w.free = i
}
