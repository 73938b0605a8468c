package ringwal

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/clock"
)

// An engine linked into every replica of a service must cost nothing when
// nobody uses it. Its one timer owner is the housekeeper, which sleeps
// until its next entry: an open engine, memory-only or on disk, after a
// burst of traffic, with 10,000 schedules waiting in the wheel, wakes for
// its own periodic work (the maintenance pass, the lease scan) and for the
// instants at which something is due, never once per schedule nor on a
// poll interval. Every wake-up is a timer armed on the engine's clock, so
// a fake clock that counts them, stepped a tenth of the maintenance period
// at a time over a minute, counts the wake-ups: a poller at that step or
// faster would arm about ten times as many. (BenchmarkIdleCPU reports the
// CPU figure itself; the coarse clock, which reads the wall clock, parks
// when nobody reads it: TestCoarseClockEngineStampAfterPark.)
func TestIdleEngineWakesOnlyForDueWork(t *testing.T) {
	const (
		window = time.Minute
		step   = maintenanceEvery / 10
	)
	for _, tc := range []struct {
		name      string
		disk      bool
		schedules int
		spec      string
		instants  int // distinct instants at which schedules are due in the window
	}{
		{name: "memory"},
		{name: "disk", disk: true},
		{name: "disk, 10000 daily schedules", disk: true, schedules: 10000, spec: "@daily"},
		{name: "memory, 3000 schedules due together", schedules: 3000, spec: "*/20 * * * * *", instants: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newWakeClock(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
			dir := ""
			if tc.disk {
				dir = t.TempDir()
			}
			e := openEngine(t, dir, Options{Clock: c})
			for i := range tc.schedules {
				require.NoError(t, e.AddSchedule(Schedule{Name: fmt.Sprint("s", i), Spec: tc.spec}))
			}
			idleTraffic(t, e, c.Fake)

			c.waitAsleep(t)
			before := c.armed()
			for at := time.Duration(0); at < window; at += step {
				c.Advance(step)
				c.waitAsleep(t)
			}
			wakes := c.armed() - before
			// The maintenance pass once a second, the lease scan once a
			// LeaseTimeout, each due instant, and a few to spare (a
			// producer's entry due before the sleep's end wakes it too).
			// The wheel may wake once more for each, to cascade the coarse
			// slot that holds it.
			bound := 2*(int(window/maintenanceEvery)+int(window/defaultLeaseTimeout)+tc.instants) + 8
			assert.LessOrEqual(t, wakes, bound, "wake-ups over %v of idle time", window)
			assert.GreaterOrEqual(t, wakes, int(window/maintenanceEvery)/2, "the count sees the maintenance pass")
			t.Logf("%d wake-ups over %v (bound %d)", wakes, window, bound)
			if tc.instants > 0 {
				// Each tick handled (run, or skipped once the tier is full).
				waitFor(t, "every due tick handled", func() bool {
					handled := uint64(0)
					for _, s := range e.Schedules() {
						handled += s.Runs + s.Skipped
					}
					return handled == uint64(tc.schedules*tc.instants)
				})
			}
		})
	}
}

// idleTraffic runs a burst of traffic through e, leaving a few messages
// pending (an idle engine is rarely an empty one): plain messages, and a
// delay and a TTL that end during the burst, so that the housekeeper has
// had work.
func idleTraffic(t *testing.T, e *Engine, fake *clock.Fake) {
	ctx := context.Background()
	payload := make([]byte, 256)
	for i := 0; i < 2000; i++ {
		_, err := e.Enqueue(ctx, Message{Payload: payload, Key: fmt.Sprint("k", i%8)})
		require.NoError(t, err)
		d, err := e.Dequeue(ctx)
		require.NoError(t, err)
		require.NoError(t, e.Ack(d.Lease))
	}
	_, err := e.Enqueue(ctx, Message{Payload: payload, Delay: 20 * time.Millisecond, TTL: time.Minute})
	require.NoError(t, err)
	fake.Advance(20 * time.Millisecond)
	d, err := e.Dequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, e.Ack(d.Lease))
	for i := 0; i < 10; i++ {
		_, err := e.Enqueue(ctx, Message{Payload: payload})
		require.NoError(t, err)
	}
}

// wakeClock is a fake clock that counts the timers armed on it (created
// or reset): the housekeeper arms one each time it goes to sleep with an
// entry ahead, so the count is its wake-ups.
type wakeClock struct {
	*clock.Fake
	mu       sync.Mutex
	arms     int
	deadline time.Time // of the timer armed last; zero once stopped
}

func newWakeClock(start time.Time) *wakeClock { return &wakeClock{Fake: clock.NewFake(start)} }

func (c *wakeClock) NewTimer(d time.Duration) clock.Timer {
	c.arm(d)
	return &wakeTimer{c: c, Timer: c.Fake.NewTimer(d)}
}

func (c *wakeClock) arm(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arms++
	c.deadline = c.Fake.Now().Add(d)
}

func (c *wakeClock) armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.arms
}

// waitAsleep waits (real time, polling) until the housekeeper sleeps on
// a timer for a time still ahead: whatever the last step made due is
// handled.
func (c *wakeClock) waitAsleep(t *testing.T) {
	waitFor(t, "the housekeeper to sleep", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.deadline.After(c.Fake.Now())
	})
}

type wakeTimer struct {
	c *wakeClock
	clock.Timer
}

func (t *wakeTimer) Reset(d time.Duration) bool {
	t.c.arm(d)
	return t.Timer.Reset(d)
}

func (t *wakeTimer) Stop() bool {
	t.c.mu.Lock()
	t.c.deadline = time.Time{}
	t.c.mu.Unlock()
	return t.Timer.Stop()
}
