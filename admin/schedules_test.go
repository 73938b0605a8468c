package admin_test

// The admin API of schedules: the list with each schedule's definition and
// state, one schedule, pause, resume, trigger (the run's ID; a full queue
// and a DedupID that refuses the run) and remove, names escaped in one
// path segment, and the Client over the same routes.

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// slashSchedule is a valid schedule name that needs escaping in a path.
const slashSchedule = "sync/eu#1"

// schedulesFixture adds nightly (03:00 into reports, catch-up one),
// minutely (@every 1m into the default queue, overlap skip, jitter 5s),
// slashSchedule (paused), full (into tiny, a queue at its cap) and once
// (a message with a DedupID).
func schedulesFixture(t *testing.T, e *ringwal.Engine) {
	t.Helper()
	require.NoError(t, e.DeclareQueue("tiny", ringwal.QueueOptions{MaxMessages: 1}))
	_, err := e.Queue("tiny").Enqueue(context.Background(), ringwal.Message{Payload: []byte("fills it")})
	require.NoError(t, err)
	for _, s := range []ringwal.Schedule{
		{Name: "nightly", Spec: "0 3 * * *", CatchUp: ringwal.CatchUpOne,
			Message: ringwal.Message{Queue: "reports", Key: "reports", Payload: []byte("build")}},
		{Name: "minutely", Spec: "@every 1m", Overlap: ringwal.OverlapSkip, Jitter: 5 * time.Second,
			Message: ringwal.Message{Payload: []byte("tick")}},
		{Name: slashSchedule, Spec: "*/5 * * * *", Paused: true, Message: ringwal.Message{Queue: "sync"}},
		{Name: "full", Spec: "@hourly", Message: ringwal.Message{Queue: "tiny"}},
		{Name: "once", Spec: "@daily", CatchUp: ringwal.CatchUpAll, MaxCatchUp: 3,
			Message: ringwal.Message{DedupID: "only-once", Payload: []byte("x")}},
	} {
		require.NoError(t, e.AddSchedule(s))
	}
}

// awaitRuns polls the engine (real time) until the named schedule has n
// runs: a tick runs on the engine's goroutine a moment after the fake
// clock passes it.
func awaitRuns(t *testing.T, e *ringwal.Engine, name string, n uint64) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, in := range e.Schedules() {
			if in.Name == name {
				return in.Runs >= n
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "schedule %q: %d runs", name, n)
}

