package sched

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringwal/ringwal/clock"
)

func TestMain(m *testing.M) {
	// Every Timers a test starts must be stopped by it.
	goleak.VerifyTestMain(m)
}

type firing struct {
	at  time.Time
	now time.Time // the fake clock when fire ran
	e   Entry
}

// failsafe only turns a hang into a failure; nothing asserts on time.
const failsafe = time.Minute

func newTestTimers(t *testing.T, o TimerOptions) (*Timers, *clock.Fake, chan firing) {
	t.Helper()
	fake := clock.NewFake(testStart)
	fired := make(chan firing, 1<<16)
	tm := NewTimers(fake, o, func(at time.Time, e Entry) {
		fired <- firing{at: at, now: fake.Now(), e: e}
	})
	t.Cleanup(tm.Stop)
	return tm, fake, fired
}

func recv(t *testing.T, ch <-chan firing) firing {
	t.Helper()
	select {
	case f := <-ch:
		return f
	case <-time.After(failsafe):
		require.FailNow(t, "no fire")
		return firing{}
	}
}

func requireNoFire(t *testing.T, ch <-chan firing) {
	t.Helper()
	select {
	case f := <-ch:
		require.FailNow(t, "unexpected fire", "%+v", f)
	default:
	}
}

func TestTimersFireWithFakeClock(t *testing.T) {
	ms := time.Millisecond
	tm, fake, fired := newTestTimers(t, TimerOptions{})
	tm.Start()

	tm.Schedule(testStart.Add(10*ms), Entry{ID: 1})
	fake.BlockUntil(1) // the owner has taken the entry and armed its timer
	requireNoFire(t, fired)
	assert.Equal(t, 1, tm.Len())

	fake.Advance(9 * ms)
	requireNoFire(t, fired) // the timer is at 10ms: nothing woke

	fake.Advance(ms)
	f := recv(t, fired)
	assert.Equal(t, uint64(1), f.e.ID)
	assert.Equal(t, testStart.Add(10*ms), f.at)
	assert.False(t, f.now.Before(f.at), "fired early")
}

func TestTimersScenarios(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		run  func(t *testing.T, tm *Timers, fake *clock.Fake, fired chan firing)
	}{
		{"an earlier entry wakes a sleeping owner", func(t *testing.T, tm *Timers, fake *clock.Fake, fired chan firing) {
			tm.Schedule(testStart.Add(50*ms), Entry{ID: 1})
			fake.BlockUntil(1)
			tm.Schedule(testStart.Add(20*ms), Entry{ID: 2})
			fake.Advance(20 * ms)
			assert.Equal(t, uint64(2), recv(t, fired).e.ID)
			requireNoFire(t, fired)
			fake.Advance(30 * ms)
			assert.Equal(t, uint64(1), recv(t, fired).e.ID)
		}},
		{"a past entry fires without advancing", func(t *testing.T, tm *Timers, _ *clock.Fake, fired chan firing) {
			tm.Schedule(testStart.Add(-time.Second), Entry{ID: 3})
			assert.Equal(t, uint64(3), recv(t, fired).e.ID)
		}},
		{"an entry due now fires without advancing", func(t *testing.T, tm *Timers, fake *clock.Fake, fired chan firing) {
			tm.Schedule(fake.Now(), Entry{ID: 4})
			assert.Equal(t, uint64(4), recv(t, fired).e.ID)
		}},
		{"a 40-day delay fires after one big advance", func(t *testing.T, tm *Timers, fake *clock.Fake, fired chan firing) {
			at := testStart.Add(40 * 24 * time.Hour)
			tm.Schedule(at, Entry{ID: 5})
			fake.BlockUntil(1)
			fake.Set(at.Add(-ms))
			requireNoFire(t, fired)
			fake.Set(at)
			f := recv(t, fired)
			assert.Equal(t, at, f.at)
			assert.False(t, f.now.Before(at))
		}},
		{"advancing before the owner sleeps still fires", func(t *testing.T, tm *Timers, fake *clock.Fake, fired chan firing) {
			tm.Schedule(testStart.Add(10*ms), Entry{ID: 6})
			fake.Advance(10 * ms) // may race with the owner arming its timer
			assert.Equal(t, uint64(6), recv(t, fired).e.ID)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tm, fake, fired := newTestTimers(t, TimerOptions{Tick: ms})
			tm.Start()
			tc.run(t, tm, fake, fired)
		})
	}
}

