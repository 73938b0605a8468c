package ringwal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// The ticks that pass while the engine is closed run as the schedule's
// CatchUp says once it reopens: hourly ticks, the engine closed from
// 01:30 to 05:30 (04:00 the latest missed tick).
func TestScheduleCatchUpAfterDowntime(t *testing.T) {
	for _, tc := range []struct {
		name     string
		catchUp  ringwal.CatchUp
		max      int
		runs     uint64 // after the reopen, the first run included
		skipped  uint64
		payloads int // runs queued after the reopen
	}{
		{"skip", ringwal.CatchUpSkip, 0, 1, 4, 0},
		{"one", ringwal.CatchUpOne, 0, 2, 0, 1},
		{"all", ringwal.CatchUpAll, 0, 5, 0, 4},
		{"all, at most 2", ringwal.CatchUpAll, 2, 3, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, checkpoint := range []bool{false, true} {
				dir := t.TempDir()
				fake := clock.NewFake(scheduleStart)
				o := ringwal.Options{Clock: fake}
				e, err := ringwal.Open(dir, o)
				require.NoError(t, err)
				require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "hourly", Spec: "@hourly", CatchUp: tc.catchUp, MaxCatchUp: tc.max,
					Message: ringwal.Message{Queue: "jobs", Payload: []byte("run")}}))
				fake.Advance(time.Hour)
				awaitHandled(t, e, "hourly", 1)
				d, ok := e.Queue("jobs").TryDequeue()
				require.True(t, ok)
				require.NoError(t, e.Ack(d.Lease))
				if checkpoint {
					require.NoError(t, e.Checkpoint())
				}
				fake.Advance(30 * time.Minute)
				require.NoError(t, e.Close())

				fake.Advance(4 * time.Hour) // 05:30
				e = open(t, dir, o)
				in := awaitHandled(t, e, "hourly", 1+tc.runs-1+tc.skipped)
				assert.Equal(t, tc.runs, in.Runs, "checkpoint %v", checkpoint)
				assert.Equal(t, tc.skipped, in.Skipped, "checkpoint %v", checkpoint)
				assert.True(t, in.Last.Equal(scheduleStart.Add(5*time.Hour)), "last %v", in.Last)
				assert.True(t, in.Next.Equal(scheduleStart.Add(6*time.Hour)), "next %v", in.Next)
				assert.Len(t, drainQueue(t, e, e.Queue("jobs").TryDequeue), tc.payloads)

				// Closed and opened again at once: nothing more runs.
				require.NoError(t, e.Close())
				e = open(t, dir, o)
				in2 := scheduleInfo(t, e, "hourly")
				assert.Equal(t, in.Runs, in2.Runs)
				assert.Equal(t, in.Skipped, in2.Skipped)
				assert.Empty(t, drainQueue(t, e, e.Queue("jobs").TryDequeue))
				require.NoError(t, e.Close())
			}
		})
	}
}

func TestSchedulesSurviveReopenAndCheckpoint(t *testing.T) {
	dir := t.TempDir()
	fake := clock.NewFake(scheduleStart)
	o := ringwal.Options{Clock: fake}
	e, err := ringwal.Open(dir, o)
	require.NoError(t, err)
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "a", Spec: "CRON_TZ=Europe/Paris 0 9 * * *", Overlap: ringwal.OverlapSkip,
		Jitter: time.Second, Message: ringwal.Message{Payload: []byte("a"), Headers: map[string]string{"h": "v"}, Priority: ringwal.High}}))
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "b", Spec: "@every 90s", Message: ringwal.Message{Payload: []byte("b")}}))
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "gone", Spec: "@hourly"}))
	require.NoError(t, e.PauseSchedule("b"))
	require.NoError(t, e.RemoveSchedule("gone"))
	id, err := e.TriggerSchedule("a")
	require.NoError(t, err)
	before := e.Schedules()
	require.NoError(t, e.Close())

	for _, checkpoint := range []bool{false, true} {
		e = open(t, dir, o)
		got := e.Schedules()
		require.Len(t, got, 2, "checkpoint %v", checkpoint)
		assert.Equal(t, before, got, "checkpoint %v", checkpoint)
		assert.Equal(t, id, got[0].LastID)
		if checkpoint {
			break
		}
		require.NoError(t, e.Checkpoint())
		require.NoError(t, e.Close())
	}
}
