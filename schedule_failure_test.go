package ringwal_test

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

const scheduleFailEnv = "RINGWAL_TEST_SCHEDULE_FAIL_DIR"

// A run whose record cannot be written (the disk is full) leaves its
// tick unhandled, says why (LastError, an error in the log), and the
// schedule goes on: it tries the tick again, so once space returns the
// tick runs, and so do the ticks after it. A child process runs the
// engine under RLIMIT_FSIZE (see fileSizeLimit).
func TestScheduleRunsAgainAfterARunFailsToLog(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RLIMIT_FSIZE and SIGXFSZ as on Linux")
	}
	if dir := os.Getenv(scheduleFailEnv); dir != "" {
		scheduleFailChild(t, dir)
		return
	}
	dir := t.TempDir()
	childIDs(t, runChild(t, "TestScheduleRunsAgainAfterARunFailsToLog", scheduleFailEnv+"="+dir)) // logs its REPORT lines
	e := open(t, dir, ringwal.Options{})
	var specs []string
	for _, s := range e.Schedules() {
		specs = append(specs, s.Name+" "+s.Spec)
	}
	assert.Equal(t, []string{"m @every 1m", "new @hourly"}, specs, "what the child's AddSchedule calls said, across a restart")
}

func scheduleFailChild(t *testing.T, dir string) {
	setLimit, unlimited := fileSizeLimit(t)
	fake := clock.NewFake(scheduleStart)
	var failures atomic.Int64
	e, err := ringwal.Open(dir, ringwal.Options{Clock: fake, Durability: ringwal.Write,
		Logger: slog.New(countingHandler{msg: "ringwal: schedule tick not handled", n: &failures})})
	require.NoError(t, err)
	defer func() { _ = e.Close() }()
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "m", Spec: "@every 1m", Message: ringwal.Message{Payload: []byte("tick")}}))

	setLimit(uint64(largestFile(t, dir))) // the log's next write fails
	fake.Advance(time.Minute)
	require.Eventually(t, func() bool { return scheduleInfo(t, e, "m").LastError != "" }, waitFor, tick, "the run's failure is not reported")
	in := scheduleInfo(t, e, "m")
	assert.Zero(t, in.Runs+in.Skipped, "the tick is not handled")
	assert.NotZero(t, failures.Load(), "the failure is logged")
	childEmit("REPORT after the failed run: next %v, last error %q", in.Next, in.LastError)

	setLimit(unlimited)
	fake.Advance(time.Second) // the first retry
	in = awaitHandled(t, e, "m", 1)
	assert.EqualValues(t, 1, in.Runs, "the failed tick runs once the log takes writes again")
	assert.True(t, in.Last.Equal(scheduleStart.Add(time.Minute)), "last %v", in.Last)
	assert.True(t, in.Next.Equal(scheduleStart.Add(2*time.Minute)), "next %v", in.Next)
	assert.Empty(t, in.LastError)

	fake.Advance(time.Minute)
	in = awaitHandled(t, e, "m", 2)
	assert.EqualValues(t, 2, in.Runs, "and the ticks after it")
	assert.Equal(t, []string{"tick", "tick"}, drainQueue(t, e, e.TryDequeue))

	// An AddSchedule whose record cannot be written changes nothing, so
	// that the same call made again once space returns is logged.
	setLimit(uint64(largestFile(t, dir)))
	assert.Error(t, e.AddSchedule(ringwal.Schedule{Name: "new", Spec: "@hourly"}))
	assert.Error(t, e.AddSchedule(ringwal.Schedule{Name: "m", Spec: "@every 2m"}))
	setLimit(unlimited)
	got := e.Schedules()
	require.Len(t, got, 1, "the failed add is not there")
	assert.Equal(t, "@every 1m", got[0].Spec, "the failed change is not there")
	fake.Advance(time.Minute)
	in = awaitHandled(t, e, "m", 3)
	assert.EqualValues(t, 3, in.Runs, "the schedule the failed change would have replaced still runs")
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "new", Spec: "@hourly"}))
}

// countingHandler counts the log records whose message is msg.
type countingHandler struct {
	msg string
	n   *atomic.Int64
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countingHandler) WithGroup(string) slog.Handler      { return h }

// An OnEnqueue hook runs for each run of a schedule, and it may use the
// schedule verbs: list the schedules (the running one included), add or
// change one, trigger one. A run does not hold its schedule's lock while
// the hook runs; if it did, the run would wait for itself, and so, for
// good, would everything else that reads that schedule (Schedules, a
// checkpoint's snapshot on the timer goroutine, Close).
func TestOnEnqueueHookMayCallTheScheduleVerbsDuringARun(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "disk"}[durable], func(t *testing.T) {
			fake := clock.NewFake(scheduleStart)
			var e *ringwal.Engine
			listed := make(chan []ringwal.ScheduleInfo, 8)
			o := ringwal.Options{Clock: fake, OnEnqueue: func(_ context.Context, m *ringwal.Message) {
				name := m.Headers[ringwal.ScheduleHeader]
				if name == "" {
					return
				}
				m.Headers["hooked"] = "yes"
				listed <- e.Schedules()
				if name == "tick" {
					// A verb that takes the registry's lock and logs.
					if err := e.AddSchedule(ringwal.Schedule{Name: "added-by-hook", Spec: "@daily"}); err != nil {
						panic(err)
					}
				}
			}}
			if durable {
				e = open(t, t.TempDir(), o)
			} else {
				e, _ = memEngine(t, o)
			}
			require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "tick", Spec: "@every 1m", Message: ringwal.Message{Payload: []byte("t")}}))
			require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "manual", Spec: "@yearly", Message: ringwal.Message{Payload: []byte("m")}}))

			fake.Advance(time.Minute)
			select {
			case got := <-listed:
				assert.Len(t, got, 2, "the hook lists the schedules, the running one too")
			case <-time.After(waitFor):
				require.FailNow(t, "the hook's Schedules() never returned during the run")
			}
			in := awaitHandled(t, e, "tick", 1)
			assert.EqualValues(t, 1, in.Runs)
			assert.Len(t, e.Schedules(), 3, "the hook added a schedule")

			done := make(chan error, 1)
			go func() { _, err := e.TriggerSchedule("manual"); done <- err }()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(waitFor):
				require.FailNow(t, "TriggerSchedule never returned")
			}
			assert.Len(t, <-listed, 3)
			if durable {
				require.NoError(t, e.Checkpoint(), "a checkpoint reads every schedule")
			}
			for _, d := range []string{"t", "m"} {
				got, ok := e.TryDequeue()
				require.True(t, ok)
				assert.Equal(t, d, string(got.Message.Payload))
				assert.Equal(t, "yes", got.Message.Headers["hooked"], "the hook's header is on the run")
				assert.NotEmpty(t, got.Message.Headers[ringwal.ScheduleHeader])
				require.NoError(t, e.Ack(got.Lease))
			}
			assert.False(t, strings.Contains(scheduleInfo(t, e, "tick").LastError, "hook"))
		})
	}
}
