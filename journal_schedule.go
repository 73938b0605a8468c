package ringwal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ringwal/ringwal/internal/wal"
)

// The log records of schedules: a schedule and its state (added, changed,
// paused, resumed; and in snapshots), its removal, and each tick handled.

// scheduleJSON is a schedule and its state as its record carries them.
type scheduleJSON struct {
	Spec       string        `json:"spec"`
	Message    Message       `json:"message"`
	Overlap    Overlap       `json:"overlap,omitempty"`
	CatchUp    CatchUp       `json:"catch_up,omitempty"`
	MaxCatchUp int           `json:"max_catch_up,omitempty"`
	Jitter     time.Duration `json:"jitter,omitempty"`
	Paused     bool          `json:"paused,omitempty"`
	Anchor     int64         `json:"anchor"`
	From       int64         `json:"from"`
	Last       int64         `json:"last,omitempty"`
	LastID     ID            `json:"last_id,omitempty"`
	Runs       uint64        `json:"runs,omitempty"`
	Skipped    uint64        `json:"skipped,omitempty"`
	LastError  string        `json:"last_error,omitempty"`
}

// scheduleRecord is s's record as of now; s.mu held (or s not yet seen by
// anyone else).
func scheduleRecord(s *schedule, now int64) (wal.Record, error) {
	b, err := json.Marshal(scheduleJSON{
		Spec: s.s.Spec, Message: s.s.Message, Overlap: s.s.Overlap, CatchUp: s.s.CatchUp,
		MaxCatchUp: s.s.MaxCatchUp, Jitter: s.s.Jitter, Paused: s.s.Paused,
		Anchor: s.anchor, From: s.from, Last: s.last, LastID: s.lastID, Runs: s.runs, Skipped: s.skipped, LastError: s.lastErr,
	})
	if err != nil {
		return wal.Record{}, fmt.Errorf("ringwal: schedule %q: %w", s.s.Name, err)
	}
	return wal.Record{Kind: wal.KindSchedule, Key: s.s.Name, Time: now, Text: string(b)}, nil
}

// logSchedule appends s's record without waiting for it, and returns
// what to wait for (a memory-only engine logs nothing). s.mu held.
func (e *Engine) logSchedule(s *schedule) (logged, error) {
	if e.log == nil {
		return logged{}, nil
	}
	if err := e.log.RequireFormat(2); err != nil {
		return logged{}, fmt.Errorf("ringwal: schedule %q: %w", s.s.Name, mapWALError(err))
	}
	rec, err := scheduleRecord(s, e.preciseNow())
	if err != nil {
		return logged{}, err
	}
	lg, err := e.logRecord(&rec, true)
	if err != nil {
		return logged{}, fmt.Errorf("ringwal: schedule %q: %w", s.s.Name, err)
	}
	return lg, nil
}

// appendSchedule is logSchedule, then waits until the record is as
// durable as the mode promises. s.mu held.
func (e *Engine) appendSchedule(s *schedule) error {
	lg, err := e.logSchedule(s)
	if err != nil {
		return err
	}
	if err := lg.wait(); err != nil {
		return fmt.Errorf("ringwal: schedule %q: %w", s.s.Name, err)
	}
	return nil
}

func (e *Engine) logScheduleRemove(name string) error {
	if e.log == nil {
		return nil
	}
	rec := wal.Record{Kind: wal.KindScheduleRemove, Key: name, Time: e.preciseNow()}
	if err := e.log.Append(&rec); err != nil {
		return fmt.Errorf("ringwal: removing schedule %q: %w", name, mapWALError(err))
	}
	return nil
}

// scheduleTick marks an enqueue as a schedule's run: its record becomes
// the tick's (stamp).
type scheduleTick struct {
	name string
	at   int64 // the tick; 0: a run TriggerSchedule asked for
}

// stamp turns the run's enqueue record into the tick's record.
func (t *scheduleTick) stamp(rec *wal.Record) {
	rec.Kind, rec.Text, rec.Until = wal.KindScheduleTick, t.name, t.at
}

// logSkip appends the record of n ticks of schedule name skipped, the
// latest at tick, and waits for it.
func (e *Engine) logSkip(name string, tick int64, n uint64) error {
	if e.log == nil {
		return nil
	}
	rec := wal.Record{Kind: wal.KindScheduleTick, Text: name, Until: tick, Attempt: int32(min(n, 1<<31-1)), Time: e.preciseNow()}
	if err := e.log.Append(&rec); err != nil {
		return fmt.Errorf("ringwal: schedule %q: skipping ticks: %w", name, mapWALError(err))
	}
	return nil
}

