package ringwal

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/wal"
)

// runRecord is the record of schedule name's run id for tick, as the
// engine logs it (the run's enqueue record, stamped).
func runRecord(name string, id uint64, tick, at int64) wal.Record {
	m := Message{Payload: []byte("run")}
	var r rec
	r.id.Store(id)
	r.fill(&m, 0, at, 0, 0, nil, nil)
	var out wal.Record
	enqueueRecord(&out, &r, id)
	(&scheduleTick{name: name, at: tick}).stamp(&out)
	return out
}

// skipRecord is the record of n ticks of schedule name skipped, the
// latest at tick.
func skipRecord(name string, tick int64, n int32) wal.Record {
	return wal.Record{Kind: wal.KindScheduleTick, Text: name, Until: tick, Attempt: n, Time: tick}
}

// replayer applies records to a fresh replay state of a memory engine, as
// replay does (encoded and decoded, prepared, applied).
func replayer(t *testing.T, at int64) (*Engine, *replayState, func(wal.Record)) {
	e := openEngine(t, "", Options{Clock: clock.NewFake(time.Unix(0, at))})
	rs := newReplayState(10)
	prepare := rs.newPreparer()
	return e, rs, func(r wal.Record) {
		got := roundTrip(t, r)
		prepare(got)
		e.apply(rs, got)
	}
}

// A checkpoint's snapshot may already hold the effect of records that
// come after its cut (appended before the checkpoint began, in a batch
// it left in the log), and replay applies those again on top of it. A
// tick's record (a run or a skip) must then leave the schedule as the
// snapshot has it, and count only what the snapshot does not hold: a run
// beside a checkpoint counts once after a restart.
func TestScheduleTickRecordsReplayedOverTheirEffectCountOnce(t *testing.T) {
	t0 := int64(1_800_000_000_000_000_000)
	min := int64(time.Minute)
	for _, tc := range []struct {
		name      string
		records   []wal.Record // after the snapshot's schedule record
		runs      uint64
		skipped   uint64
		last      int64
		lastID    uint64
		lastError string
	}{
		{"the run the snapshot holds", []wal.Record{runRecord("s", 42, t0+2*min, t0+2*min)}, 3, 5, t0 + 2*min, 42, ""},
		{"the skip and the run the snapshot holds", []wal.Record{skipRecord("s", t0+min, 5), runRecord("s", 42, t0+2*min, t0+2*min)}, 3, 5, t0 + 2*min, 42, ""},
		{"a run the snapshot holds, then one it does not", []wal.Record{runRecord("s", 42, t0+2*min, t0+2*min), runRecord("s", 43, t0+3*min, t0+3*min)}, 4, 5, t0 + 3*min, 43, ""},
		{"a trigger the snapshot holds, then a skip it does not", []wal.Record{runRecord("s", 41, 0, t0), skipRecord("s", t0+4*min, 2)}, 3, 7, t0 + 4*min, 42, ""},
		{"a trigger the snapshot does not hold", []wal.Record{runRecord("s", 50, 0, t0+5*min)}, 4, 5, t0 + 2*min, 50, ""},
		{"each twice", []wal.Record{runRecord("s", 43, t0+3*min, t0+3*min), runRecord("s", 43, t0+3*min, t0+3*min),
			skipRecord("s", t0+4*min, 1), skipRecord("s", t0+4*min, 1)}, 4, 6, t0 + 4*min, 43, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, replay := replayer(t, t0)
			snap, err := scheduleRecord(&schedule{s: Schedule{Name: "s", Spec: "@every 1m"}, anchor: t0 - min, from: t0 - min,
				last: t0 + 2*min, lastID: 42, runs: 3, skipped: 5}, t0+2*min)
			require.NoError(t, err)
			replay(snap)
			for _, r := range tc.records {
				replay(r)
			}
			s := e.scheds.lookup("s")
			require.NotNil(t, s)
			assert.Equal(t, tc.runs, s.runs, "runs")
			assert.Equal(t, tc.skipped, s.skipped, "skipped")
			assert.Equal(t, tc.last, s.last, "last")
			assert.Equal(t, tc.lastID, s.lastID, "last ID")
		})
	}
}

// goodSchedule is a schedule record's content as AddSchedule writes it.
func goodSchedule(at int64) scheduleJSON {
	return scheduleJSON{Spec: "@every 1m", Message: Message{Payload: []byte("x")}, Anchor: at, From: at}
}

// withRecord opens dir (an engine's, holding schedule "ok") after
// appending rec to its log, and returns Open's error.
func withRecord(t *testing.T, fake *clock.Fake, rec wal.Record) (*Engine, error) {
	dir := t.TempDir()
	e, err := Open(dir, Options{Clock: fake})
	require.NoError(t, err)
	require.NoError(t, e.AddSchedule(Schedule{Name: "ok", Spec: "@hourly"}))
	require.NoError(t, e.Close())
	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	require.NoError(t, l.Append(&rec))
	require.NoError(t, l.Close())
	e, err = Open(dir, Options{Clock: fake})
	if e != nil {
		t.Cleanup(func() { _ = e.Close() })
	}
	return e, err
}

func scheduleJSONRecord(t *testing.T, name string, j scheduleJSON, at int64) wal.Record {
	b, err := json.Marshal(j)
	require.NoError(t, err)
	return wal.Record{Kind: wal.KindSchedule, Key: name, Time: at, Text: string(b)}
}