// TestTimersFullFeedLosesNothing schedules far more entries than the feed
// holds before the owner runs: the overflow goes to the spill list.
func TestTimersFullFeedLosesNothing(t *testing.T) {
	tm, fake, fired := newTestTimers(t, TimerOptions{Capacity: 4})
	const n = 1000
	for i := range n {
		tm.Schedule(testStart.Add(time.Duration(i%10)*time.Millisecond), Entry{ID: uint64(i)})
	}
	assert.Equal(t, n, tm.Len())
	tm.Start()
	fake.Advance(10 * time.Millisecond)
	seen := make([]bool, n)
	for range n {
		f := recv(t, fired)
		require.False(t, seen[f.e.ID], "entry %d fired twice", f.e.ID)
		seen[f.e.ID] = true
	}
	requireNoFire(t, fired)
}

// TestTimersNeverLoseAnEntryWhenTheFeedIsFull fills a small feed while its
// owner cannot drain it (not yet started, or busy in a fire callback): the
// entries that find it full spill, and every entry still fires exactly
// once, at the time it asked for, never early, in due-time order.
func TestTimersNeverLoseAnEntryWhenTheFeedIsFull(t *testing.T) {
	const (
		capacity = 8
		n        = 100
	)
	cases := []struct {
		name string
		// hold keeps the owner from draining until the returned release
		// is called.
		hold func(t *testing.T, tm *Timers, fake *clock.Fake, entered <-chan struct{}, gate chan struct{}) (release func())
	}{
		{"before the owner starts", func(_ *testing.T, tm *Timers, _ *clock.Fake, _ <-chan struct{}, _ chan struct{}) func() {
			return tm.Start
		}},
		{"while the owner is busy firing", func(t *testing.T, tm *Timers, fake *clock.Fake, entered <-chan struct{}, gate chan struct{}) func() {
			tm.Start()
			tm.Schedule(fake.Now(), Entry{ID: n}) // its fire waits for the gate
			select {
			case <-entered:
			case <-time.After(failsafe):
				require.FailNow(t, "the gate entry did not fire")
			}
			return func() { close(gate) }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := clock.NewFake(testStart)
			entered, gate := make(chan struct{}), make(chan struct{})
			fired := make(chan firing, 2*n)
			tm := NewTimers(fake, TimerOptions{Capacity: capacity}, func(at time.Time, e Entry) {
				if e.ID == n {
					close(entered)
					<-gate
					return
				}
				fired <- firing{at: at, now: fake.Now(), e: e}
			})
			t.Cleanup(tm.Stop)
			release := tc.hold(t, tm, fake, entered, gate)

			// Entry i is due at (i*37 mod n) ms: scheduled out of order.
			due := func(id uint64) time.Time {
				return testStart.Add(time.Duration(id*37%n) * time.Millisecond)
			}
			for i := range uint64(n) {
				tm.Schedule(due(i), Entry{ID: i})
			}
			require.Equal(t, uint64(n-capacity), tm.Spilled(), "what did not fit in the feed spilled")
			release()
			fake.Advance(n * time.Millisecond)

			seen := make([]bool, n)
			var last time.Time
			for range n {
				f := recv(t, fired)
				require.False(t, seen[f.e.ID], "entry %d fired twice", f.e.ID)
				seen[f.e.ID] = true
				assert.Equal(t, due(f.e.ID), f.at, "entry %d's fire time", f.e.ID)
				assert.False(t, f.now.Before(f.at), "entry %d fired early", f.e.ID)
				assert.False(t, f.at.Before(last), "entry %d fired out of due-time order", f.e.ID)
				last = f.at
			}
			requireNoFire(t, fired)
		})
	}
}

// TestTimersWakeTheOwnerWhenTheFeedIsHalfFull: entries due after the owner's
// next wake-up do not wake it, until one leaves the feed half full; then
// the owner drains the feed, before it can fill and spill.
func TestTimersWakeTheOwnerWhenTheFeedIsHalfFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const capacity = 8
		fake := clock.NewFake(testStart)
		tm := NewTimers(fake, TimerOptions{Capacity: capacity}, nil)
		tm.Start()
		defer tm.Stop()

		far := testStart.Add(time.Hour)
		tm.Schedule(far, Entry{ID: 0}) // wakes the idle owner, which sleeps until far
		synctest.Wait()
		require.Equal(t, 0, tm.feed.Len(), "the owner took the first entry")

		later := far.Add(time.Minute)
		for i := range uint64(capacity/2 - 1) {
			tm.Schedule(later, Entry{ID: 1 + i})
		}
		synctest.Wait()
		require.Equal(t, capacity/2-1, tm.feed.Len(), "entries due after far leave the owner asleep")

		tm.Schedule(later, Entry{ID: capacity / 2})
		synctest.Wait()
		assert.Equal(t, 0, tm.feed.Len(), "the push that left the feed half full woke the owner, which drained it")
		assert.Equal(t, capacity/2+1, tm.Len())
		assert.Zero(t, tm.Spilled())
	})
}

