package ringwal

import (
	"errors"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, on machines without a zoneinfo database

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ticks returns the first n ticks of spec s after from.
func ticks(t *testing.T, s string, from time.Time, n int) []time.Time {
	t.Helper()
	sp, err := parseSpec(s)
	require.NoError(t, err)
	var out []time.Time
	at := from.UnixNano()
	for range n {
		var ok bool
		at, ok = sp.next(at, from.UnixNano())
		require.True(t, ok, "spec %q stops ticking", s)
		out = append(out, time.Unix(0, at))
	}
	return out
}

func TestScheduleSpecForms(t *testing.T) {
	from := time.Date(2026, 3, 2, 10, 17, 30, 0, time.UTC) // a Monday
	utc := func(h, m, s int, day ...int) time.Time {
		d := 2
		if len(day) > 0 {
			d = day[0]
		}
		return time.Date(2026, 3, d, h, m, s, 0, time.UTC)
	}
	for _, tc := range []struct {
		spec string
		want []time.Time
	}{
		{"*/15 * * * *", []time.Time{utc(10, 30, 0), utc(10, 45, 0), utc(11, 0, 0)}},
		{"0 12 * * *", []time.Time{utc(12, 0, 0), utc(12, 0, 0, 3)}},
		{"30 */20 * * * *", []time.Time{utc(10, 20, 30), utc(10, 40, 30), utc(11, 0, 30)}},
		{"@hourly", []time.Time{utc(11, 0, 0), utc(12, 0, 0)}},
		{"@daily", []time.Time{utc(0, 0, 0, 3), utc(0, 0, 0, 4)}},
		{"@every 90s", []time.Time{from.Add(90 * time.Second), from.Add(180 * time.Second)}},
		{"@every 1h30m", []time.Time{from.Add(90 * time.Minute)}},
		{"CRON_TZ=Asia/Tokyo 0 9 * * *", []time.Time{utc(0, 0, 0, 3), utc(0, 0, 0, 4)}}, // 09:00 JST
		{"CRON_TZ=America/New_York 0 9 * * MON-FRI", []time.Time{utc(14, 0, 0), utc(14, 0, 0, 3)}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got := ticks(t, tc.spec, from, len(tc.want))
			for i := range got {
				assert.True(t, tc.want[i].Equal(got[i]), "tick %d: want %v, got %v", i, tc.want[i], got[i].UTC())
			}
		})
	}
}

func TestScheduleSpecRefusals(t *testing.T) {
	for _, s := range []string{"", "* * *", "61 * * * *", "@every 0s", "@every -1m", "@every soon",
		"CRON_TZ=Mars/Olympus 0 9 * * *", "@fortnightly"} {
		_, err := parseSpec(s)
		assert.True(t, errors.Is(err, ErrInvalid), "%q: %v", s, err)
	}
	sp, err := parseSpec("0 0 30 2 *") // February 30th
	require.NoError(t, err)
	now := time.Now().UnixNano()
	_, ok := sp.next(now, now)
	assert.False(t, ok, "a spec that never fires has no tick")
}

func TestScheduleSpecAcrossDaylightSaving(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	at := func(mo time.Month, d, h, m int) time.Time { return time.Date(2026, mo, d, h, m, 0, 0, ny) }
	// 2026-03-08: clocks go from 02:00 to 03:00. 2026-11-01: from 02:00
	// back to 01:00.
	springEnd := at(3, 8, 3, 0)
	require.Equal(t, 3, springEnd.Hour())
	firstOneThirty := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC) // 01:30 EDT
	for _, tc := range []struct {
		name string
		spec string
		from time.Time
		want []time.Time
	}{
		{"a daily tick in the skipped hour runs once when it ends", "CRON_TZ=America/New_York 30 2 * * *", at(3, 7, 3, 0),
			[]time.Time{at(3, 7, 2, 30).Add(24 * time.Hour).Add(-30 * time.Minute), at(3, 9, 2, 30)}},
		{"every tick of the skipped hour folds into one", "CRON_TZ=America/New_York */20 * * * *", at(3, 8, 1, 30),
			[]time.Time{at(3, 8, 1, 40), springEnd, at(3, 8, 3, 20)}},
		{"a daily tick in the repeated hour runs once, the first time", "CRON_TZ=America/New_York 30 1 * * *", at(10, 31, 12, 0),
			[]time.Time{firstOneThirty, at(11, 2, 1, 30)}},
		{"the repeated hour's ticks run once", "CRON_TZ=America/New_York 0,30 * * * *", firstOneThirty.Add(-time.Hour),
			[]time.Time{firstOneThirty.Add(-30 * time.Minute), firstOneThirty, firstOneThirty.Add(90 * time.Minute), firstOneThirty.Add(120 * time.Minute)}},
		{"@every ignores the wall clock", "CRON_TZ=America/New_York @every 1h", at(3, 8, 1, 0),
			[]time.Time{at(3, 8, 1, 0).Add(time.Hour), at(3, 8, 1, 0).Add(2 * time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ticks(t, tc.spec, tc.from, len(tc.want))
			for i := range got {
				assert.True(t, tc.want[i].Equal(got[i]), "tick %d: want %v, got %v", i, tc.want[i].In(ny), got[i].In(ny))
			}
		})
	}
}
