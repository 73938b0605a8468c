package ringwal

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/internal/sched"
	"github.com/ringwal/ringwal/internal/wal"
)

// This file owns schedules: what a schedule is, the registry and the
// verbs that change it. schedule_spec.go owns the ticks a spec names,
// schedule_run.go running them, journal_schedule.go their log records.

// Overlap says what a schedule's tick does while the previous run is live.
type Overlap uint8

const (
	// OverlapAllow (zero): every tick runs.
	OverlapAllow Overlap = iota
	// OverlapSkip: a tick is skipped (counted in ScheduleInfo.Skipped)
	// while the previous run is Pending, Delayed, Leased or Held.
	OverlapSkip
)

// CatchUp says what a schedule does with the ticks that passed while the
// engine was closed (or that it could not run in time).
type CatchUp uint8

const (
	// CatchUpSkip (zero): missed ticks are skipped (counted in Skipped);
	// the next run is the next future tick.
	CatchUpSkip CatchUp = iota
	// CatchUpOne: one run stands for all the missed ticks.
	CatchUpOne
	// CatchUpAll: each missed tick runs, the latest MaxCatchUp of them
	// (older ones are counted in Skipped).
	CatchUpAll
)

// defaultMaxCatchUp is MaxCatchUp's zero value.
const defaultMaxCatchUp = 100

// Schedule is a durable periodic job: at each tick of Spec, Message is
// enqueued (into Message.Queue).
type Schedule struct {
	// Name identifies the schedule (1 to 128 bytes, as a queue name).
	Name string
	// Spec is when it ticks: cron fields (5, or 6 with seconds first),
	// a descriptor (@yearly, @monthly, @weekly, @daily, @hourly), or
	// @every with a Go duration from 1s to 87600h, ten years (@every
	// 90s). Calendar specs read the wall clock of UTC, or of the zone a
	// CRON_TZ=Area/City prefix names. Across a DST change, a wall-clock
	// time the clock repeats runs once, the first time. Those it skips
	// run once, when the gap ends.
	// @every ticks count from when the schedule was added. Ticks end at
	// the last instant the engine represents (2262-04-11T23:47:16Z). Zones
	// come from the system's zone database; a program for a machine
	// without one imports time/tzdata. A schedule read back from the log
	// whose spec this machine cannot use (a zone it lacks, an @every
	// period an older build allowed) is kept but never ticks; LastError
	// says why, and adding it again with a valid spec mends it.
	Spec string
	// Message is enqueued at each tick, with two headers more: the
	// schedule's name (ScheduleHeader) and the tick (TickHeader). Its
	// Delay and TTL count from the run; a Deadline is absolute (rarely
	// what a periodic job wants).
	Message Message
	// Overlap: OverlapAllow (zero) or OverlapSkip.
	Overlap Overlap
	// CatchUp: what happens to ticks missed while the engine was closed.
	CatchUp CatchUp
	// MaxCatchUp bounds CatchUpAll's runs; 0 means 100.
	MaxCatchUp int
	// Jitter: each run is enqueued at a random moment up to Jitter after
	// its tick (the tick itself is what is recorded).
	Jitter time.Duration
	// Paused: no tick runs. Ticks that pass while paused are not run, not
	// even on ResumeSchedule.
	Paused bool
}

// ScheduleInfo is a schedule and its state.
type ScheduleInfo struct {
	Schedule
	// Next is the next tick (zero while paused, or when the spec never
	// fires again); in the past, it is a tick whose run could not be
	// logged (LastError says why), tried again within a minute. Last is
	// the last tick run or skipped (zero: none yet).
	Next, Last time.Time
	// LastID is the last run's message (0: none yet).
	LastID ID
	// Runs counts the runs (ticks, catch-ups and TriggerSchedule's);
	// Skipped the ticks not run (Overlap, CatchUp, a full queue, a
	// duplicate, or a run the engine refuses as invalid).
	Runs, Skipped uint64
	// LastError is why the last tick did not run, "" after a run.
	LastError string
}

