package ringwal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ringwal/ringwal/sched"
)

// Running schedules. Each schedule has one timer entry in the
// housekeeper's wheel, for its next tick (plus jitter). When it fires,
// the housekeeper hands the schedule to the runner, which enqueues the
// run off the timer goroutine (a run waits for the log, and timers must
// not). The runner is one goroutine, started when there is work and gone
// when there is none; Close waits for it.
//
// A run's enqueue record is also the tick's record (KindScheduleTick): a
// crash before it is durable leaves the tick unhandled, so it is due
// again after the restart (CatchUp decides what runs); a crash after it
// leaves it handled, so it never runs twice. Skipped ticks are logged too
// (one record for any number), so that a restart neither runs nor counts
// them again.

// scheduleRunner runs the schedules whose timers fired.
type scheduleRunner struct {
	mu      sync.Mutex
	due     []sched.Entry
	running bool
	wg      sync.WaitGroup
}

// catchUpScan bounds how many missed ticks are enumerated one by one
// (about a second of work). An @every spec further behind counts the
// older ticks by arithmetic; a calendar spec starts again a day before
// now, and the ticks between its scan's end and that day go uncounted.
const catchUpScan = 1 << 22

// scheduleDue hands a fired timer entry to the runner, starting it if it
// is not running. It runs on the timer goroutine.
func (e *Engine) scheduleDue(en sched.Entry) {
	r := &e.scheds.run
	r.mu.Lock()
	r.due = append(r.due, en)
	start := !r.running
	if start {
		r.running = true
		r.wg.Add(1)
	}
	r.mu.Unlock()
	if start {
		go e.runSchedules()
	}
}

// runSchedules is the runner: it runs what is due until nothing is.
func (e *Engine) runSchedules() {
	r := &e.scheds.run
	defer r.wg.Done()
	for {
		r.mu.Lock()
		due := r.due
		r.due = nil
		if len(due) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		for _, en := range due {
			if e.intake() != nil {
				continue // closing: the ticks stay due for the next Open
			}
			e.runDue(en)
		}
	}
}

// stopSchedules waits for the runner; the housekeeper is stopped, so
// nothing starts it again.
func (e *Engine) stopSchedules() { e.scheds.run.wg.Wait() }

// runDue handles the ticks of a schedule whose timer fired: those due by
// now, as its CatchUp and Overlap say, then arms the timer for the next.
func (e *Engine) runDue(en sched.Entry) {
	s := e.scheds.byTimer(en.ID)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed || s.gen != en.Gen || s.next == 0 || s.s.Paused {
		return
	}
	now := e.preciseNow()
	ticks, missed := s.dueTicks(now)
	if len(ticks) == 0 {
		e.armLocked(s, now)
		return
	}
	latest := ticks[len(ticks)-1]
	var run []int64
	switch s.s.CatchUp {
	case CatchUpSkip:
		// Ticks due before this Open passed while the engine was closed.
		if latest >= e.openedAt {
			run = ticks[len(ticks)-1:]
		}
	case CatchUpOne:
		run = ticks[len(ticks)-1:] // one for all: the others are not skipped
		ticks, missed = run, 0
	case CatchUpAll:
		limit := s.s.MaxCatchUp
		if limit == 0 {
			limit = defaultMaxCatchUp
		}
		run = ticks[max(0, len(ticks)-limit):]
	}
	missed += uint64(len(ticks) - len(run))
	if missed > 0 {
		skipTo := latest
		if len(run) > 0 {
			skipTo = ticks[len(ticks)-len(run)-1]
		}
		if err := e.skipTicks(s, skipTo, missed, ""); err != nil {
			e.scheduleFailed(s, err)
			return
		}
	}
	for _, tick := range run {
		if s.s.Overlap == OverlapSkip && e.runLive(s.lastID) {
			if err := e.skipTicks(s, tick, 1, "the previous run is still live"); err != nil {
				e.scheduleFailed(s, err)
				return
			}
			continue
		}
		if _, err := e.runSchedule(s, tick); err != nil {
			if !errors.Is(err, ErrFull) && !errors.Is(err, ErrDuplicate) {
				e.scheduleFailed(s, err)
				return // not handled: due again after a restart
			}
			if err := e.skipTicks(s, tick, 1, err.Error()); err != nil {
				e.scheduleFailed(s, err)
				return
			}
		}
	}
	e.armLocked(s, now)
}

