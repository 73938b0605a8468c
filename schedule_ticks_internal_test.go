package ringwal

import (
	"fmt"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkEveryTicks checks an @every spec's tick arithmetic against exact
// (big integer) arithmetic: the first tick after base, and the ticks due
// by now from it (the latest limit, the older ones counted). It must hold,
// and terminate at once, whatever the period, anchor, base and now, so
// that no schedule (nor a hostile log) can overflow it or spin.
func checkEveryTicks(t *testing.T, every, anchor, base, now int64, limit int) {
	t.Helper()
	sp := spec{every: time.Duration(every)}
	bi := func(v int64) *big.Int { return big.NewInt(v) }
	maxI := bi(math.MaxInt64)
	// The exact first tick after base: anchor, or anchor + k*every with
	// k = floor((base-anchor)/every) + 1.
	want := bi(anchor)
	if base >= anchor {
		k := new(big.Int).Sub(bi(base), bi(anchor))
		k.Quo(k, bi(every)).Add(k, big.NewInt(1))
		want.Add(want, k.Mul(k, bi(every)))
	}
	next, ok := sp.next(base, anchor)
	if want.Cmp(maxI) > 0 {
		assert.False(t, ok, "a tick past the last instant (%v) is none", want)
		return
	}
	require.True(t, ok)
	require.Equal(t, want.Int64(), next, "the first tick after base")

	s := &schedule{sp: sp, anchor: anchor, from: base, next: next}
	ticks, missed, prev := s.dueTicks(now, limit)
	// Exactly (now-next)/every + 1 ticks are due, none if now < next.
	due := new(big.Int)
	if now >= next {
		due.Sub(bi(now), bi(next)).Quo(due, bi(every)).Add(due, big.NewInt(1))
	}
	got := new(big.Int).SetUint64(missed)
	got.Add(got, big.NewInt(int64(len(ticks))))
	assert.Equal(t, due.String(), got.String(), "ticks due (missed %d + %d listed)", missed, len(ticks))
	assert.LessOrEqual(t, len(ticks), max(1, min(limit, maxRunsAtOnce)))
	tickAt := func(i *big.Int) *big.Int { return i.Mul(i, bi(every)).Add(i, bi(next)) }
	if len(ticks) > 0 {
		// The first exactly, the rest every apart (checked without a
		// call per tick: a backlog lists up to maxRunsAtOnce), the last
		// due by now.
		assert.Equal(t, tickAt(new(big.Int).SetUint64(missed)).String(), fmt.Sprint(ticks[0]), "the first tick listed")
		for i := 1; i < len(ticks); i++ {
			if ticks[i]-ticks[i-1] != every {
				assert.Fail(t, "ticks not a period apart", "ticks %d and %d: %d, %d", i-1, i, ticks[i-1], ticks[i])
				break
			}
		}
		assert.LessOrEqual(t, ticks[len(ticks)-1], now)
	}
	if missed > 0 {
		assert.Equal(t, tickAt(new(big.Int).SetUint64(missed-1)).String(), fmt.Sprint(prev), "the latest missed tick")
	}
}

func TestEveryTickArithmeticAtTheExtremes(t *testing.T) {
	t2026 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).UnixNano()
	periods := []int64{1, int64(time.Second), int64(37 * time.Minute), int64(40 * time.Minute), int64(24 * time.Hour),
		int64(maxEvery), int64(2562047 * time.Hour), math.MaxInt64}
	instants := []int64{math.MinInt64, -1, 0, t2026, math.MaxInt64 - 1, math.MaxInt64}
	for _, every := range periods {
		for _, anchor := range instants {
			for _, base := range []int64{anchor, math.MinInt64, t2026, math.MaxInt64} {
				for _, now := range instants {
					for _, limit := range []int{0, 1, 3} {
						t.Run(fmt.Sprintf("every %d anchor %d base %d now %d limit %d", every, anchor, base, now, limit), func(t *testing.T) {
							checkEveryTicks(t, every, anchor, base, now, limit)
						})
					}
				}
			}
		}
	}
	t.Run("a long backlog keeps at most maxRunsAtOnce", func(t *testing.T) {
		checkEveryTicks(t, int64(time.Second), 0, 0, math.MaxInt64, math.MaxInt)
	})
}

func FuzzEveryTickArithmetic(f *testing.F) {
	t2026 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).UnixNano()
	f.Add(int64(40*time.Minute), t2026, t2026, t2026+int64(40*time.Minute), uint8(100))
	f.Add(int64(2562047*time.Hour), t2026, t2026, int64(math.MaxInt64), uint8(1))
	f.Add(int64(time.Hour), int64(math.MinInt64+1), t2026, t2026, uint8(3))
	f.Add(int64(1), int64(math.MinInt64), int64(math.MinInt64), int64(math.MaxInt64), uint8(7))
	f.Fuzz(func(t *testing.T, every, anchor, base, now int64, limit uint8) {
		if every &= math.MaxInt64; every == 0 {
			every = 1
		}
		checkEveryTicks(t, every, anchor, base, now, int(limit%8))
	})
}

// A calendar spec's ticks end at the last instant the engine represents:
// the next tick after one near it is none, and the ticks due by then are
// listed in order, at most limit of them, however long the backlog.
func TestCalendarTicksAtTheEnd(t *testing.T) {
	end := time.Unix(0, math.MaxInt64)
	for _, tc := range []struct {
		spec string
		base time.Time
	}{
		{"@daily", end.Add(-time.Hour)},
		{"0 0 29 2 *", end.Add(-24 * time.Hour)},
		{"* * * * * *", end.Add(-time.Second / 2)},
		{"CRON_TZ=Pacific/Kiritimati @hourly", end.Add(-30 * time.Minute)},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			sp, err := parseSpec(tc.spec)
			require.NoError(t, err)
			_, ok := sp.next(tc.base.UnixNano(), 0)
			assert.False(t, ok, "no tick after %v", tc.base.UTC())
		})
	}
	sp, err := parseSpec("*/10 * * * * *")
	require.NoError(t, err)
	start := end.Add(-time.Hour).Truncate(10 * time.Second).UnixNano()
	s := &schedule{sp: sp, next: start}
	ticks, missed, prev := s.dueTicks(math.MaxInt64, 5)
	assert.Len(t, ticks, 5)
	due := (math.MaxInt64-start)/int64(10*time.Second) + 1 // about an hour of 10s ticks
	assert.EqualValues(t, due-5, missed)
	assert.Equal(t, ticks[0]-int64(10*time.Second), prev)
	for i := 1; i < len(ticks); i++ {
		assert.Equal(t, int64(10*time.Second), ticks[i]-ticks[i-1])
	}
	assert.LessOrEqual(t, ticks[len(ticks)-1], int64(math.MaxInt64))
}