// schedule is one registered schedule. Its state changes under mu, which
// a run holds from before its record is logged until its state says so
// (a snapshot reads the state under mu: it sees the run or the run's
// record comes after the snapshot's cut).
type schedule struct {
	id uint64 // names it in timer entries
	mu sync.Mutex
	s  Schedule
	sp spec
	// gen moves on with every change: a timer entry of another generation
	// is stale.
	gen uint32
	// anchor is when it was added (@every counts from it); from: ticks at
	// or before it never run (when it was added, changed or resumed).
	anchor, from int64
	last         int64 // the last tick handled (run or skipped), 0: none
	lastID       ID
	runs         uint64
	skipped      uint64
	lastErr      string
	next         int64 // the tick its timer waits for (0: none)
	// removed: RemoveSchedule or a replacing AddSchedule took it out.
	removed bool
	// broken: its spec does not parse here (a zone this machine lacks):
	// it never ticks, LastError says why.
	broken bool
	// fails counts the runs in a row that could not be logged: the next
	// try waits retryDelay(fails).
	fails uint32
}

// scheduleTable holds the schedules by name and by id.
type scheduleTable struct {
	// change orders the changes (add, remove, pause, resume): each holds
	// it, then the schedule's mu.
	change    sync.Mutex
	mu        sync.Mutex // the maps
	byName    map[string]*schedule
	byID      map[uint64]*schedule
	lastTimer uint64 // the last schedule.id given
	run       scheduleRunner
}

func (t *scheduleTable) lookup(name string) *schedule {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byName[name]
}

func (t *scheduleTable) byTimer(id uint64) *schedule {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// list returns the schedules by name.
func (t *scheduleTable) list() []*schedule {
	t.mu.Lock()
	out := make([]*schedule, 0, len(t.byName))
	for _, s := range t.byName {
		out = append(out, s)
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].s.Name < out[j].s.Name })
	return out
}

// put registers s under its name, in place of any other.
func (t *scheduleTable) put(s *schedule) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byName == nil {
		t.byName, t.byID = make(map[string]*schedule), make(map[uint64]*schedule)
	}
	if old := t.byName[s.s.Name]; old != nil {
		delete(t.byID, old.id)
	}
	t.lastTimer++
	s.id = t.lastTimer
	t.byName[s.s.Name] = s
	t.byID[s.id] = s
}

func (t *scheduleTable) remove(s *schedule) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byName[s.s.Name] == s {
		delete(t.byName, s.s.Name)
	}
	delete(t.byID, s.id)
}

// checkSchedule checks s as AddSchedule does, its message with
// checkMessage, and returns its parsed spec: the one home of these
// checks, which replay runs on every schedule record too
// (applySchedule). The spec comes last, so that a spec refused only here
// (refusedHere) means every other field is good.
func checkSchedule(s *Schedule, checkMessage func(*Message) error) (spec, error) {
	if err := validQueueName(s.Name); err != nil {
		return spec{}, invalidf("schedule name: %v", err)
	}
	switch {
	case s.Overlap > OverlapSkip:
		return spec{}, invalidf("schedule %q: Overlap %d", s.Name, s.Overlap)
	case s.CatchUp > CatchUpAll:
		return spec{}, invalidf("schedule %q: CatchUp %d", s.Name, s.CatchUp)
	case s.MaxCatchUp < 0:
		return spec{}, invalidf("schedule %q: MaxCatchUp %d is negative", s.Name, s.MaxCatchUp)
	case s.Jitter < 0:
		return spec{}, invalidf("schedule %q: Jitter %v is negative", s.Name, s.Jitter)
	}
	m := s.Message
	if err := checkMessage(&m); err != nil {
		return spec{}, invalidf("schedule %q: message: %v", s.Name, err)
	}
	return parseSpec(s.Spec)
}

// validSchedule checks s as AddSchedule does and returns its parsed spec.
func (e *Engine) validSchedule(s *Schedule) (spec, error) {
	if err := e.validScheduleName(s.Name); err != nil {
		return spec{}, invalidf("schedule name: %v", err)
	}
	sp, err := checkSchedule(s, e.validate)
	if err != nil {
		return spec{}, err
	}
	now := e.preciseNow()
	if _, ok := sp.next(now, now); !ok {
		return spec{}, invalidf("schedule %q: spec %q never fires", s.Name, s.Spec)
	}
	return sp, nil
}