func TestAdminSchedules(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	start := fake.Now()
	schedulesFixture(t, e)
	sp := "/schedules/" + admin.SchedulePath(slashSchedule)

	var vs []admin.ScheduleView
	r := c.do(http.MethodGet, "/schedules", nil).expect(t, http.StatusOK, "list")
	require.NoError(t, jsonUnmarshal(r.raw, &vs))
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
	}
	assert.Equal(t, []string{"full", "minutely", "nightly", "once", slashSchedule}, names, "by name")
	n, _ := admin.FindSchedule(vs, "nightly")
	assert.Equal(t, "0 3 * * *", n.Spec)
	assert.Equal(t, "reports", n.Queue)
	assert.Equal(t, "build", n.Message.Payload)
	assert.Equal(t, admin.CatchUpOne, n.CatchUp)
	assert.Equal(t, admin.OverlapAllow, n.Overlap)
	assert.True(t, n.NextAt.Equal(start.Add(3*time.Hour)), "next %v", n.NextAt)
	assert.True(t, n.LastAt.IsZero())
	assert.Empty(t, n.Outcome(), "no run yet")
	m, _ := admin.FindSchedule(vs, "minutely")
	assert.Equal(t, admin.DefaultQueue, m.Queue, "the default queue by its admin name")
	assert.Equal(t, admin.OverlapSkip, m.Overlap)
	assert.Equal(t, 5.0, m.JitterSeconds)
	assert.Equal(t, 100, m.MaxCatchUp, "the bound in force")
	o, _ := admin.FindSchedule(vs, "once")
	assert.Equal(t, admin.CatchUpAll, o.CatchUp)
	assert.Equal(t, 3, o.MaxCatchUp)
	p, _ := admin.FindSchedule(vs, slashSchedule)
	assert.True(t, p.Paused)
	assert.True(t, p.NextAt.IsZero(), "no next tick while paused")
	assert.NotContains(t, string(r.raw), `"next_at":"0001`, "zero times are left out")

	// A tick passes: the run shows as the last run, and the outcome names it.
	fake.Advance(time.Minute + 5*time.Second)
	awaitRuns(t, e, "minutely", 1)
	r = c.do(http.MethodGet, "/schedules/minutely", nil).expect(t, http.StatusOK, "after a tick")
	var mv admin.ScheduleView
	require.NoError(t, jsonUnmarshal(r.raw, &mv))
	assert.Equal(t, uint64(1), mv.Runs)
	assert.True(t, mv.LastAt.Equal(start.Add(time.Minute)), "last %v", mv.LastAt)
	require.NotZero(t, mv.LastID)
	assert.Equal(t, "ran #"+idString(mv.LastID), mv.Outcome())

	for _, tc := range []struct {
		name, method, path string
		status             int
		has                string // in the error, or the answer
	}{
		{"one schedule", http.MethodGet, "/schedules/nightly", http.StatusOK, `"spec":"0 3 * * *"`},
		{"an escaped name", http.MethodGet, sp, http.StatusOK, `"paused":true`},
		{"unknown", http.MethodGet, "/schedules/nope", http.StatusNotFound, `no schedule "nope"`},
		{"pause", http.MethodPost, "/schedules/nightly/pause", http.StatusOK, `"status":"paused","paused":true`},
		{"paused has no next", http.MethodGet, "/schedules/nightly", http.StatusOK, `"paused":true`},
		{"pause again", http.MethodPost, "/schedules/nightly/pause", http.StatusOK, `"paused":true`},
		{"resume", http.MethodPost, "/schedules/nightly/resume", http.StatusOK, `"status":"resumed","paused":false,"next_at":"`},
		{"resume an escaped name", http.MethodPost, sp + "/resume", http.StatusOK, `"schedule":"sync/eu#1","status":"resumed"`},
		{"trigger", http.MethodPost, "/schedules/nightly/trigger", http.StatusOK, `"status":"triggered","paused":false,"next_at":"`},
		{"trigger a full queue", http.MethodPost, "/schedules/full/trigger", http.StatusServiceUnavailable, "MaxMessages"},
		{"trigger once", http.MethodPost, "/schedules/once/trigger", http.StatusOK, `"id":`},
		{"trigger a duplicate", http.MethodPost, "/schedules/once/trigger", http.StatusConflict, "duplicate"},
		{"pause unknown", http.MethodPost, "/schedules/typo/pause", http.StatusNotFound, `no schedule "typo"`},
		{"resume unknown", http.MethodPost, "/schedules/typo/resume", http.StatusNotFound, "typo"},
		{"trigger unknown", http.MethodPost, "/schedules/typo/trigger", http.StatusNotFound, "typo"},
		{"remove unknown", http.MethodPost, "/schedules/typo/remove", http.StatusNotFound, "typo"},
		{"remove", http.MethodPost, sp + "/remove", http.StatusOK, `"status":"removed"`},
		{"removed is unknown", http.MethodGet, sp, http.StatusNotFound, ""},
		{"pause is POST only", http.MethodGet, "/schedules/nightly/pause", http.StatusMethodNotAllowed, ""},
		{"trigger is POST only", http.MethodGet, "/schedules/nightly/trigger", http.StatusMethodNotAllowed, ""},
		{"no DELETE", http.MethodDelete, "/schedules/nightly", http.StatusMethodNotAllowed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(tc.method, tc.path, nil).expect(t, tc.status, tc.name)
			if tc.status >= 400 {
				assert.Contains(t, r.errorText(), tc.has)
				return
			}
			assert.Contains(t, string(r.raw), tc.has)
		})
	}

	// The trigger's run is in the schedule's queue, named by its header;
	// the nightly's next tick is as it was.
	d, ok := e.Queue("reports").TryDequeue()
	require.True(t, ok, "the triggered run")
	assert.Equal(t, "nightly", d.Message.Headers[ringwal.ScheduleHeader])
	assert.NotContains(t, d.Message.Headers, ringwal.TickHeader, "a trigger is no tick")
	var nv admin.ScheduleView
	require.NoError(t, jsonUnmarshal(c.do(http.MethodGet, "/schedules/nightly", nil).expect(t, http.StatusOK, "").raw, &nv))
	assert.Equal(t, d.ID, nv.LastID)
	assert.True(t, nv.NextAt.Equal(start.Add(3*time.Hour)), "next %v", nv.NextAt)
	assert.Equal(t, "ran #"+idString(d.ID), nv.Outcome())
	names = nil
	for _, in := range e.Schedules() {
		names = append(names, in.Name)
	}
	assert.Equal(t, []string{"full", "minutely", "nightly", "once"}, names, "removed")

	require.NoError(t, e.Close())
	c.do(http.MethodGet, "/schedules", nil).expect(t, http.StatusServiceUnavailable, "closed")
	c.do(http.MethodPost, "/schedules/nightly/pause", nil).expect(t, http.StatusServiceUnavailable, "closed")
}

