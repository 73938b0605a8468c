package main

// The schedule commands (schedules list|pause|resume|trigger|remove) over
// a running engine's admin API, then over its directory once it is
// stopped: the same output, and actions on a directory hold at the next
// start.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
)

// scheduleFixture is a data directory with three schedules: nightly
// (03:00 into reports), hourly (@every 1h into the default queue) and
// full (into tiny, a queue at its cap of 1).
func scheduleFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	require.NoError(t, e.DeclareQueue("tiny", ringwal.QueueOptions{MaxMessages: 1}))
	_, err = e.Queue("tiny").Enqueue(context.Background(), ringwal.Message{Payload: []byte("fills it")})
	require.NoError(t, err)
	for _, s := range []ringwal.Schedule{
		{Name: "nightly", Spec: "0 3 * * *", Message: ringwal.Message{Queue: "reports", Payload: []byte("build")}},
		{Name: "hourly", Spec: "@every 1h", Message: ringwal.Message{Payload: []byte("tick")}},
		{Name: "full", Spec: "@daily", Message: ringwal.Message{Queue: "tiny"}},
	} {
		require.NoError(t, e.AddSchedule(s))
	}
	require.NoError(t, e.Close())
	return dir
}

// scheduleLine returns the line of schedule name in a schedules list.
func scheduleLine(t *testing.T, out, name string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return line
		}
	}
	t.Fatalf("no row %q in:\n%s", name, out)
	return ""
}

// engineSchedule returns the engine's schedule called name.
func engineSchedule(t *testing.T, e *ringwal.Engine, name string) (ringwal.ScheduleInfo, bool) {
	t.Helper()
	for _, in := range e.Schedules() {
		if in.Name == name {
			return in, true
		}
	}
	return ringwal.ScheduleInfo{}, false
}

