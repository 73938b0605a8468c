package ringwal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ringwal/ringwal/internal/sched"
)

// Running schedules. Each schedule has one timer entry in the
// housekeeper's wheel, for its next tick (plus jitter). When it fires,
// the housekeeper hands the schedule to the runner, which enqueues the
// run off the timer goroutine (a run waits for the log, and timers must
// not). The runner is one goroutine, started when there is work and gone
// when there is none; Close waits for it.
//
// A run's enqueue record is also the tick's record (KindScheduleTick). A
// crash before it is durable leaves the tick unhandled, so it is due
// again after the restart; CatchUp decides what runs. A crash after it
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

// catchUpScan bounds how many missed ticks of a calendar spec are
// enumerated one by one, about a second of work. Further behind, its scan
// starts again a day before now. The ticks between the scan's end and
// that day go uncounted. An @every spec counts any number of
// missed ticks by arithmetic.
const catchUpScan = 1 << 22

// maxRunsAtOnce bounds the ticks one timer fire runs (CatchUpAll with a
// MaxCatchUp above it): the older ones are counted in Skipped.
const maxRunsAtOnce = catchUpScan / 2

// A run that failed (the log refused its record) is tried again after
// retryMin, doubling with each failure in a row up to retryMax. The log
// may take writes again once space returns. A schedule must not stop for
// good, nor spin, while it does not.
const (
	retryMin = time.Second
	retryMax = time.Minute
)

