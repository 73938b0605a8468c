package ringwal

import (
	"time"

	"github.com/ringwal/ringwal/internal/sched"
	"github.com/ringwal/ringwal/internal/wal"
)

// A queue's pause: its consumers get nothing while Enqueue, timers, TTLs
// and the other queues go on. A pause is a control, not a message: a
// crash before its record is written loses the pause, never a message.
// Pause and Resume change the queue and log their record holding the
// queue table's lock, then wait for the record. A DeleteQueue holds that
// lock, so it comes wholly before or after them in the log. So no pause
// record names a deleted queue. And a checkpoint's listing of the pauses
// (declarations, under the same lock) never falls between a pause's
// record and its change.

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
	return e.changePause(q, r, func(r *queue) (wal.Record, bool) {
		rec := wal.Record{Kind: wal.KindQueuePause, Queue: uint32(r.num), Key: r.name, Time: now, Until: end}
		return rec, r.pause(end, now)
	})
}

// changePause runs change (which reports its record, and whether it
// changed anything) on queue r, logs the record if it did, and waits for
// it; see the file comment. A queue deleted meanwhile is resolved again
// (a pause declares it afresh).
func (e *Engine) changePause(q *Queue, r *queue, change func(*queue) (wal.Record, bool)) error {
	t := &e.queues
	for {
		t.mu.Lock()
		// Under t.mu a queue is declared or deleted (DeleteQueue holds it
		// from its check to its forget).
		if r.state.Load() == queueDeclared {
			break
		}
		t.mu.Unlock()
		var err error
		if r, err = q.resolve(); err != nil {
			return err
		}
	}
	rec, changed := change(r)
	if !changed {
		t.mu.Unlock()
		return nil
	}
	lg, err := e.logRecord(&rec, true)
	t.mu.Unlock()
	if err != nil {
		return err
	}
	return lg.wait()
}

// Resume ends a Pause of the queue.
func (q *Queue) Resume() error {
	r, err := q.resolve()
	if err != nil {
		return err
	}
	e := q.e
	return e.changePause(q, r, func(r *queue) (wal.Record, bool) {
		if r.pausedUntil.Swap(0) == 0 {
			return wal.Record{}, false
		}
		r.run().ready.signal()
		return wal.Record{Kind: wal.KindQueueResume, Queue: uint32(r.num), Key: r.name, Time: e.preciseNow()}, true
	})
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
		q = &e.defaultQueue
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
		q = &e.defaultQueue
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