// The Client speaks schedules: the list, one, pause and resume, trigger
// with the run's ID, errors.Is across the wire (ErrNotFound, ErrFull,
// ErrDuplicate), and remove.
func TestClientSchedules(t *testing.T) {
	e, _, c, _ := clientEngine(t)
	schedulesFixture(t, e)
	ctx := context.Background()

	vs, err := c.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, vs, 5)
	v, err := c.Schedule(ctx, slashSchedule)
	require.NoError(t, err)
	assert.Equal(t, "sync", v.Queue)
	assert.True(t, v.Paused)
	_, err = c.Schedule(ctx, "typo")
	assert.ErrorIs(t, err, ringwal.ErrNotFound)

	require.NoError(t, c.ResumeSchedule(ctx, slashSchedule))
	v, err = c.Schedule(ctx, slashSchedule)
	require.NoError(t, err)
	assert.False(t, v.Paused)
	assert.False(t, v.NextAt.IsZero())
	require.NoError(t, c.PauseSchedule(ctx, "nightly"))
	in := enginetest.Schedule(t, e, "nightly")
	assert.True(t, in.Paused, "the engine's schedule is paused")

	id, err := c.TriggerSchedule(ctx, "nightly")
	require.NoError(t, err, "a paused schedule runs when triggered")
	require.NotZero(t, id)
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, "reports", info.Message.Queue)
	assert.Equal(t, "nightly", info.Message.Headers[ringwal.ScheduleHeader])
	assert.Equal(t, id, enginetest.Schedule(t, e, "nightly").LastID)

	_, err = c.TriggerSchedule(ctx, "full")
	assert.ErrorIs(t, err, ringwal.ErrFull)
	_, err = c.TriggerSchedule(ctx, "once")
	require.NoError(t, err)
	_, err = c.TriggerSchedule(ctx, "once")
	assert.ErrorIs(t, err, ringwal.ErrDuplicate)
	assert.ErrorIs(t, err, admin.ErrConflict)
	assert.NotErrorIs(t, err, ringwal.ErrInvalid)
	_, err = c.TriggerSchedule(ctx, "typo")
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	assert.ErrorIs(t, c.PauseSchedule(ctx, "typo"), ringwal.ErrNotFound)
	assert.ErrorIs(t, c.ResumeSchedule(ctx, "typo"), ringwal.ErrNotFound)

	require.NoError(t, c.RemoveSchedule(ctx, "nightly"))
	assert.ErrorIs(t, c.RemoveSchedule(ctx, "nightly"), ringwal.ErrNotFound)
	vs, err = c.Schedules(ctx)
	require.NoError(t, err)
	_, found := admin.FindSchedule(vs, "nightly")
	assert.False(t, found)
	_, err = e.Get(id)
	assert.NoError(t, err, "the run stays")

	require.NoError(t, e.Close())
	_, err = c.Schedules(ctx)
	assert.ErrorIs(t, err, ringwal.ErrClosed)
}

func idString(id ringwal.ID) string { return strconv.FormatUint(id, 10) }
