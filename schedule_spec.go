package ringwal

import (
	"errors"
	"math"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// This file owns a schedule's spec: parsing it and the ticks it names.
//
// A calendar spec (cron fields or a descriptor such as @hourly) names
// wall-clock times in its zone (CRON_TZ=, else UTC). The parser is
// robfig/cron's; its own Next steps through absolute time, which runs a
// job twice in a repeated hour and skips it in a skipped one. Here the
// spec is evaluated on the wall clock alone, in UTC, which has no DST.
// Each wall-clock time is then mapped to an instant in the zone. A
// repeated wall-clock time maps to its first instant. One that does not
// exist, in the hour a DST change skips, maps to the instant the gap
// ends. Every wall-clock time thus runs once. The times of a skipped hour
// run once, together, when it ends.
//
// @every d is not a calendar: its ticks are d apart from the schedule's
// anchor (when it was added), whatever the zone.

// specParser accepts 5 fields, or 6 with seconds first, and descriptors.
var specParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// The bounds of an @every period. Below a second (cron's own resolution)
// a schedule's ticks outrun its runs: @every 1ns enumerates millions of
// ticks per run, and with CatchUpAll logs a record for each. Above ten
// years a period is no longer a schedule, and one past about 292 years
// cannot be added to now at all: the instants the engine keeps (int64 Unix
// nanoseconds) end in 2262.
const (
	minEvery = time.Second
	maxEvery = 10 * 365 * 24 * time.Hour // 87600h
)

// spec is a parsed Schedule.Spec.
type spec struct {
	every time.Duration      // @every: the period; 0 for a calendar spec
	cal   *cron.SpecSchedule // a calendar spec, in UTC (its wall clock)
	loc   *time.Location     // the calendar's zone
}

// specHereError is a spec refused for what this build or machine lacks
// rather than for its form: a zone the machine's database does not have,
// an @every period outside the bounds an older build did not have. A
// schedule replayed with one is kept, broken (it never ticks), not a
// corrupt log.
type specHereError struct{ error }

func (e specHereError) Unwrap() error { return e.error }

// refusedHere reports whether err (from parseSpec) is a specHereError.
func refusedHere(err error) bool {
	var h specHereError
	return errors.As(err, &h)
}

// parseSpec parses s; a malformed spec, an unknown zone or a period that
// is not within [minEvery, maxEvery] is ErrInvalid.
func parseSpec(s string) (spec, error) {
	s = strings.TrimSpace(s)
	body, loc := s, time.UTC
	if rest, ok := strings.CutPrefix(s, "CRON_TZ="); ok {
		zone, after, _ := strings.Cut(rest, " ")
		l, err := time.LoadLocation(zone)
		if err != nil {
			return spec{}, specHereError{invalidf("schedule spec %q: time zone %q: %v", s, zone, err)}
		}
		loc, body = l, strings.TrimSpace(after)
	}
	if d, ok := strings.CutPrefix(body, "@every "); ok {
		every, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil {
			return spec{}, invalidf("schedule spec %q: %v", s, err)
		}
		switch {
		case every <= 0:
			return spec{}, invalidf("schedule spec %q: the period must be positive", s)
		case every < minEvery || every > maxEvery:
			return spec{}, specHereError{invalidf("schedule spec %q: the period %v is outside %v to %v", s, every, minEvery, maxEvery)}
		}
		return spec{every: every, loc: loc}, nil
	}
	parsed, err := specParser.Parse(body)
	if err != nil {
		return spec{}, invalidf("schedule spec %q: %v", s, err)
	}
	cal, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return spec{}, invalidf("schedule spec %q: not a calendar spec", s)
	}
	c := *cal
	c.Location = time.UTC
	return spec{cal: &c, loc: loc}, nil
}

// next returns the first tick after t (unix ns). It returns false if
// there is none the engine can represent: a calendar spec that never
// fires (robfig/cron looks five years ahead), or a tick past the last
// instant (2262-04-11). The anchor is where @every's ticks count from. It never
// overflows, whatever t and anchor.
func (sp *spec) next(t, anchor int64) (int64, bool) {
	if sp.every > 0 {
		return everyNext(t, anchor, int64(sp.every))
	}
	at := sp.calendarNext(time.Unix(0, t))
	if at.IsZero() || at.After(maxInstant) {
		return 0, false
	}
	return at.UnixNano(), true
}

// everyNext returns the first of the ticks anchor + k*every (k >= 0)
// after t, and false if it is past the last representable instant. The
// arithmetic is in uint64, where the difference of two int64s always
// fits.
func everyNext(t, anchor, every int64) (int64, bool) {
	if every <= 0 {
		return 0, false
	}
	if t < anchor {
		return anchor, true
	}
	since := uint64(t) - uint64(anchor)        // t - anchor, exact
	step := every - int64(since%uint64(every)) // in (0, every]
	if t > math.MaxInt64-step {
		return 0, false
	}
	return t + step, true
}

// calendarNext returns the first tick of a calendar spec after t, zero
// if robfig/cron finds none.
func (sp *spec) calendarNext(t time.Time) time.Time {
	local := t.In(sp.loc)
	w := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), local.Minute(), local.Second(), local.Nanosecond(), time.UTC)
	for {
		if w = sp.cal.Next(w); w.IsZero() {
			return time.Time{}
		}
		if at := instantOf(w, sp.loc); at.After(t) {
			return at
		}
	}
}

// instantOf maps the wall-clock time w (its fields, in UTC) to an instant
// in loc: the first of two when the clock went back over it, the end of
// the gap when the clock jumped over it.
func instantOf(w time.Time, loc *time.Location) time.Time {
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	if !sameWall(t, w) {
		// w is in a gap; time.Date moved it out of it, to one side.
		start, end := t.ZoneBounds()
		if wallAfter(t, w) {
			return start
		}
		return end
	}
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	_, off := t.Zone()
	_, offBefore := start.Add(-time.Nanosecond).Zone()
	if offBefore > off {
		// The clock went back when t's zone began: the same wall time
		// came first in the zone before.
		if first := t.Add(-time.Duration(offBefore-off) * time.Second); first.Before(start) && sameWall(first, w) {
			return first
		}
	}
	return t
}

// sameWall reports whether t (in its zone) reads the wall-clock time w
// (its fields, in UTC).
func sameWall(t, w time.Time) bool {
	y, mo, d := t.Date()
	wy, wmo, wd := w.Date()
	return y == wy && mo == wmo && d == wd && t.Hour() == w.Hour() && t.Minute() == w.Minute() &&
		t.Second() == w.Second() && t.Nanosecond() == w.Nanosecond()
}

// wallAfter reports whether t (in its zone) reads later than w.
func wallAfter(t, w time.Time) bool {
	tw := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	return tw.After(w)
}
