package ringwal_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// scheduleStart is the schedule tests' fake time: a Monday, midnight UTC.
var scheduleStart = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// scheduleInfo returns the named schedule's info.
func scheduleInfo(t *testing.T, e *ringwal.Engine, name string) ringwal.ScheduleInfo {
	t.Helper()
	for _, s := range e.Schedules() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no schedule %q", name)
	return ringwal.ScheduleInfo{}
}

// awaitHandled waits (real time, polling) until the named schedule has
// handled n ticks in all (runs and skips): runs happen on the engine's
// goroutine a moment after the fake clock passes them.
func awaitHandled(t *testing.T, e *ringwal.Engine, name string, n uint64) ringwal.ScheduleInfo {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		in := scheduleInfo(t, e, name)
		if in.Runs+in.Skipped >= n {
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedule %q: %d runs and %d skipped, want %d in all", name, in.Runs, in.Skipped, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestScheduleRunsAtEachTick(t *testing.T) {
	fake := clock.NewFake(scheduleStart)
	e, _ := memEngine(t, ringwal.Options{Clock: fake})
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "report", Spec: "*/10 * * * *",
		Message: ringwal.Message{Queue: "reports", Payload: []byte("build"), Headers: map[string]string{"kind": "daily"}}}))
	in := scheduleInfo(t, e, "report")
	assert.True(t, in.Next.Equal(scheduleStart.Add(10*time.Minute)), "next %v", in.Next)
	assert.True(t, in.Last.IsZero())

	fake.Advance(9 * time.Minute)
	_, ok := e.Queue("reports").TryDequeue()
	assert.False(t, ok, "no run before the tick")
	for i := uint64(1); i <= 3; i++ {
		fake.Advance(time.Minute)
		in = awaitHandled(t, e, "report", i)
		fake.Advance(9 * time.Minute)
	}
	assert.EqualValues(t, 3, in.Runs)
	assert.True(t, in.Last.Equal(scheduleStart.Add(30*time.Minute)))
	got := drainQueue(t, e, e.Queue("reports").TryDequeue)
	assert.Equal(t, []string{"build", "build", "build"}, got)
	info, err := e.Get(in.LastID)
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "the last run was acked: %v", info)
}

func TestScheduleVerbs(t *testing.T) {
	fake := clock.NewFake(scheduleStart)
	e, _ := memEngine(t, ringwal.Options{Clock: fake})
	s := ringwal.Schedule{Name: "sync", Spec: "@every 1m", Message: ringwal.Message{Payload: []byte("sync")}}
	require.NoError(t, e.AddSchedule(s))
	require.NoError(t, e.AddSchedule(s), "adding the same schedule again changes nothing")
	assert.Len(t, e.Schedules(), 1)

	id, err := e.TriggerSchedule("sync")
	require.NoError(t, err)
	in := scheduleInfo(t, e, "sync")
	assert.Equal(t, id, in.LastID)
	assert.EqualValues(t, 1, in.Runs)
	assert.True(t, in.Last.IsZero(), "a trigger is not a tick")
	assert.True(t, in.Next.Equal(scheduleStart.Add(time.Minute)), "the next tick is unchanged")

	require.NoError(t, e.PauseSchedule("sync"))
	assert.True(t, scheduleInfo(t, e, "sync").Paused)
	assert.True(t, scheduleInfo(t, e, "sync").Next.IsZero())
	fake.Advance(5 * time.Minute)
	require.NoError(t, e.ResumeSchedule("sync"))
	in = scheduleInfo(t, e, "sync")
	assert.EqualValues(t, 0, in.Skipped, "ticks that passed while paused are not run, nor counted")
	assert.True(t, in.Next.Equal(scheduleStart.Add(6*time.Minute)), "next %v", in.Next)
	fake.Advance(time.Minute)
	in = awaitHandled(t, e, "sync", 2)
	assert.EqualValues(t, 2, in.Runs)

	require.NoError(t, e.RemoveSchedule("sync"))
	assert.Empty(t, e.Schedules())
	assert.ErrorIs(t, e.RemoveSchedule("sync"), ringwal.ErrNotFound)
	assert.ErrorIs(t, e.PauseSchedule("sync"), ringwal.ErrNotFound)
	_, err = e.TriggerSchedule("sync")
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	fake.Advance(time.Hour)
	assert.Len(t, drainQueue(t, e, e.TryDequeue), 2, "a removed schedule runs no more")

	for _, bad := range []ringwal.Schedule{
		{Name: "", Spec: "@hourly"},
		{Name: "x", Spec: "@every 0s"},
		{Name: "x", Spec: "0 0 30 2 *"},
		{Name: "x", Spec: "@hourly", Message: ringwal.Message{Priority: 9}},
		{Name: "x", Spec: "@hourly", Jitter: -time.Second},
		{Name: "x", Spec: "@hourly", CatchUp: 7},
	} {
		assert.ErrorIs(t, e.AddSchedule(bad), ringwal.ErrInvalid, "%+v", bad)
	}
}