// scheduleFailed notes a tick that could not be handled (the log failed,
// the engine is closing): it stays due, for the next Open to catch up.
func (e *Engine) scheduleFailed(s *schedule, err error) {
	s.lastErr = err.Error()
	if e.intake() == nil {
		e.opts.Logger.Error("ringwal: schedule tick not handled", "schedule", s.s.Name, "err", err)
	}
}

// dueTicks returns the ticks due by now from s.next on, the latest
// catchUpScan at most (older ones are counted in missed). s.mu held.
func (s *schedule) dueTicks(now int64) (ticks []int64, missed uint64) {
	anchor := time.Unix(0, s.anchor)
	t := time.Unix(0, s.next)
	if s.sp.every > 0 && now-s.next > int64(catchUpScan)*int64(s.sp.every) {
		// Far behind: count the ticks before the last stretch at once.
		n := uint64((now - s.next) / int64(s.sp.every))
		keep := uint64(catchUpScan / 2)
		missed = n - keep
		t = t.Add(time.Duration(missed) * s.sp.every)
	}
	for n := 0; !t.IsZero() && t.UnixNano() <= now; n++ {
		if n == catchUpScan {
			// A calendar spec far behind: the rest counts from a day ago.
			missed += uint64(len(ticks))
			ticks = ticks[:0]
			t = s.sp.next(time.Unix(0, now).Add(-24*time.Hour), anchor)
			continue
		}
		ticks = append(ticks, t.UnixNano())
		t = s.sp.next(t, anchor)
	}
	return ticks, missed
}

// runLive reports whether the message id is still live (Pending,
// Delayed, Leased or Held).
func (e *Engine) runLive(id ID) bool {
	if id == 0 {
		return false
	}
	info, err := e.Get(id)
	return err == nil && info.State != Dead
}

// The headers a schedule's run carries besides its message's own.
const (
	// ScheduleHeader names the schedule a message is a run of.
	ScheduleHeader = "ringwal-schedule"
	// TickHeader is the tick the run is for (RFC 3339, UTC), absent for
	// a run TriggerSchedule asked for.
	TickHeader = "ringwal-tick"
)

// runSchedule enqueues s's message as the run of tick (0: a run
// TriggerSchedule asked for), without waiting for room: a full queue
// refuses it. s.mu held.
func (e *Engine) runSchedule(s *schedule, tick int64) (ID, error) {
	m := s.s.Message
	// Each run's own headers (a handler may change its copy): the
	// schedule's, its name and its tick.
	h := make(map[string]string, len(m.Headers)+2)
	for k, v := range m.Headers {
		h[k] = v
	}
	h[ScheduleHeader] = s.s.Name
	if tick != 0 {
		h[TickHeader] = time.Unix(0, tick).UTC().Format(time.RFC3339Nano)
	}
	m.Headers = h
	id, err := e.enqueue(context.Background(), m, false, &scheduleTick{name: s.s.Name, at: tick})
	if err != nil {
		return 0, fmt.Errorf("schedule %q: %w", s.s.Name, err)
	}
	s.noteRun(tick, id)
	return id, nil
}

// noteRun records a run in s's state (as replaying its record does).
func (s *schedule) noteRun(tick int64, id ID) {
	s.last = max(s.last, tick)
	s.lastID = id
	s.runs++
	s.lastErr = ""
}

// noteSkip records n ticks skipped, the latest at tick.
func (s *schedule) noteSkip(tick int64, n uint64, why string) {
	s.last = max(s.last, tick)
	s.skipped += n
	if why != "" {
		s.lastErr = why
	}
}

// skipTicks logs and records n ticks of s skipped, the latest at tick.
// s.mu held.
func (e *Engine) skipTicks(s *schedule, tick int64, n uint64, why string) error {
	if err := e.logSkip(s.s.Name, tick, n); err != nil {
		return err
	}
	s.noteSkip(tick, n, why)
	return nil
}

// TriggerSchedule runs the named schedule once now (its Overlap does not
// apply; its next tick stays as it was) and returns the run's ID. A full
// queue refuses it with an error wrapping ErrFull. Safe for concurrent
// use.
func (e *Engine) TriggerSchedule(name string) (ID, error) {
	if err := e.intake(); err != nil {
		return 0, err
	}
	s := e.scheds.lookup(name)
	if s == nil {
		return 0, notFoundSchedule(name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed {
		return 0, notFoundSchedule(name)
	}
	return e.runSchedule(s, 0)
}

// armSchedules sets every schedule's timer after replay: a tick that
// passed while the engine was closed is due at once.
func (e *Engine) armSchedules(now int64) {
	for _, s := range e.scheds.list() {
		e.arm(s, now)
	}
}
