package ringwal

import (
	"sync/atomic"

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
	deadLettered    [numCategories]atomic.Uint64
	deadEvicted     atomic.Uint64 // dead letters removed by MaxDeadLetters
	unused          atomic.Uint64 // IDs taken but never enqueued (duplicates, collisions, failed writes)
	// moves counts messages moving between the slab and the dead-letter
	// store (a dead-lettering, a redrive): begun before the message leaves
	// one, ended once it is in the other. Stats uses them as a sequence
	// lock so that a message in transit is counted in exactly one state.
	movesBegun, movesEnded atomic.Uint64
	enqueuedBase           uint64 // nextID at Open: Enqueued = nextID - base - unused
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