// retryDelay is how long after its fails-th failure in a row a schedule's
// run is tried again.
func retryDelay(fails uint32) time.Duration {
	if fails > 7 {
		return retryMax
	}
	return min(retryMin<<max(fails, 1)>>1, retryMax)
}

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
			if e.errIfClosing() != nil {
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
// now, as its CatchUp and Overlap say, then arms the timer for the next
// (or, when a run could not be logged, for another try).
func (e *Engine) runDue(en sched.Entry) {
	s := e.scheds.byTimer(en.ID)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.current(en.Gen) {
		return
	}
	now := e.preciseNow()
	ticks, missed, prev := s.dueTicks(now, s.catchUpLimit())
	if len(ticks) == 0 {
		e.armLocked(s, now)
		return
	}
	run, skipTo := ticks, prev
	switch s.s.CatchUp {
	case CatchUpSkip:
		// Ticks due before this Open passed while the engine was closed.
		if latest := ticks[len(ticks)-1]; latest < e.openedAt {
			run, skipTo = nil, latest
			missed += uint64(len(ticks))
		}
	case CatchUpOne:
		missed = 0 // one run for all: the others are not skipped
	}
	var msgs []Message
	if e.opts.OnEnqueue != nil && len(run) > 0 {
		// The hook may call the schedule verbs, which take s.mu. So it
		// runs without it, on copies of the runs' messages. The runs go
		// ahead only if the schedule did not change meanwhile; otherwise
		// its new timer entry handles its ticks.
		msgs = make([]Message, len(run))
		for i, tick := range run {
			msgs[i] = s.runMessage(tick)
		}
		s.mu.Unlock()
		for i := range msgs {
			msgs[i] = e.onEnqueue(context.Background(), msgs[i])
		}
		s.mu.Lock()
		if !s.current(en.Gen) {
			return
		}
	}
	if err := e.handleTicks(s, run, msgs, missed, skipTo); err != nil {
		// Not handled: the tick stays due, tried again in a while (and
		// at the next Open, as CatchUp says, should the log not recover).
		s.fails++
		e.scheduleFailed(s, err)
	} else {
		s.fails = 0
	}
	e.armLocked(s, now)
}

// current reports whether s is still the schedule a timer entry of
// generation gen is for, ticking. s.mu held.
func (s *schedule) current(gen uint32) bool {
	return !s.removed && s.gen == gen && s.next != 0 && !s.s.Paused
}

// catchUpLimit is how many of the due ticks one fire may run.
func (s *schedule) catchUpLimit() int {
	if s.s.CatchUp != CatchUpAll {
		return 1
	}
	if s.s.MaxCatchUp == 0 {
		return defaultMaxCatchUp
	}
	return s.s.MaxCatchUp
}

// handleTicks logs missed ticks skipped (the latest at skipTo), then
// runs the ticks of run (msgs: their messages, the OnEnqueue hook
// applied; nil: none set), as Overlap says. A run refused for good (a
// full queue, a duplicate, a message the engine refuses) is skipped with
// its reason; any other failure (the log's) returns, the tick unhandled.
// s.mu held.
func (e *Engine) handleTicks(s *schedule, run []int64, msgs []Message, missed uint64, skipTo int64) error {
	if missed > 0 {
		if err := e.skipTicks(s, skipTo, missed, ""); err != nil {
			return err
		}
	}
	for i, tick := range run {
		if s.s.Overlap == OverlapSkip && e.runLive(s.lastID) {
			if err := e.skipTicks(s, tick, 1, "the previous run is still live"); err != nil {
				return err
			}
			continue
		}
		var m Message
		if msgs != nil {
			m = msgs[i]
		} else {
			m = s.runMessage(tick)
		}
		if _, err := e.runSchedule(s, tick, m); err != nil {
			if !errors.Is(err, ErrFull) && !errors.Is(err, ErrDuplicate) && !errors.Is(err, ErrInvalid) {
				return err
			}
			if err := e.skipTicks(s, tick, 1, err.Error()); err != nil {
				return err
			}
		}
	}
	return nil
}

// scheduleFailed notes a tick that could not be handled (the log failed,
// the engine is closing): it stays due, tried again by the next timer
// (see retryDelay) or the next Open.
func (e *Engine) scheduleFailed(s *schedule, err error) {
	s.lastErr = err.Error()
	if e.errIfClosing() == nil {
		e.opts.Logger.Error("ringwal: schedule tick not handled", "schedule", s.s.Name, "err", err,
			"failures", s.fails, "retry_in", retryDelay(s.fails))
	}
}

// dueTicks returns the ticks due by now from s.next on, in order: the
// latest limit of them at most (at least one; at most maxRunsAtOnce).
// Its missed counts the older ones, and prev is the latest of those (when
// missed > 0). No arithmetic here overflows, whatever the period, anchor and now.
// s.mu held.
func (s *schedule) dueTicks(now int64, limit int) (ticks []int64, missed uint64, prev int64) {
	if s.next > now {
		return nil, 0, 0
	}
	limit = max(1, min(limit, maxRunsAtOnce))
	if every := uint64(s.sp.every); every > 0 {
		// The ticks s.next + i*every for i in [0, n]; the latest limit
		// of them run (uint64: the differences always fit).
		n := (uint64(now) - uint64(s.next)) / every
		kept := min(n, uint64(limit-1)) // after the first kept one
		missed = n - kept
		first := uint64(s.next) + missed*every // at most now: no wrap
		ticks = make([]int64, kept+1)
		for i := range ticks {
			ticks[i] = int64(first + uint64(i)*every)
		}
		if missed > 0 {
			prev = int64(first - every)
		}
		return ticks, missed, prev
	}
	// A calendar spec: enumerated, keeping the latest limit (compacted
	// when twice that many are held).
	keep := func(n int) {
		if drop := len(ticks) - n; drop > 0 {
			missed += uint64(drop)
			prev = ticks[drop-1]
			ticks = append(ticks[:0], ticks[drop:]...)
		}
	}
	t, ok := s.next, true
	for i := 0; ok && t <= now; i++ {
		if i == catchUpScan {
			// Far behind: the rest counts from a day ago (or from the
			// last tick scanned, if that is later).
			keep(0)
			from := now - int64(24*time.Hour)
			if from > now {
				from = math.MinInt64 // wrapped
			}
			from = max(from, prev)
			t, ok = s.sp.next(from, s.anchor)
			continue
		}
		if len(ticks) == 2*limit {
			keep(limit)
		}
		ticks = append(ticks, t)
		t, ok = s.sp.next(t, s.anchor)
	}
	keep(limit)
	return ticks, missed, prev
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

// runMessage is s's message as its run of tick (0: a run
// TriggerSchedule asked for) carries it: with its own headers (a handler
// may change its copy), the schedule's name and the tick. s.mu held.
func (s *schedule) runMessage(tick int64) Message {
	m := s.s.Message
	h := make(map[string]string, len(m.Headers)+2)
	for k, v := range m.Headers {
		h[k] = v
	}
	h[ScheduleHeader] = s.s.Name
	if tick != 0 {
		h[TickHeader] = time.Unix(0, tick).UTC().Format(time.RFC3339Nano)
	}
	m.Headers = h
	return m
}

// runSchedule enqueues m (s.runMessage(tick), the OnEnqueue hook applied
// if there is one) as s's run of tick, without waiting for room: a full
// queue refuses it. s.mu held.
func (e *Engine) runSchedule(s *schedule, tick int64, m Message) (ID, error) {
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
	if err := e.errIfClosing(); err != nil {
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
	m := s.runMessage(0)
	if e.opts.OnEnqueue != nil {
		// Without s.mu, which the hook's schedule verbs would take.
		s.mu.Unlock()
		m = e.onEnqueue(context.Background(), m)
		s.mu.Lock()
		if s.removed {
			return 0, notFoundSchedule(name)
		}
	}
	return e.runSchedule(s, 0, m)
}

// armSchedules sets every schedule's timer after replay: a tick that
// passed while the engine was closed is due at once.
func (e *Engine) armSchedules(now int64) {
	for _, s := range e.scheds.list() {
		e.arm(s, now)
	}
}