// decodeScheduleRecord reads a schedule record back. Every field is
// checked as AddSchedule checks it (checkSchedule). The message is checked
// with validFields: its payload against no MaxPayload and its headers
// against no bound, as those options may have changed since. The state's
// instants must be the engine's (after 1970). A bad one is an error
// wrapping ErrCorrupt naming the record. A spec this machine cannot use (a zone
// it lacks, an @every period an older build allowed) is no corruption:
// broken says why, and the schedule is kept, never to tick. It needs no
// engine: checkRecord runs it for Restore and VerifyBackup too.
func decodeScheduleRecord(r *wal.Record) (s *schedule, broken, err error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: schedule record %q: %s", wal.ErrCorrupt, r.Key, fmt.Sprintf(format, args...))
	}
	var j scheduleJSON
	if err := json.Unmarshal([]byte(r.Text), &j); err != nil {
		return nil, nil, corrupt("%v", err)
	}
	s = &schedule{
		s: Schedule{Name: r.Key, Spec: j.Spec, Message: cloneMessage(j.Message), Overlap: j.Overlap, CatchUp: j.CatchUp,
			MaxCatchUp: j.MaxCatchUp, Jitter: j.Jitter, Paused: j.Paused},
		anchor: j.Anchor, from: j.From, last: j.Last, lastID: j.LastID, runs: j.Runs, skipped: j.Skipped, lastErr: j.LastError,
	}
	sp, err := checkSchedule(&s.s, validFields)
	switch {
	case err != nil && !refusedHere(err):
		return nil, nil, corrupt("%v", err)
	case j.Anchor < 0 || j.From < 0 || j.Last < 0:
		return nil, nil, corrupt("anchor %d, from %d, last %d: an instant before 1970", j.Anchor, j.From, j.Last)
	}
	s.sp = sp
	return s, err, nil
}

// applySchedule replays a schedule's record (decodeScheduleRecord): it
// replaces any of its name.
func (e *Engine) applySchedule(rs *replayState, r *wal.Record) {
	s, broken, err := decodeScheduleRecord(r)
	if err != nil {
		if rs.err == nil {
			rs.err = err
		}
		return
	}
	if broken != nil {
		s.broken, s.lastErr = true, broken.Error()
		e.opts.Logger.Warn("ringwal: schedule kept but never ticks", "schedule", r.Key, "err", broken)
	}
	if old := e.scheds.lookup(r.Key); old != nil {
		old.removed = true
	}
	e.scheds.put(s)
}

func (e *Engine) applyScheduleRemove(r *wal.Record) {
	if s := e.scheds.lookup(r.Key); s != nil {
		s.removed = true
		e.scheds.remove(s)
	}
}

// applyScheduleTick replays a tick: the run's message, as its enqueue
// record would, and the schedule's state. A tick of a schedule removed
// since (or replaced: the record of a newer one follows) changes no
// schedule.
//
// Replay may apply a tick's record on top of a snapshot that already
// counts it (the record came after the snapshot's cut, but before the
// snapshot read the schedule): it then changes nothing. A schedule's
// runs and skips are handled in order, under its lock. So their records
// come in order of ID (each run's message) and of tick (each skip's
// latest tick). One the state already holds has an ID at most its last
// run's, or a tick at most its last tick. Applying a record twice thus
// counts it once.
func (e *Engine) applyScheduleTick(rs *replayState, r *wal.Record) {
	if r.ID != 0 {
		one := *r
		one.Kind, one.Text, one.Until = wal.KindEnqueue, "", 0
		e.apply(rs, &one)
	}
	s := e.scheds.lookup(r.Text)
	if s == nil {
		return
	}
	switch {
	case r.ID != 0 && r.ID > s.lastID:
		s.noteRun(r.Until, r.ID)
	case r.ID == 0 && r.Until > s.last:
		s.noteSkip(r.Until, uint64(r.Attempt), "")
	}
}

// emitSchedules emits every schedule's record, for a snapshot. Each is
// read under its lock, which a run holds until its state includes it.
func (e *Engine) emitSchedules(now int64, emit func(*wal.Record) error) error {
	for _, s := range e.scheds.list() {
		s.mu.Lock()
		rec, err := scheduleRecord(s, now)
		removed := s.removed
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if removed {
			continue
		}
		if err := emit(&rec); err != nil {
			return err
		}
	}
	return nil
}
