package ringwal

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/internal/pad"
)

// waiters lets consumers sleep while nothing is ready and producers sleep
// while the engine is full, without a lock on the fast path: a producer only
// touches a channel when the atomic count of sleeping consumers is non-zero.
//
// A sleeper increments its count, re-checks, then blocks; the other side
// publishes, then reads the count. Sequentially consistent atomics make one
// of them see the other. A signal lost to a full channel is covered by the
// baton: a woken consumer that finds more work wakes the next one. A short
// real-time fallback bounds the damage of any wake-up this reasoning misses.
type waiters struct {
	_      pad.Line
	ready  atomic.Int32
	_      [pad.CacheLine - 4]byte
	space  atomic.Int32
	_      [pad.CacheLine - 4]byte
	readyC chan struct{}
	spaceC chan struct{}
}

// fallbackWake bounds how long a sleeper can miss a wake-up.
const fallbackWake = 20 * time.Millisecond

func (w *waiters) init() {
	w.readyC = make(chan struct{}, 1)
	w.spaceC = make(chan struct{}, 1)
}

func (w *waiters) signalReady() {
	if w.ready.Load() > 0 {
		select {
		case w.readyC <- struct{}{}:
		default:
		}
	}
}

func (w *waiters) signalSpace() {
	if w.space.Load() > 0 {
		select {
		case w.spaceC <- struct{}{}:
		default:
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