// AddSchedule adds s, or replaces the schedule of the same name. It is
// logged (durable as the mode promises before it returns) and survives
// restarts. Adding a schedule equal to the one registered changes
// nothing: services may add their schedules at every start, and missed
// ticks still catch up. A changed schedule keeps its counts and last run;
// its ticks count from now. A bad name, spec (see Schedule.Spec; a spec
// that never fires or an @every period outside 1s to 87600h) or message
// is ErrInvalid. If the log fails, the error says so and the schedule is
// as it was. Safe for concurrent use.
func (e *Engine) AddSchedule(s Schedule) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	sp, err := e.validSchedule(&s)
	if err != nil {
		return err
	}
	s.Message = cloneMessage(s.Message)
	t := &e.scheds
	t.change.Lock()
	defer t.change.Unlock()
	now := e.preciseNow()
	ns := &schedule{s: s, sp: sp, anchor: now, from: now}
	old := t.lookup(s.Name)
	if old != nil {
		// Held until old is marked removed: a run of old under way logs
		// its tick before ns's record, and none starts after.
		old.mu.Lock()
		if reflect.DeepEqual(old.s, s) {
			old.mu.Unlock()
			return nil
		}
		ns.last, ns.lastID, ns.runs, ns.skipped, ns.lastErr = old.last, old.lastID, old.runs, old.skipped, old.lastErr
		if old.broken {
			ns.lastErr = "" // its spec is mended
		}
	}
	// Log, then make visible, then wait. The new schedule ns is listed
	// before its record is appended. It is held (its state is read under
	// ns.mu) until the record has its place. A snapshot that lists ns
	// reads it with its record before the snapshot's cut, or after it
	// (replayed on top). A snapshot that does not list it was listing
	// before ns was, after its cut was taken. So the record comes after
	// the cut.
	ns.mu.Lock()
	t.put(ns)
	lg, err := e.logSchedule(ns)
	if err != nil {
		ns.removed = true // a reader that listed it skips it
		t.remove(ns)
		if old != nil {
			t.put(old) // under a new timer id: armed again
			old.gen++
			e.armLocked(old, now)
			old.mu.Unlock()
		}
		ns.mu.Unlock()
		return err
	}
	if old != nil {
		old.removed = true
		old.gen++
		old.mu.Unlock()
	}
	ns.mu.Unlock()
	if h := scheduleLogged.Load(); h != nil {
		(*h)(e)
	}
	if err := lg.wait(); err != nil {
		e.undoAdd(ns, old)
		return fmt.Errorf("ringwal: schedule %q: %w", s.Name, err)
	}
	e.arm(ns, now)
	return nil
}

// scheduleLogged, when set (tests only), is called by AddSchedule once
// its record has its place in the log and the schedule is visible,
// before it waits for the record.
var scheduleLogged atomic.Pointer[func(*Engine)]

// undoAdd takes back an AddSchedule whose record the log failed to
// write: the schedule it replaced comes back (with the counts, should a
// trigger have run meanwhile), or none. That is logged too (without
// waiting, best effort), so that a snapshot taken meanwhile, which may
// hold ns, is followed by what is true. t.change held; ns was never armed.
func (e *Engine) undoAdd(ns, old *schedule) {
	t := &e.scheds
	now := e.preciseNow()
	ns.mu.Lock()
	ns.removed = true
	ns.gen++
	var rec wal.Record
	var err error
	if old != nil {
		old.mu.Lock()
		old.last, old.lastID, old.runs, old.skipped = ns.last, ns.lastID, ns.runs, ns.skipped
		if !old.broken {
			old.lastErr = ns.lastErr
		}
		old.removed = false
		old.gen++
		t.put(old)
		rec, err = scheduleRecord(old, now)
		old.mu.Unlock()
	} else {
		t.remove(ns)
		rec = wal.Record{Kind: wal.KindScheduleRemove, Key: ns.s.Name, Time: now}
	}
	ns.mu.Unlock()
	if err == nil {
		_, err = e.logRecord(&rec, false)
	}
	if err != nil {
		e.opts.Logger.Error("ringwal: could not log a schedule put back after its change failed", "schedule", ns.s.Name, "err", err)
	}
	if old != nil {
		e.arm(old, now)
	}
}

// RemoveSchedule removes the named schedule (logged). A run already under
// way finishes. An unknown name is ErrNotFound. Safe for concurrent use.
func (e *Engine) RemoveSchedule(name string) error {
	return e.changeSchedule(name, func(s *schedule) error {
		if err := e.logScheduleRemove(name); err != nil {
			return err
		}
		s.removed = true
		s.gen++
		e.scheds.remove(s)
		return nil
	})
}