// Open checks every field of a schedule's records as AddSchedule checks
// a schedule (and the state's instants and counts for what the engine
// writes), so that a log well-formed but hostile (a crafted backup with
// honest checksums) is refused with ErrCorrupt naming the record rather
// than crashing the runner or spinning it.
func TestReplayRefusesScheduleRecordsOutOfRange(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	at := fake.Now().UnixNano()
	for _, tc := range []struct {
		name   string
		key    string
		change func(j *scheduleJSON)
		words  string // the error names what was wrong
	}{
		{"negative MaxCatchUp", "bad", func(j *scheduleJSON) { j.MaxCatchUp = -3 }, "MaxCatchUp"},
		{"unknown Overlap", "bad", func(j *scheduleJSON) { j.Overlap = 7 }, "Overlap"},
		{"unknown CatchUp", "bad", func(j *scheduleJSON) { j.CatchUp = 9 }, "CatchUp"},
		{"negative Jitter", "bad", func(j *scheduleJSON) { j.Jitter = -time.Second }, "Jitter"},
		{"message priority out of range", "bad", func(j *scheduleJSON) { j.Message.Priority = 3 }, "priority"},
		{"message with a negative Delay", "bad", func(j *scheduleJSON) { j.Message.Delay = -time.Second }, "Delay"},
		{"malformed spec", "bad", func(j *scheduleJSON) { j.Spec = "* * *" }, "spec"},
		{"period that is not positive", "bad", func(j *scheduleJSON) { j.Spec = "@every -1m" }, "period"},
		{"anchor in 1677", "bad", func(j *scheduleJSON) { j.Anchor = math.MinInt64 + 1 }, "anchor"},
		{"from before 1970", "bad", func(j *scheduleJSON) { j.From = -5 }, "from"},
		{"last tick before 1970", "bad", func(j *scheduleJSON) { j.Last = -1 }, "last"},
		{"empty name", "", func(j *scheduleJSON) {}, "name"},
		{"reserved name", "_x", func(j *scheduleJSON) {}, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := goodSchedule(at)
			tc.change(&j)
			var err error
			rec := scheduleJSONRecord(t, tc.key, j, at)
			require.NotPanics(t, func() { _, err = withRecord(t, fake, rec) })
			require.ErrorIs(t, err, wal.ErrCorrupt)
			assert.Contains(t, err.Error(), "schedule record", "the error names the record")
			assert.Contains(t, err.Error(), tc.words)
			// Restore and VerifyBackup check a backup's records alike.
			assert.ErrorIs(t, checkRecord(&rec), wal.ErrCorrupt, "checkRecord")
		})
	}
	t.Run("negative skip count", func(t *testing.T) {
		rec := skipRecord("ok", at+int64(time.Hour), -3)
		_, err := withRecord(t, fake, rec)
		require.ErrorIs(t, err, wal.ErrCorrupt)
		assert.Contains(t, err.Error(), "schedule record")
		assert.ErrorIs(t, checkRecord(&rec), wal.ErrCorrupt, "checkRecord")
	})
}

// A spec an older build accepted but this one does not (an @every period
// outside 1s..87600h), like one naming a zone this machine lacks, keeps
// its schedule: listed, never ticking, its LastError saying why, until
// it is added again with a spec that is valid here.
func TestReplayKeepsSchedulesWhoseSpecThisBuildRefuses(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	at := fake.Now().UnixNano()
	for _, tc := range []struct{ spec, words string }{
		{"@every 20ms", "period"},
		{"@every 1ns", "period"},
		{"@every 2562047h", "period"},
		{"CRON_TZ=No/Such_Zone 0 3 * * *", "zone"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			j := goodSchedule(at)
			j.Spec = tc.spec
			e, err := withRecord(t, fake, scheduleJSONRecord(t, "old", j, at))
			require.NoError(t, err)
			var in ScheduleInfo
			for _, s := range e.Schedules() {
				if s.Name == "old" {
					in = s
				}
			}
			require.Equal(t, "old", in.Name, "the schedule is kept")
			assert.Contains(t, in.LastError, tc.words)
			assert.True(t, in.Next.IsZero(), "it never ticks")
			fake.Advance(time.Minute)
			_, ok := e.TryDequeue()
			assert.False(t, ok, "no run")
			require.NoError(t, e.AddSchedule(Schedule{Name: "old", Spec: "@every 1m"}), "adding it again mends it")
			assert.Empty(t, e.Schedules()[1].LastError)
		})
	}
}

// A schedule AddSchedule added is in every checkpoint taken once its
// record has its place in the log: a checkpoint whose cut covers the
// record but whose snapshot was taken before the schedule was visible
// would drop the one and miss the other, and lose the schedule.
func TestAddScheduleSurvivesACheckpointTakenAsItIsLogged(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	var ckErr error
	hook := func(in *Engine) {
		if in == e {
			ckErr = in.Checkpoint()
		}
	}
	scheduleLogged.Store(&hook)
	t.Cleanup(func() { scheduleLogged.Store(nil) })
	require.NoError(t, e.AddSchedule(Schedule{Name: "nightly", Spec: "@daily"}))
	scheduleLogged.Store(nil)
	require.NoError(t, ckErr)
	require.NoError(t, e.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	var names []string
	for _, s := range e.Schedules() {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"nightly"}, names, "the schedule survives the checkpoint and a restart")
}

// A schedule logged before headers were bounded (its message with more
// headers than Enqueue now takes) still opens, as an enqueue record of
// such a message does: the bounds are Enqueue's, not the log's.
func TestReplayKeepsASchedulesHeadersPastTodaysBounds(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	at := fake.Now().UnixNano()
	j := goodSchedule(at)
	j.Message.Headers = map[string]string{}
	for i := range maxHeaders + 44 {
		j.Message.Headers[fmt.Sprint("h", i)] = "v"
	}
	rec := scheduleJSONRecord(t, "many-headers", j, at)
	e, err := withRecord(t, fake, rec)
	require.NoError(t, err)
	assert.Len(t, e.Schedules(), 2, "the one withRecord adds, and this one")
	assert.NoError(t, checkRecord(&rec))
}