// TestTimersConcurrentProducers: many goroutines schedule at once while the
// owner runs; every entry fires exactly once and never early.
func TestTimersConcurrentProducers(t *testing.T) {
	tm, fake, fired := newTestTimers(t, TimerOptions{Capacity: 64})
	tm.Start()
	const producers, each = 4, 2000
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				id := uint64(p*each + i)
				tm.Schedule(testStart.Add(time.Duration(id%997)*time.Millisecond), Entry{ID: id})
			}
		})
	}
	wg.Wait()
	fake.Advance(500 * time.Millisecond)
	fake.Advance(500 * time.Millisecond)
	seen := make([]bool, producers*each)
	for range producers * each {
		f := recv(t, fired)
		require.False(t, seen[f.e.ID], "entry %d fired twice", f.e.ID)
		seen[f.e.ID] = true
		require.False(t, f.now.Before(f.at), "entry %d fired early", f.e.ID)
	}
	requireNoFire(t, fired)
}

func TestTimersLifecycle(t *testing.T) {
	cases := []struct {
		name string
		run  func(tm *Timers)
	}{
		{"stop without start", func(tm *Timers) { tm.Stop() }},
		{"start then stop twice", func(tm *Timers) { tm.Start(); tm.Stop(); tm.Stop() }},
		{"start twice", func(tm *Timers) { tm.Start(); tm.Start(); tm.Stop() }},
		{"start after stop is a no-op", func(tm *Timers) { tm.Stop(); tm.Start(); tm.Stop() }},
		{"concurrent stops", func(tm *Timers) {
			tm.Start()
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(tm.Stop)
			}
			wg.Wait()
		}},
		{"stop while sleeping with entries pending", func(tm *Timers) {
			tm.Start()
			tm.Schedule(testStart.Add(time.Hour), Entry{ID: 1})
			tm.Stop()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			tm := NewTimers(clock.NewFake(testStart), TimerOptions{}, nil)
			tc.run(tm)
			goleak.VerifyNone(t, before)
		})
	}
}

func TestTimersCompactDropsEntriesLiveRejects(t *testing.T) {
	const above = 64
	tm, fake, fired := newTestTimers(t, TimerOptions{
		CompactAbove: above,
		Live:         func(e Entry) bool { return e.Gen != 0 }, // generation 0: cancelled
	})
	// Queued before Start, so that one pass drains them all: compaction is
	// amortised, and a pass that sees fewer than CompactAbove leaves them.
	far := fake.Now().Add(time.Hour)
	for i := range 3 * above {
		tm.Schedule(far, Entry{ID: uint64(i)}) // all cancelled
	}
	tm.Schedule(far, Entry{ID: 1, Gen: 1})
	// The nearer entry tells when that pass has run.
	tm.Schedule(fake.Now(), Entry{ID: 2, Gen: 1})
	tm.Start()
	recv(t, fired)
	require.Eventually(t, func() bool { return tm.Len() == 1 }, failsafe, time.Millisecond,
		"only the live far entry is left (have %d)", tm.Len())
	fake.Advance(time.Hour)
	assert.Equal(t, Entry{ID: 1, Gen: 1}, recv(t, fired).e)
}

// jumpingClock is a fake clock that moves on by jump as the owner creates
// its timer: the clock a test advances, or time that passes while the
// owner is preempted, between the owner's reading of the time and its
// arming of the timer.
type jumpingClock struct {
	*clock.Fake
	jump time.Duration
}

func (c jumpingClock) NewTimer(d time.Duration) clock.Timer {
	c.Fake.Advance(c.jump)
	return c.Fake.NewTimer(d)
}

// An owner whose clock moved on while it armed its timer (not past the
// entry's time) must not sleep past the entry: the timer it armed with
// the distance it read first would fire that much late.
func TestTimersFireOnTimeWhenTheClockMovesWhileTheOwnerArms(t *testing.T) {
	ms := time.Millisecond
	fake := clock.NewFake(testStart)
	fired := make(chan firing, 1)
	tm := NewTimers(jumpingClock{Fake: fake, jump: 49 * ms}, TimerOptions{}, func(at time.Time, e Entry) {
		fired <- firing{at: at, now: fake.Now(), e: e}
	})
	t.Cleanup(tm.Stop)
	tm.Schedule(testStart.Add(50*ms), Entry{ID: 1})
	tm.Start()
	fake.BlockUntil(1) // the owner has armed its timer and sleeps
	requireNoFire(t, fired)

	fake.Advance(3 * ms) // 52ms: past the entry
	select {
	case f := <-fired:
		assert.Equal(t, uint64(1), f.e.ID)
		assert.False(t, f.now.Before(f.at), "fired early")
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the entry due at 50ms did not fire at 52ms")
	}
}