// changeSchedule calls change with the named schedule, holding the
// registry's change lock and the schedule's lock; an unknown name is
// ErrNotFound.
func (e *Engine) changeSchedule(name string, change func(s *schedule) error) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	t := &e.scheds
	t.change.Lock()
	defer t.change.Unlock()
	s := t.lookup(name)
	if s == nil {
		return notFoundSchedule(name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return change(s)
}

// PauseSchedule stops the named schedule's ticks until ResumeSchedule
// (logged). Safe for concurrent use.
func (e *Engine) PauseSchedule(name string) error { return e.setSchedulePaused(name, true) }

// ResumeSchedule restarts the named schedule's ticks from now: ticks that
// passed while it was paused do not run (logged). Safe for concurrent use.
func (e *Engine) ResumeSchedule(name string) error { return e.setSchedulePaused(name, false) }

func (e *Engine) setSchedulePaused(name string, paused bool) error {
	return e.changeSchedule(name, func(s *schedule) error { return e.setPausedLocked(s, paused) })
}

func (e *Engine) setPausedLocked(s *schedule, paused bool) error {
	if s.s.Paused == paused {
		return nil
	}
	now := e.preciseNow()
	was, wasFrom := s.s.Paused, s.from
	s.s.Paused = paused
	if !paused {
		s.from = max(s.from, now)
	}
	if err := e.appendSchedule(s); err != nil {
		s.s.Paused, s.from = was, wasFrom
		return err
	}
	s.gen++
	s.next = 0
	if !paused {
		e.armLocked(s, now)
	}
	return nil
}

// Schedules lists the schedules by name. Safe for concurrent use.
func (e *Engine) Schedules() []ScheduleInfo {
	var out []ScheduleInfo
	for _, s := range e.scheds.list() {
		s.mu.Lock()
		out = append(out, s.info())
		s.mu.Unlock()
	}
	return out
}

// info is s's ScheduleInfo; s.mu held.
func (s *schedule) info() ScheduleInfo {
	in := ScheduleInfo{Schedule: s.s, LastID: s.lastID, Runs: s.runs, Skipped: s.skipped, LastError: s.lastErr}
	in.Message = cloneMessage(s.s.Message)
	if s.last != 0 {
		in.Last = time.Unix(0, s.last)
	}
	if s.next != 0 && !s.s.Paused {
		in.Next = time.Unix(0, s.next)
	}
	return in
}

// arm sets s's timer for its next tick after now; e.scheds.mu may be
// held, s.mu not.
func (e *Engine) arm(s *schedule, now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.armLocked(s, now)
}

// armLocked is arm with s.mu held. The next tick is the first after the
// later of its last tick and its from, so that a tick already handled
// never runs again and one due while the engine was closed is due now.
func (e *Engine) armLocked(s *schedule, now int64) {
	if s.removed || s.s.Paused || s.broken {
		s.next = 0
		return
	}
	next, ok := s.sp.next(max(s.last, s.from), s.anchor)
	if !ok {
		s.next = 0
		return
	}
	s.next = next
	at := next
	if j := s.s.Jitter; j > 0 {
		at = addSat(at, e.jitter(j))
	}
	if s.fails > 0 {
		// Its last run could not be logged: the tick is tried again in a
		// while, not at once.
		at = max(at, addSat(now, int64(retryDelay(s.fails))))
	}
	if e.hk != nil {
		e.hk.schedule(at, sched.Entry{Kind: timerSchedule, ID: s.id, Gen: s.gen})
	}
}

func notFoundSchedule(name string) error {
	return fmt.Errorf("%w: schedule %q", ErrNotFound, name)
}

// jitter returns a random delay in [0, j) (unix ns).
func (e *Engine) jitter(j time.Duration) int64 { return rand.Int64N(int64(j)) }

// cloneMessage copies m's Payload and Headers, which the engine keeps.
// It puts m in the form its record reads back as: empty as nil, the
// Deadline in UTC. So adding the same schedule again compares equal to
// the replayed one.
func cloneMessage(m Message) Message {
	if len(m.Payload) == 0 {
		m.Payload = nil
	} else {
		m.Payload = append([]byte(nil), m.Payload...)
	}
	if !m.Deadline.IsZero() {
		m.Deadline = m.Deadline.UTC().Round(0)
	}
	if len(m.Headers) == 0 {
		m.Headers = nil
	} else {
		h := make(map[string]string, len(m.Headers))
		for k, v := range m.Headers {
			h[k] = v
		}
		m.Headers = h
	}
	return m
}
