package ringwaltest

import (
	"context"
	"testing"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// DefaultWait bounds, in real time, how long WorkOne waits for a message
// to become ready and Advance waits for the engine's timers, when neither
// Options.Wait nor a ctx deadline says otherwise. It is a bound for a
// test that went wrong, never a sleep: both return as soon as what they
// wait for has happened.
const DefaultWait = 10 * time.Second

// Options configures New. The zero value is a memory-only engine with
// ringwal's default options on a fake clock starting at 2026-01-01 UTC.
type Options struct {
	// Engine is passed to ringwal.Open. Its Clock is the fake clock. Nil
	// gets a new one, starting at Start. A *clock.Fake is used as it is,
	// so several engines of a test may share one. Any other Clock fails
	// the test, since the harness could not move it.
	Engine ringwal.Options
	// Start is where a new fake clock starts; zero is clock.NewFake's
	// fixed instant (2026-01-01 00:00 UTC), so that tests are reproducible.
	Start time.Time
	// Wait bounds in real time how long WorkOne and Advance wait before
	// they fail the test; 0 is DefaultWait.
	Wait time.Duration
}

// Harness is an engine on a fake clock for one test, with the helpers as
// methods. It embeds the engine, so h.Enqueue, h.Get, h.Stats... are the
// engine's own. Its methods must be called from the test's goroutine
// (they may stop it with t.FailNow); the engine itself is as safe for
// concurrent use as always.
type Harness struct {
	*ringwal.Engine
	// Clock is the engine's fake clock: it moves only when the test moves
	// it (Advance, or Clock.Advance and Clock.Set directly).
	Clock *clock.Fake

	tb   testing.TB
	wait time.Duration
}

// New opens a memory-only engine on a fake clock and closes it when the
// test ends (t.Cleanup). It fails the test if the engine does not open.
func New(tb testing.TB, o Options) *Harness {
	tb.Helper()
	fake, ok := o.Engine.Clock.(*clock.Fake)
	switch {
	case o.Engine.Clock == nil:
		fake = clock.NewFake(o.Start)
	case !ok:
		tb.Fatalf("ringwaltest.New: Options.Engine.Clock is a %T; the harness needs a *clock.Fake (or nil for a new one)", o.Engine.Clock)
		return nil
	}
	opts := o.Engine
	opts.Clock = fake
	e, err := ringwal.Open("", opts)
	if err != nil {
		tb.Fatalf("ringwaltest.New: ringwal.Open: %v", err)
		return nil
	}
	tb.Cleanup(func() {
		if err := e.Close(); err != nil {
			tb.Errorf("ringwaltest: closing the engine: %v", err)
		}
	})
	wait := o.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	return &Harness{Engine: e, Clock: fake, tb: tb, wait: wait}
}

// WorkOne is the package's WorkOne on the harness's engine with a
// background ctx, waiting at most Options.Wait for a message of queue to be
// ready (the handler's ctx has no deadline, as under a Run whose ctx has
// none).
func (h *Harness) WorkOne(queue string, handler ringwal.Handler) Result {
	h.tb.Helper()
	return workOne(context.Background(), h.tb, h.Engine, queue, handler, h.wait)
}

// RequireEnqueued is the package's RequireEnqueued on the harness's engine.
func (h *Harness) RequireEnqueued(m Match) ringwal.Info {
	h.tb.Helper()
	return RequireEnqueued(h.tb, h.Engine, m)
}

// RequireEnqueuedN is the package's RequireEnqueuedN on the harness's
// engine.
func (h *Harness) RequireEnqueuedN(m Match, n int) []ringwal.Info {
	h.tb.Helper()
	return RequireEnqueuedN(h.tb, h.Engine, m, n)
}

// RequireNotEnqueued is the package's RequireNotEnqueued on the harness's
// engine.
func (h *Harness) RequireNotEnqueued(m Match) {
	h.tb.Helper()
	RequireNotEnqueued(h.tb, h.Engine, m)
}

// Advance is the package's Advance on the harness's clock, waiting at most
// Options.Wait for the engine's timers.
func (h *Harness) Advance(d time.Duration) {
	h.tb.Helper()
	advance(h.tb, h.Clock, d, h.wait)
}

// Advance moves c forward by d and returns once the engine's timer
// goroutine has done what came due by then. A delayed message or a retry
// that came due is ready: WorkOne finds it, and a Pending match in
// RequireEnqueued sees it. A lease or TTL that ended has been acted on.
// It fails the test if the timer goroutine has not re-armed its timer
// within DefaultWait (the engine is closed, say).
//
// It knows the timers have run by the fake clock having a timer armed
// again: the engine's timer goroutine arms its one timer after it has done
// everything due. A test that arms timers of its own on the same fake
// clock should advance it directly and wait in its own way. A schedule's
// run is enqueued by a goroutine of its own a moment after its tick has
// fired: wait for it with WorkOne, which waits for a ready message.
func Advance(tb testing.TB, c *clock.Fake, d time.Duration) {
	tb.Helper()
	advance(tb, c, d, DefaultWait)
}

func advance(tb testing.TB, c *clock.Fake, d time.Duration, wait time.Duration) {
	tb.Helper()
	if d < 0 {
		tb.Fatalf("ringwaltest.Advance(%v): the clock never goes back", d)
		return
	}
	c.Advance(d)
	armed := make(chan struct{})
	go func() { // owned here: it returns once a timer is armed, below if need be
		c.BlockUntil(1)
		close(armed)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-armed:
		return
	case <-t.C:
	}
	// Release the goroutine with a timer of our own before failing, so
	// that nothing is left blocked after the test.
	release := c.NewTimer(time.Duration(1<<62 - 1))
	<-armed
	release.Stop()
	tb.Fatalf("ringwaltest.Advance(%v): the engine's timer goroutine did not arm its timer again within %v (is the engine closed?)", d, wait)
}
