package ringwal

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ringwal/ringwal/internal/pad"
	"github.com/ringwal/ringwal/ring"
)

// This file owns the counts by state that Stats reports. They are kept as
// records move, not scanned. Every record is counted in one class from
// when it is first published or committed until it is freed. The class is
// its public state, its tier and, when it waits on its key, why. The
// verbs of record.go move the count when a record is given up in a state
// of another class. An owner holding a record (stBusy) leaves it counted
// where it was. So a reader's look or a consumer's lease in progress
// never makes a message vanish from Stats.
//
// Counting starts with the first Stats (start): one scan counts the
// records as they are, and from then on the verbs keep the counts. Until
// then the verbs only test a flag. So an engine nobody asks for Stats pays
// nothing for them; otherwise they cost three atomic adds a message, at
// enqueue, lease and ack.

// countClass is what a record is counted as: 0 for nothing (free, or
// claimed and not yet committed), else 1 + kind*NumTiers + tier.
type countClass uint8

// The kinds of count: the public states a record can be in, and one kind
// of waiting per WaitReason.
const (
	kindPending = iota // and committing
	kindDelayed
	kindLeased
	kindHeld
	kindWaiting // kindWaiting + WaitReason
	numKinds    = kindWaiting + int(WaitPaused) + 1
	numClasses  = 1 + numKinds*ring.NumTiers
)

// classOf is the class of a record in state st, of tier, waiting for why
// (meaningful only in stWaiting); 0 for a state that is not counted.
func classOf(st uint32, tier int, why WaitReason) countClass {
	var kind int
	switch st {
	case stPending, stCommitting:
		kind = kindPending
	case stDelayed:
		kind = kindDelayed
	case stLeased:
		kind = kindLeased
	case stHeld:
		kind = kindHeld
	case stWaiting:
		kind = kindWaiting + min(int(why), int(WaitPaused))
	default:
		return 0
	}
	return countClass(1 + kind*ring.NumTiers + min(tier, ring.NumTiers-1))
}

// countStripes spreads the counts over cache lines by record, so that
// producers and consumers on different cores rarely add to the same line.
// A record always counts in the same stripe, so each stripe's counts stay
// exact and never go negative.
const countStripes = 16

// A stripe keeps a tier's Pending and Leased counts in one word (the low
// and high 32 bits), so that the hot path's moves (enqueue: none to
// Pending; lease: Pending to Leased; ack: Leased to none) are each a single
// atomic add, and a reader never sees a message in both or neither. The
// other classes have a word each; a move between two words (a retry, a
// delay, a hold) is bracketed by begun and ended, a sequence lock the
// reader retries on.
const (
	numWords   = ring.NumTiers + (numKinds-2)*ring.NumTiers
	stripeSize = (numWords + 2) * 8
)

type countStripe struct {
	w            [numWords]atomic.Uint64
	begun, ended atomic.Uint64
	_            [(pad.CacheLine - stripeSize%pad.CacheLine) % pad.CacheLine]byte
}

// fieldOf is where a class is counted in a stripe: the word, and the
// shift of its field in it.
type field struct{ word, shift uint8 }

var fieldOf = func() (f [numClasses]field) {
	for kind := 0; kind < numKinds; kind++ {
		for t := 0; t < ring.NumTiers; t++ {
			c := 1 + kind*ring.NumTiers + t
			switch kind {
			case kindPending:
				f[c] = field{uint8(t), 0}
			case kindLeased:
				f[c] = field{uint8(t), 32}
			default:
				k := kind - 1 // kindDelayed is 1; kindLeased (2) has no word
				if kind > kindLeased {
					k--
				}
				f[c] = field{uint8(ring.NumTiers + k*ring.NumTiers + t), 0}
			}
		}
	}
	return f
}()

// liveCounts holds the counts by class: the default queue's in stripes,
// each named queue's in a stripe of its own (queue.counts), so that a
// queue's Stats reads one stripe and the engine's adds them all. Safe for
// concurrent use.
type liveCounts struct {
	on       atomic.Bool // the verbs keep the counts (start has begun)
	complete atomic.Bool // start has counted every record
	startMu  sync.Mutex  // serialises start
	queues   *queueTable // the named queues' stripes
	_        pad.Line
	stripes  [countStripes]countStripe
}

// stripeOf is where r is counted; the caller owns r.
func (c *liveCounts) stripeOf(r *rec) *countStripe {
	if r.queue != 0 {
		return &c.queues.at(r.queue).counts
	}
	return &c.stripes[uintptr(unsafe.Pointer(r))/unsafe.Sizeof(rec{})%countStripes]
}

