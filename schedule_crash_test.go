package ringwal_test

// A schedule ticks every second, on a clock that runs 50 times faster
// than the wall clock (every 20 ms of real time), in a child process that
// is SIGKILLed at a random moment, 50 times over one directory; each child adds the
// schedule again as a service would at start (which changes nothing) and
// catches up on the ticks it missed (CatchUpAll). Afterwards every tick
// from the first to the last has exactly one run: none lost to a kill
// before its record was written, none run twice after one.

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

const (
	scheduleCrashDirEnv   = "RINGWAL_TEST_SCHEDULE_CRASH_DIR"
	scheduleCrashEpochEnv = "RINGWAL_TEST_SCHEDULE_CRASH_EPOCH"
	// crashScale is how much faster than the wall clock fastClock runs.
	crashScale = 50
)

var crashSchedule = ringwal.Schedule{Name: "tick", Spec: "@every 1s", CatchUp: ringwal.CatchUpAll, MaxCatchUp: 1 << 20,
	Message: ringwal.Message{Queue: "ticks"}}

// fastClock runs crashScale times faster than the wall clock from epoch,
// which every process of the test shares: time keeps going forward
// across the kills, as the wall clock does.
type fastClock struct{ epoch time.Time }

func (c fastClock) Now() time.Time {
	return c.epoch.Add(time.Since(c.epoch) * crashScale)
}

func (c fastClock) NewTimer(d time.Duration) clock.Timer {
	return fastTimer{time.NewTimer(d / crashScale)}
}

type fastTimer struct{ t *time.Timer }

func (t fastTimer) C() <-chan time.Time        { return t.t.C }
func (t fastTimer) Stop() bool                 { return t.t.Stop() }
func (t fastTimer) Reset(d time.Duration) bool { return t.t.Reset(d / crashScale) }

// crashClock is the test's fastClock, its epoch from the environment.
func crashClock(t *testing.T) fastClock {
	ns, err := strconv.ParseInt(os.Getenv(scheduleCrashEpochEnv), 10, 64)
	require.NoError(t, err)
	return fastClock{epoch: time.Unix(0, ns)}
}

func TestScheduleCrashChild(t *testing.T) {
	dir := os.Getenv(scheduleCrashDirEnv)
	if dir == "" {
		t.Skip("helper process for TestScheduleRunsEachTickOnceAcrossSIGKILL")
	}
	e := childOpen(dir, ringwal.Options{Durability: ringwal.Write, Clock: crashClock(t)})
	if err := e.AddSchedule(crashSchedule); err != nil {
		childFail("add: %v", err)
	}
	childEmit("R")
	time.Sleep(time.Minute) // until killed
}

func TestScheduleRunsEachTickOnceAcrossSIGKILL(t *testing.T) {
	if os.Getenv(scheduleCrashDirEnv) != "" {
		t.Skip("in the child")
	}
	dir := t.TempDir()
	epoch := fmt.Sprint(time.Now().UnixNano())
	t.Setenv(scheduleCrashEpochEnv, epoch) // the children's too
	fast := crashClock(t)
	for range 50 {
		child := startCrashChild(t, "TestScheduleCrashChild", scheduleCrashDirEnv+"="+dir)
		sc := bufio.NewScanner(child.stdout)
		require.True(t, sc.Scan(), "the child reports ready")
		require.Equal(t, "R", sc.Text())
		time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
		child.kill()
		for sc.Scan() {
			t.Errorf("child: %s", sc.Text())
		}
		child.wait()
	}

	e := open(t, dir, ringwal.Options{Clock: fast})
	require.NoError(t, e.AddSchedule(crashSchedule))
	// Let it catch up, then stop it.
	deadline := time.Now().Add(time.Minute)
	for {
		in := scheduleInfo(t, e, "tick")
		if in.Next.After(fast.Now()) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, e.PauseSchedule("tick"))
	in := scheduleInfo(t, e, "tick")
	assert.Zero(t, in.Skipped)

	seen := map[string]int{}
	var ticks []time.Time
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		d, ok := e.Queue("ticks").TryDequeue()
		if !ok {
			break
		}
		at := d.Message.Headers[ringwal.TickHeader]
		seen[at]++
		tick, err := time.Parse(time.RFC3339Nano, at)
		require.NoError(t, err, "tick header %q", at)
		ticks = append(ticks, tick)
		require.NoError(t, e.Ack(d.Lease))
		require.NoError(t, ctx.Err())
	}
	for at, n := range seen {
		assert.Equal(t, 1, n, "tick %s ran %d times", at, n)
	}
	require.NotEmpty(t, ticks)
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Before(ticks[j]) })
	for i := 1; i < len(ticks); i++ {
		if gap := ticks[i].Sub(ticks[i-1]); gap != time.Second {
			t.Errorf("ticks %v and %v: %v apart, a tick is missing", ticks[i-1], ticks[i], gap)
			break
		}
	}
	assert.True(t, ticks[len(ticks)-1].Equal(in.Last), "the last run is the last tick: %v vs %v", ticks[len(ticks)-1], in.Last)
	assert.EqualValues(t, len(ticks), in.Runs)
	t.Logf("%d ticks over 50 kills, each run once", len(ticks))
}