func TestScheduleOverlapSkipWhileThePreviousRunIsLive(t *testing.T) {
	fake := clock.NewFake(scheduleStart)
	e, _ := memEngine(t, ringwal.Options{Clock: fake, Queues: map[string]ringwal.QueueOptions{"imports": {LeaseTimeout: time.Hour}}})
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "import", Spec: "@every 1m", Overlap: ringwal.OverlapSkip,
		Message: ringwal.Message{Queue: "imports"}}))
	fake.Advance(time.Minute)
	awaitHandled(t, e, "import", 1)
	d, ok := e.Queue("imports").TryDequeue()
	require.True(t, ok)
	fake.Advance(time.Minute)
	in := awaitHandled(t, e, "import", 2)
	assert.EqualValues(t, 1, in.Skipped, "leased: still live")
	assert.Contains(t, in.LastError, "still live")
	require.NoError(t, e.Ack(d.Lease))
	fake.Advance(time.Minute)
	in = awaitHandled(t, e, "import", 3)
	assert.EqualValues(t, 2, in.Runs)
	assert.Empty(t, in.LastError)
}

func TestScheduleIntoAFullQueueSkipsTheTick(t *testing.T) {
	fake := clock.NewFake(scheduleStart)
	e, _ := memEngine(t, ringwal.Options{Clock: fake, Queues: map[string]ringwal.QueueOptions{"small": {MaxMessages: 1}}})
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "fill", Spec: "@every 1m", Message: ringwal.Message{Queue: "small"}}))
	fake.Advance(time.Minute)
	awaitHandled(t, e, "fill", 1)
	fake.Advance(time.Minute)
	in := awaitHandled(t, e, "fill", 2)
	assert.EqualValues(t, 1, in.Runs)
	assert.EqualValues(t, 1, in.Skipped)
	assert.Contains(t, in.LastError, `queue "small"`)
	_, err := e.TriggerSchedule("fill")
	assert.True(t, errors.Is(err, ringwal.ErrFull), "%v", err)
}

func TestScheduleJitterDelaysTheRunNotTheTick(t *testing.T) {
	fake := clock.NewFake(scheduleStart)
	e, _ := memEngine(t, ringwal.Options{Clock: fake})
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "j", Spec: "@every 1m", Jitter: 30 * time.Second,
		Message: ringwal.Message{Queue: "jittered"}}))
	// The fake clock moves in 5 s steps; after each the run, if due, is
	// enqueued before the clock moves on (a run that lags shows late).
	var offsets []time.Duration
	for step := 1; step <= 4*12+6; step++ {
		fake.Advance(5 * time.Second)
		deadline := time.Now().Add(5 * time.Millisecond)
		for time.Now().Before(deadline) && scheduleInfo(t, e, "j").Runs < uint64(len(offsets)+1) {
			time.Sleep(100 * time.Microsecond)
		}
		d, ok := e.Queue("jittered").TryDequeue()
		if !ok {
			continue
		}
		tick, err := time.Parse(time.RFC3339Nano, d.Message.Headers[ringwal.TickHeader])
		require.NoError(t, err)
		assert.Equal(t, 0, tick.Second(), "the run is for its tick, on the minute")
		info, err := e.Get(d.ID)
		require.NoError(t, err)
		offsets = append(offsets, info.EnqueuedAt.Sub(tick))
		require.NoError(t, e.Ack(d.Lease))
	}
	require.Len(t, offsets, 4, "one run a minute")
	late := 0
	for _, off := range offsets {
		assert.GreaterOrEqual(t, off, time.Duration(0), "never before the tick")
		assert.LessOrEqual(t, off, 40*time.Second, "within the jitter (and a step of lag)")
		if off > 0 {
			late++
		}
	}
	assert.Positive(t, late, "jitter moved some run: %v", offsets)
}

// Through the engine on the fake clock: across both of New York's DST
// changes in 2026, a daily 02:30 tick (in the hour skipped in March)
// runs once, at 03:00, and a daily 01:30 tick (in the hour repeated in
// November) runs once, the first time.
func TestScheduleAcrossDaylightSavingRunsEachDayOnce(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	for _, tc := range []struct {
		spec  string
		start time.Time
		want  []time.Time // the runs' instants, in order
	}{
		{"CRON_TZ=America/New_York 30 2 * * *", time.Date(2026, 3, 7, 12, 0, 0, 0, ny), []time.Time{
			time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC),  // 03:00 EDT, when the skipped hour ends
			time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC), // 02:30 EDT
		}},
		{"CRON_TZ=America/New_York 30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), []time.Time{
			time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), // 01:30 EDT, the first of two
			time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC), // 01:30 EST
		}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			fake := clock.NewFake(tc.start)
			e, _ := memEngine(t, ringwal.Options{Clock: fake})
			require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "daily", Spec: tc.spec, Message: ringwal.Message{Queue: "dst"}}))
			var got []time.Time
			// Two days in 15-minute steps: every run is seen once.
			for step := 0; step < 2*24*4; step++ {
				fake.Advance(15 * time.Minute)
				if in := scheduleInfo(t, e, "daily"); in.Runs+in.Skipped < uint64(len(got)+1) && (in.Next.IsZero() || !in.Next.After(fake.Now())) {
					awaitHandled(t, e, "daily", uint64(len(got)+1))
				}
				for {
					d, ok := e.Queue("dst").TryDequeue()
					if !ok {
						break
					}
					tick, err := time.Parse(time.RFC3339Nano, d.Message.Headers[ringwal.TickHeader])
					require.NoError(t, err)
					got = append(got, tick)
					require.NoError(t, e.Ack(d.Lease))
				}
			}
			require.Len(t, got, len(tc.want), "runs %v", got)
			for i := range got {
				assert.True(t, tc.want[i].Equal(got[i]), "run %d: want %v, got %v", i, tc.want[i].In(ny), got[i].In(ny))
			}
			assert.Zero(t, scheduleInfo(t, e, "daily").Skipped)
		})
	}
}
