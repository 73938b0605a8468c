package ringwal_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// Long @every periods tick like short ones: each tick runs once, and the
// ticks a slow runner finds due together run or are counted as CatchUp
// says (CatchUpSkip runs the latest and counts the others; the ticks
// were due while the engine was open), whatever the period's size.
func TestLongEveryPeriodsRunEachTickAsCatchUpSays(t *testing.T) {
	for _, period := range []time.Duration{37 * time.Minute, 40 * time.Minute, 24 * time.Hour, 1000 * time.Hour, 87600 * time.Hour} {
		for _, tc := range []struct {
			catchUp       ringwal.CatchUp
			runs, skipped uint64 // after the first tick, then three at once
		}{
			{ringwal.CatchUpSkip, 2, 2},
			{ringwal.CatchUpOne, 2, 0},
			{ringwal.CatchUpAll, 4, 0},
		} {
			t.Run(fmt.Sprintf("%v/catch-up %d", period, tc.catchUp), func(t *testing.T) {
				fake := clock.NewFake(scheduleStart)
				e, _ := memEngine(t, ringwal.Options{Clock: fake})
				require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "long", Spec: "@every " + period.String(), CatchUp: tc.catchUp,
					Message: ringwal.Message{Payload: []byte("run")}}))
				fake.Advance(period)
				in := awaitHandled(t, e, "long", 1)
				assert.EqualValues(t, 1, in.Runs)
				assert.Zero(t, in.Skipped)
				assert.True(t, in.Next.Equal(scheduleStart.Add(2*period)), "next %v", in.Next)

				fake.Advance(3 * period)
				in = awaitHandled(t, e, "long", tc.runs+tc.skipped)
				assert.Equal(t, tc.runs, in.Runs)
				assert.Equal(t, tc.skipped, in.Skipped)
				assert.True(t, in.Last.Equal(scheduleStart.Add(4*period)), "last %v", in.Last)
				assert.True(t, in.Next.Equal(scheduleStart.Add(5*period)), "next %v", in.Next)
				assert.Len(t, drainQueue(t, e, e.TryDequeue), int(tc.runs))
			})
		}
	}
}

// An @every period is from 1s to 87600h (ten years): shorter ones would
// spin the runner (and fill the log with CatchUpAll), longer ones pass
// the last instant the engine can represent (2262) within one tick.
func TestEveryPeriodIsBounded(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	for _, tc := range []struct {
		spec string
		ok   bool
	}{
		{"@every 1ns", false},
		{"@every 1us", false},
		{"@every 999ms", false},
		{"@every 1s", true},
		{"@every 90s", true},
		{"@every 87600h", true},
		{"@every 87600h1s", false},
		{"@every 2562047h", false},
		{"CRON_TZ=Europe/Paris @every 500ms", false},
	} {
		err := e.AddSchedule(ringwal.Schedule{Name: "p", Spec: tc.spec})
		if tc.ok {
			assert.NoError(t, err, tc.spec)
			continue
		}
		if assert.ErrorIs(t, err, ringwal.ErrInvalid, tc.spec) {
			assert.Contains(t, err.Error(), "period", "%s: the error says what was wrong", tc.spec)
		}
	}
}

// Near the last instant the engine can represent (2262-04-11T23:47:16Z),
// a spec whose next tick would pass it never fires: AddSchedule refuses a
// spec with no tick left, and a schedule whose ticks run out stops with
// no next tick (rather than wrapping round to 1677 and spinning).
func TestSchedulesStopAtTheLastRepresentableInstant(t *testing.T) {
	start := time.Date(2262, 4, 11, 0, 0, 0, 0, time.UTC)
	fake := clock.NewFake(start)
	e, _ := memEngine(t, ringwal.Options{Clock: fake})
	for _, spec := range []string{"@daily", "0 0 1 * *", "@every 24h", "@every 87600h"} {
		assert.ErrorIs(t, e.AddSchedule(ringwal.Schedule{Name: "late", Spec: spec}), ringwal.ErrInvalid, "%s has no tick before the end", spec)
	}
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "hourly", Spec: "@hourly"}))
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "every", Spec: "@every 1h", CatchUp: ringwal.CatchUpAll}))
	fake.Advance(23 * time.Hour) // 23:00, the last hour that starts before the end
	for _, name := range []string{"hourly", "every"} {
		in := awaitHandled(t, e, name, 1)
		assert.True(t, in.Last.Equal(start.Add(23*time.Hour)), "%s: last %v", name, in.Last)
		assert.True(t, in.Next.IsZero(), "%s: no tick is left, next %v", name, in.Next)
	}
	fake.Advance(46 * time.Minute)
	assert.Len(t, e.Schedules(), 2, "the schedules still answer")
	got := drainQueue(t, e, e.TryDequeue)
	assert.NotEmpty(t, got)
}
