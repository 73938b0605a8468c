package ringwal

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/internal/pad"
)

// sleepers lets consumers sleep while nothing is ready, with one set per
// queue. It lets producers sleep while the engine is full, with the
// engine's set. There is no lock on the fast path: the other side only
// touches the channel when the atomic count of sleepers is non-zero.
//
// A sleeper increments the count, re-checks, then blocks; the other side
// publishes, then reads the count. Sequentially consistent atomics make one
// of them see the other. A signal lost to a full channel is covered by the
// baton: a woken consumer that finds more work wakes the next one. A short
// real-time fallback bounds the damage of any wake-up this reasoning misses.
type sleepers struct {
	_ pad.Line
	n atomic.Int32
	_ [pad.CacheLine - 4]byte
	c chan struct{}
	// idle, on the engine's space only: WaitIdle's waiters, which count
	// themselves in n while they wait, so that the signal every freed
	// record already sends wakes them too, at no cost to the verbs while
	// nobody waits.
	idle *idleWaiters
}

// fallbackWake bounds how long a sleeper can miss a wake-up.
const fallbackWake = 20 * time.Millisecond

func (w *sleepers) init() { w.c = make(chan struct{}, 1) }

// signal wakes one sleeper, if any sleeps.
func (w *sleepers) signal() {
	if w.n.Load() > 0 {
		select {
		case w.c <- struct{}{}:
		default:
		}
		if w.idle != nil {
			w.idle.wakeAll()
		}
	}
}

// sleep blocks on c until a signal, ctx's end or done; it reports why it
// woke with ctx.Err() or errClosed, nil for a signal or the fallback.
func sleep(ctx context.Context, c <-chan struct{}, done <-chan struct{}, t *time.Timer) error {
	t.Reset(fallbackWake)
	defer t.Stop()
	select {
	case <-c:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
		return ErrClosed
	}
}
