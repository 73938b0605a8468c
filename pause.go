package ringwal

import (
	"time"

	"github.com/ringwal/ringwal/internal/sched"
)

// The engine-wide pause: Pause and Resume stop and restart the delivery of
// every queue and key at once. Its end is keys.allUntil, read by each
// consumer beside a key's own pause (keys.go).

// Pause holds back all delivery until until (zero: until Resume): Dequeue
// waits and TryDequeue returns false, while Enqueue, timers, TTLs and the
// operator methods go on. A pause never shortens one in force. It is
// logged and survives a restart; an until in the past or after 2262-04-11
// is ErrInvalid. Safe
// for concurrent use.
func (e *Engine) Pause(until time.Time) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	if err := checkInstant("Pause until", until); err != nil {
		return err
	}
	now := e.preciseNow()
	end := pauseEnd(until)
	if end <= now {
		return invalidf("Pause until %v: in the past", until)
	}
	if !e.pauseAll(end, now) {
		return nil
	}
	rec := pauseRecord("", end, now)
	return e.appendRecord(&rec, true)
}

// Resume ends a Pause of all delivery. Safe for concurrent use.
func (e *Engine) Resume() error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	if e.keys.allUntil.Swap(0) == 0 {
		return nil
	}
	e.signalAllReady()
	rec := resumeRecord("", e.preciseNow())
	return e.appendRecord(&rec, true)
}

// pauseAll pauses all delivery until until unless a longer pause is in
// force; it reports whether it changed the pause.
func (e *Engine) pauseAll(until, now int64) bool {
	for {
		old := e.keys.allUntil.Load()
		if old != 0 && now < old && old >= until {
			return false
		}
		if e.keys.allUntil.CompareAndSwap(old, until) {
			break
		}
	}
	if until != untilResumed {
		e.hk.schedule(until, sched.Entry{Kind: timerResumeAll})
	}
	return true
}

// endPauseAll wakes consumers once a timed Pause of all delivery ended.
func (e *Engine) endPauseAll(now int64) {
	if until := e.keys.allUntil.Load(); until != 0 && now >= until {
		e.keys.allUntil.CompareAndSwap(until, 0)
	}
	e.signalAllReady()
}

// deliveryPaused reports whether a Pause of all delivery is in force.
func (e *Engine) deliveryPaused(now int64) bool {
	until := e.keys.allUntil.Load()
	return until != 0 && now < until
}
