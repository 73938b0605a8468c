package adminfmt

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ringwal/ringwal"
)

// WaitReasons lists the reasons a message waits on its key in the order
// the console and the CLI show them (the keys of admin.StatsView's
// WaitingByReason).
var WaitReasons = []ringwal.WaitReason{ringwal.WaitOrdered, ringwal.WaitInFlight, ringwal.WaitRate, ringwal.WaitPaused}

// ParseUntil reads a pause's end: "" is until resumed (the zero time), an
// RFC 3339 time is that time, and a positive duration such as 90m or 1h
// is that long from now. A time not after now is refused.
func ParseUntil(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d, derr := time.ParseDuration(s)
		if derr != nil || d <= 0 {
			return time.Time{}, fmt.Errorf("until %q is neither an RFC 3339 time (like 2006-01-02T15:04:05Z) nor a positive duration from now (like 1h)", s)
		}
		return now.Add(d), nil
	}
	if !t.After(now) {
		return time.Time{}, fmt.Errorf("until %s is in the past", t.Format(time.RFC3339))
	}
	return t, nil
}

// liveStates are the states a live message can be in, by name.
var liveStates = map[string]ringwal.State{
	ringwal.Pending.String(): ringwal.Pending, ringwal.Delayed.String(): ringwal.Delayed,
	ringwal.Leased.String(): ringwal.Leased, ringwal.Held.String(): ringwal.Held,
}

// ParseStates reads live state names (pending, delayed, leased, held),
// each value one name or several separated by commas.
func ParseStates(vals []string) ([]ringwal.State, error) {
	var out []ringwal.State
	for _, v := range vals {
		for _, name := range strings.Split(v, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			st, ok := liveStates[name]
			switch {
			case ok:
				out = append(out, st)
			case name == ringwal.Dead.String():
				return nil, errors.New("state dead: dead letters are not live messages; list them under dead-letters")
			default:
				return nil, fmt.Errorf("state %q: want pending, delayed, leased or held", name)
			}
		}
	}
	return out, nil
}
