package ringwal

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/pad"
)

// counters are the engine's lifetime totals since Open. Current counts by
// state are kept apart, by record (counts.go). The one hot counter is
// padded.
type counters struct {
	// freed counts messages that left the slab by Ack, dead-lettering or
	// Cancel.
	// Acked and the live count are derived from it, so the hot path pays
	// one counter for both.
	freed pad.Uint64   // on its own line: producers and consumers on other cores
	added atomic.Int64 // messages placed without a new ID: recovery, redrive
	// idleWait: WaitIdle's sleepers (waitidle.go), woken through the
	// engine's space sleepers (sleepers.idle).
	idleWait idleWaiters

	nacked          atomic.Uint64
	retried         atomic.Uint64
	expired         atomic.Uint64
	leaseExpiries   atomic.Uint64
	duplicates      atomic.Uint64
	backpressure    atomic.Uint64
	redriven        atomic.Uint64
	requeued        atomic.Uint64
	requeuedLeased  atomic.Uint64
	cancelled       atomic.Uint64 // Cancel calls that removed a message
	cancelledLeased atomic.Uint64 // of which leased ones
	published       atomic.Uint64 // Publish calls that added copies
	unrouted        atomic.Uint64 // Publish calls to a topic no queue binds
	deadLettered    [numCategories]atomic.Uint64
	deadEvicted     atomic.Uint64 // dead letters removed by MaxDeadLetters
	deadPurged      atomic.Uint64 // dead letters removed by a purge or retention
	deadReviewed    atomic.Uint64 // successful MarkReviewed calls
	unused          atomic.Uint64 // IDs taken but never enqueued (duplicates, collisions, failed writes)
	// moves is held shared by each message moving between the slab and
	// the dead-letter store (a dead-lettering, a redrive), and exclusively
	// by Stats' read of both, so that a message in transit is counted in
	// exactly one of them.
	moves        moveWindow
	enqueuedBase uint64 // nextID at Open: Enqueued = nextID - base - unused
}

// numCategories is the number of classify categories; a test checks it
// against classify.Categories so a new category cannot be miscounted.
const numCategories = 8

func categoryIndex(c classify.Category) int {
	if int(c) >= numCategories {
		return int(classify.Unknown)
	}
	return int(c)
}

// moveWindow orders moves between the slab and the dead-letter store
// against Stats' read of both. A mover is inside it from the moment the
// message enters one side to the moment it has left the other: a store's
// Add and a slot's release, or a store's Remove and a record counted
// pending. That spans a few instructions and the store's O(1) Add or
// Remove, never a log wait or a key's lock. Stats reads optimistically
// first, as a sequence lock. A read during which no move was under way is
// consistent, and costs the movers nothing. Only a reader that keeps
// meeting moves takes the lock exclusively. Under load, overlapping
// dead-letterings may leave no instant free of moves: with eight
// goroutines dead-lettering, a Stats call once took seconds. Since
// sync.RWMutex prefers a waiting writer, new moves then wait for that one
// read, and Stats never starves.
type moveWindow struct {
	mu           sync.RWMutex
	begun, ended atomic.Uint64
}

// optimisticReads is how many reads Stats tries before it takes the lock:
// the first ones after a yield, the later ones after a short sleep. So a
// reader meeting a steady stream of moves spends about a millisecond
// before it makes movers wait. A monitoring read can wait that long; a
// Nack should not wait for it.
const (
	optimisticReads = 64
	yieldingReads   = 16
	readPause       = 20 * time.Microsecond
)

// begin and end bracket one move; a mover must not begin a second move
// before it ends the first.
func (w *moveWindow) begin() {
	w.mu.RLock()
	w.begun.Add(1)
}

func (w *moveWindow) end() {
	w.ended.Add(1)
	w.mu.RUnlock()
}

// read runs fn (which must only read, and may run more than once) so that
// no move was under way while it ran.
func (w *moveWindow) read(fn func()) {
	for try := range optimisticReads {
		// begun >= ended always: equal after fn means none was in flight
		// when ended was read, and none began since.
		ended := w.ended.Load()
		fn()
		if w.begun.Load() == ended {
			return
		}
		// Let the move under way end.
		if try < yieldingReads {
			runtime.Gosched()
		} else {
			time.Sleep(readPause)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	fn()
}