func TestScheduleCommands(t *testing.T) {
	dir := scheduleFixture(t)
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{Token: "tok"}))
	t.Cleanup(srv.Close)
	remote := func(args ...string) string {
		t.Helper()
		return ok(t, append(args, "--addr", srv.URL, "--token", "tok")...)
	}

	list := remote("schedules", "list")
	assert.Contains(t, list, "3 schedules")
	assert.True(t, strings.HasPrefix(list, "SCHEDULE "), list)
	nightly := scheduleLine(t, list, "nightly")
	assert.Regexp(t, `^nightly +0 3 \* \* \* +reports +no +\d{4}-`, nightly)
	assert.Regexp(t, `^hourly +@every 1h +`+admin.DefaultQueue+` +no `, scheduleLine(t, list, "hourly"))
	var views []admin.ScheduleView
	require.NoError(t, json.Unmarshal([]byte(remote("schedules", "list", "--json")), &views))
	require.Len(t, views, 3)
	assert.Equal(t, []string{"full", "hourly", "nightly"}, []string{views[0].Name, views[1].Name, views[2].Name})
	assert.Equal(t, "build", views[2].Message.Payload)
	assert.False(t, views[2].NextAt.IsZero())

	assert.Equal(t, "paused schedule nightly: paused\n", remote("schedules", "pause", "nightly"))
	in, _ := engineSchedule(t, e, "nightly")
	assert.True(t, in.Paused)
	assert.Regexp(t, `reports +yes +- +- +0 +0 +-$`, scheduleLine(t, remote("schedules", "list"), "nightly"), "paused: no next tick")
	out := remote("schedules", "resume", "nightly")
	assert.True(t, strings.HasPrefix(out, "resumed schedule nightly: next tick "), out)
	assert.Contains(t, out, ":00.000", "a 03:00 tick (in local time)")
	in, _ = engineSchedule(t, e, "nightly")
	assert.False(t, in.Paused)

	out = remote("schedules", "trigger", "nightly")
	in, _ = engineSchedule(t, e, "nightly")
	require.NotZero(t, in.LastID)
	assert.Equal(t, fmt.Sprintf("triggered schedule nightly: run %d in queue reports\n", in.LastID), out)
	info, err := e.Get(in.LastID)
	require.NoError(t, err)
	assert.Equal(t, "nightly", info.Message.Headers[ringwal.ScheduleHeader])
	assert.Regexp(t, fmt.Sprintf(` 1 +0 +ran #%d$`, in.LastID), scheduleLine(t, remote("schedules", "list"), "nightly"))

	assert.Equal(t, "removed schedule hourly\n", remote("schedules", "remove", "hourly"))
	_, found := engineSchedule(t, e, "hourly")
	assert.False(t, found)

	// Refusals: exit status 1, the reason on stderr.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"schedules", "trigger", "full"}, "MaxMessages"},
		{[]string{"schedules", "pause", "typo"}, "typo"},
		{[]string{"schedules", "resume", "typo"}, "typo"},
		{[]string{"schedules", "trigger", "typo"}, "typo"},
		{[]string{"schedules", "remove", "hourly"}, `no schedule "hourly"`},
	} {
		r := runBin(t, 30*time.Second, append(c.args, "--addr", srv.URL, "--token", "tok")...)
		assert.Equal(t, 1, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.want, c.args)
	}
	// Usage errors: exit status 2.
	for _, args := range [][]string{
		{"schedules", "pause"},
		{"schedules", "trigger", "--addr", srv.URL, dir, "nightly"},
		{"schedules", "remove", "a", "b", "c"},
		{"schedules", "list", "a", "b"},
	} {
		r := runBin(t, 30*time.Second, args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
	}
	liveJSON := remote("schedules", "list", "--json")
	// Last against the live engine: a wrong token throttles its address.
	r := runBin(t, 30*time.Second, "schedules", "list", "--addr", srv.URL, "--token", "wrong")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "--token")

	// Stopped: the same schedules from its directory.
	srv.Close()
	require.NoError(t, e.Close())
	var stopped []admin.ScheduleView
	require.NoError(t, json.Unmarshal([]byte(ok(t, "schedules", "list", "--json", dir)), &stopped))
	require.NoError(t, json.Unmarshal([]byte(liveJSON), &views))
	assert.Equal(t, views, stopped)

	// Actions on a directory are logged: they hold at the next start.
	assert.Equal(t, "paused schedule nightly: paused\n", ok(t, "schedules", "pause", dir, "nightly"))
	out = ok(t, "schedules", "trigger", dir, "nightly")
	var run ringwal.ID
	_, err = fmt.Sscanf(out, "triggered schedule nightly: run %d in queue reports\n", &run)
	require.NoError(t, err, out)
	assert.Equal(t, "removed schedule full\n", ok(t, "schedules", "remove", dir, "full"))
	r = runBin(t, 30*time.Second, "schedules", "pause", dir, "typo")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, `no schedule "typo"`)
	e, err = ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	in, _ = engineSchedule(t, e, "nightly")
	assert.True(t, in.Paused, "the pause held")
	assert.Equal(t, run, in.LastID, "the trigger held")
	assert.Equal(t, uint64(2), in.Runs)
	_, found = engineSchedule(t, e, "full")
	assert.False(t, found, "the removal held")
	info, err = e.Get(run)
	require.NoError(t, err, "the run waits in the directory")
	assert.Equal(t, "reports", info.Message.Queue)
}

// TestScheduleOutputSanitized: a schedule's name, spec, queue and last
// error from a live engine (outside text) cannot reach the terminal raw.
func TestScheduleOutputSanitized(t *testing.T) {
	var b strings.Builder
	require.NoError(t, printSchedules(&b, []admin.ScheduleView{{Name: "evil\x1b]0;pwn\a", Spec: "@every\x1b[2J 1h",
		Queue: "q\u009b", LastError: "boom\x1b[31m\nsecond line"}}))
	assert.NotContains(t, b.String(), "\x1b")
	assert.NotContains(t, b.String(), "\a")
	assert.NotContains(t, b.String(), "second line", "the first line only")
	assert.Contains(t, b.String(), `evil\x1b]0;pwn\x07`)
	b.Reset()
	require.NoError(t, printScheduleState(&b, "paused", admin.ScheduleView{Name: "s\u009b", Paused: true}))
	assert.Equal(t, "paused schedule s\\u009b: paused\n", b.String())
}

func TestScheduleCommandsHaveHelp(t *testing.T) {
	for _, path := range [][]string{
		{"schedules"}, {"schedules", "list"}, {"schedules", "pause"}, {"schedules", "resume"},
		{"schedules", "trigger"}, {"schedules", "remove"},
	} {
		out := ok(t, append(path, "--help")...)
		assert.Contains(t, out, "Usage:", "help of %v", path)
	}
	assert.Contains(t, ok(t, "--help"), "schedules", "listed among the commands")
}