// start makes the counts complete and keeps them so. It turns counting
// on, then counts every live record no move has counted since. A record's
// moves and this count both happen under its ownership. So each record is
// counted once, by whichever owns it first once counting is on. It
// returns once the counts are complete; later calls return at once.
func (c *liveCounts) start(s *slab) {
	if c.complete.Load() {
		return
	}
	c.startMu.Lock()
	defer c.startMu.Unlock()
	if c.complete.Load() {
		return
	}
	defer c.complete.Store(true)
	c.on.Store(true)
	s.each(func(_ uint32, r *rec) {
		w, ok := r.ownAny(liveStates) // waits out a committing enqueue
		if !ok {
			return
		}
		r.recount(c, w.state())
		r.putBack(w)
	})
}

// waitOut is the pause of a reader (byClass) that met a move under way
// for the try-th time. A move is a few instructions with no way out
// before its end. So the reader spins, then yields. If its mover was
// preempted mid-move, it then sleeps until the move ends.
func waitOut(try int) {
	switch {
	case try > 1000:
		time.Sleep(10 * time.Microsecond)
	case try > 10:
		runtime.Gosched()
	}
}

// move counts r, whose class changes from one to the other.
func (c *liveCounts) move(r *rec, from, to countClass) {
	s := c.stripeOf(r)
	f, t := fieldOf[from], fieldOf[to]
	switch {
	case from == 0:
		s.w[t.word].Add(1 << t.shift)
	case to == 0:
		s.w[f.word].Add(-(1 << f.shift))
	case f.word == t.word:
		s.w[t.word].Add(1<<t.shift - 1<<f.shift)
	default:
		s.begun.Add(1)
		s.w[f.word].Add(-(1 << f.shift))
		s.w[t.word].Add(1 << t.shift)
		s.ended.Add(1)
	}
}

// byClass reads the counts: each stripe as it was at one instant. A read
// that a move between two of the stripe's words overlapped is done again.
// Such a move is a few instructions with no way out between begun and
// ended, so the wait ends. A reader that meets one again and again, its
// mover preempted mid-move, yields, then sleeps, to let it end.
func (c *liveCounts) byClass() (n [numClasses]int64) {
	for i := range c.stripes {
		c.stripes[i].addTo(&n)
	}
	c.queues.each(func(q *queue) { q.counts.addTo(&n) })
	return n
}

// queueByClass reads q's counts as byClass reads the engine's.
func (c *liveCounts) queueByClass(q *queue) (n [numClasses]int64) {
	if q.num != 0 {
		q.counts.addTo(&n)
		return n
	}
	for i := range c.stripes {
		c.stripes[i].addTo(&n)
	}
	return n
}

// addTo adds the stripe's counts, as they were at one instant, to n.
func (s *countStripe) addTo(n *[numClasses]int64) {
	var w [numWords]uint64
	for try := 0; ; try++ {
		ended := s.ended.Load()
		for j := range w {
			w[j] = s.w[j].Load()
		}
		if s.begun.Load() == ended {
			break
		}
		waitOut(try)
	}
	for k := 1; k < numClasses; k++ {
		f := fieldOf[k]
		v := w[f.word]
		if f.word < ring.NumTiers { // a Pending and Leased pair
			v = uint64(uint32(v >> f.shift))
		}
		n[k] += int64(v)
	}
}

// stateCounts is what Stats reports of the counts: by public state and
// tier, and the waiting by reason.
type stateCounts struct {
	byState [Dead]int
	byTier  [Dead][ring.NumTiers]int
	waiting [WaitPaused + 1]int
}

// stateCounts reads the kept counts.
func (c *liveCounts) stateCounts() stateCounts { return countsOf(c.byClass()) }

// queueStateCounts reads q's kept counts.
func (c *liveCounts) queueStateCounts(q *queue) stateCounts { return countsOf(c.queueByClass(q)) }

func countsOf(n [numClasses]int64) stateCounts {
	var out stateCounts
	for k := 0; k < numKinds; k++ {
		st := State(k) // Pending, Delayed, Leased, Held: kinds in State's order
		if k >= kindWaiting {
			st = Pending
		}
		for t := 0; t < ring.NumTiers; t++ {
			v := int(max(n[1+k*ring.NumTiers+t], 0))
			out.byState[st] += v
			out.byTier[st][t] += v
			if k >= kindWaiting {
				out.waiting[k-kindWaiting] += v
			}
		}
	}
	return out
}
