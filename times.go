package ringwal

import (
	"math"
	"time"
)

// The engine keeps every instant as int64 Unix nanoseconds, which spans
// 1677-09-21 to 2262-04-11. Records, the log, the timing wheel and the
// deadline heap all do. time.Time.UnixNano is undefined outside that span
// and in practice wraps. A Deadline in 2263 would become one in 1678 and
// be served before today's; a pause until 2611 would end within the hour. So every
// instant the API takes, and every instant it derives by adding a
// duration the caller gives to now, is checked against that span and
// refused with ErrInvalid rather than wrapped or clipped.
var (
	minInstant = time.Unix(0, math.MinInt64)
	maxInstant = time.Unix(0, math.MaxInt64)
)

// checkInstant refuses a non-zero t that int64 Unix nanoseconds cannot
// hold.
func checkInstant(what string, t time.Time) error {
	if !t.IsZero() && (t.Before(minInstant) || t.After(maxInstant)) {
		return invalidf("%s %v: outside the representable range %v to %v",
			what, t, minInstant.UTC(), maxInstant.UTC())
	}
	return nil
}

// checkSpan refuses a positive d that, counted from now (Unix ns), ends
// past the last representable instant.
func checkSpan(what string, now int64, d time.Duration) error {
	if d > 0 && now > math.MaxInt64-int64(d) {
		return invalidf("%s %v: ends after %v, the last representable instant", what, d, maxInstant.UTC())
	}
	return nil
}

// checkDeadline refuses a Deadline the log cannot hold (validFields).
func checkDeadline(m *Message) error {
	if m.Deadline.IsZero() {
		return nil
	}
	if err := checkInstant("Deadline", m.Deadline); err != nil {
		return err
	}
	if m.Deadline.UnixNano() == 0 {
		// The engine and its log store "no deadline" as 0.
		return invalidf("Deadline %v: the Unix epoch itself means no deadline; use the zero time.Time", m.Deadline.UTC())
	}
	return nil
}

// checkTimes is validate's part for a message's times: off the hot path
// unless the message sets one.
func (e *Engine) checkTimes(m *Message) error {
	if m.Delay == 0 && m.TTL == 0 {
		return nil
	}
	now := e.now()
	if err := checkSpan("Delay", now, m.Delay); err != nil {
		return err
	}
	return checkSpan("TTL", now, m.TTL)
}

// addSat is a+b for due times (unix ns), saturating instead of wrapping:
// a duration of hundreds of years must not make something due at once.
func addSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
