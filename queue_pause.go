package ringwal

import (
	"time"

	"github.com/ringwal/ringwal/sched"
	"github.com/ringwal/ringwal/wal"
)

// A queue's pause: its consumers get nothing while Enqueue, timers, TTLs
// and the other queues go on. Like a key's pause, it changes memory first
// and then logs (a pause is a control, not a message: a crash before its
// record is written loses the pause, never a message).

// Pause holds back the queue's delivery until until (zero: until
// Resume): its Dequeue waits and TryDequeue returns false, while other
// queues deliver. A pause never shortens one in force. It is logged and
// survives a restart; an until in the past or after 2262-04-11 is
// ErrInvalid. Pausing declares an undeclared queue.
func (q *Queue) Pause(until time.Time) error {
	r, err := q.resolve()
	if err != nil {
		return err
	}
	if err := checkInstant("Pause until", until); err != nil {
		return err
	}
	e := q.e
	now := e.preciseNow()
	end := pauseEnd(until)
	if end <= now {
		return invalidf("Pause until %v: in the past", until)
	}
	if !r.pause(end, now) {
		return nil
	}
	rec := wal.Record{Kind: wal.KindQueuePause, Queue: uint32(r.num), Key: r.name, Time: now, Until: end}
	return e.appendRecord(&rec, true)
}

// Resume ends a Pause of the queue.
func (q *Queue) Resume() error {
	r, err := q.resolve()
	if err != nil {
		return err
	}
	e := q.e
	if r.pausedUntil.Swap(0) == 0 {
		return nil
	}
	r.run().ready.signal()
	rec := wal.Record{Kind: wal.KindQueueResume, Queue: uint32(r.num), Key: r.name, Time: e.preciseNow()}
	return e.appendRecord(&rec, true)
}

// pause pauses q until until unless a longer pause is in force; it
// reports whether it changed the pause.
func (q *queue) pause(until, now int64) bool {
	for {
		old := q.pausedUntil.Load()
		if old != 0 && now < old && old >= until {
			return false
		}
		if q.pausedUntil.CompareAndSwap(old, until) {
			break
		}
	}
	if until != untilResumed {
		q.e.hk.schedule(until, sched.Entry{Kind: timerQueueResume, ID: uint64(q.num)})
	}
	return true
}

// paused reports whether q's delivery is paused at now.
func (q *queue) paused(now int64) bool {
	until := q.pausedUntil.Load()
	return until != 0 && now < until
}

// endQueuePause wakes queue num's consumers once its timed pause ended.
func (e *Engine) endQueuePause(num uint16, now int64) {
	q := e.queues.at(num)
	if num == 0 {
		q = &e.q0
	}
	if q == nil {
		return
	}
	if until := q.pausedUntil.Load(); until != 0 && now >= until {
		q.pausedUntil.CompareAndSwap(until, 0)
	}
	q.run().ready.signal()
}

// pausedUntilTime is the pause's end for QueueInfo: zero when not paused
// or paused until Resume.
func (q *queue) pausedUntilTime(now int64) (bool, time.Time) {
	until := q.pausedUntil.Load()
	switch {
	case until == 0 || now >= until:
		return false, time.Time{}
	case until == untilResumed:
		return true, time.Time{}
	}
	return true, time.Unix(0, until)
}

// applyQueuePause replays a queue's pause or resume (Until 0).
func (e *Engine) applyQueuePause(rs *replayState, r *wal.Record, until int64) {
	q := e.queues.at(uint16(r.Queue))
	if r.Queue == 0 {
		q = &e.q0
	}
	if q == nil {
		rs.refuse(r)
		return
	}
	q.pausedUntil.Store(until)
}

// restoreQueuePauses sets the timers of the pauses replay found, and
// forgets those that ended while the engine was closed.
func (e *Engine) restoreQueuePauses(now int64) {
	e.eachQueue(func(q *queue) {
		until := q.pausedUntil.Load()
		switch {
		case until == 0 || until == untilResumed:
		case now >= until:
			q.pausedUntil.Store(0)
		default:
			e.hk.schedule(until, sched.Entry{Kind: timerQueueResume, ID: uint64(q.num)})
		}
	})
}

// snapshotQueuePauses emits the pause of every paused queue (after the
// declarations).
func (e *Engine) snapshotQueuePauses(now int64, emit func(*wal.Record) error) error {
	var err error
	e.eachQueue(func(q *queue) {
		if until := q.pausedUntil.Load(); err == nil && until != 0 && (until == untilResumed || now < until) {
			rec := wal.Record{Kind: wal.KindQueuePause, Queue: uint32(q.num), Key: q.name, Time: now, Until: until}
			err = emit(&rec)
		}
	})
	return err
}
