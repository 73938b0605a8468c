package ringwal_test

// A schedule ticks every 20 ms in a child process that is SIGKILLed at a
// random moment, 50 times over one directory; each child adds the
// schedule again as a service would at start (which changes nothing) and
// catches up on the ticks it missed (CatchUpAll). Afterwards every tick
// from the first to the last has exactly one run: none lost to a kill
// before its record was written, none run twice after one.

import (
	"bufio"
	"context"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

const scheduleCrashDirEnv = "RINGWAL_TEST_SCHEDULE_CRASH_DIR"

var crashSchedule = ringwal.Schedule{Name: "tick", Spec: "@every 20ms", CatchUp: ringwal.CatchUpAll, MaxCatchUp: 1 << 20,
	Message: ringwal.Message{Queue: "ticks"}}

func TestScheduleCrashChild(t *testing.T) {
	dir := os.Getenv(scheduleCrashDirEnv)
	if dir == "" {
		t.Skip("helper process for TestScheduleRunsEachTickOnceAcrossSIGKILL")
	}
	e := childOpen(dir, ringwal.Options{Durability: ringwal.Write})
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

	e := open(t, dir, ringwal.Options{})
	require.NoError(t, e.AddSchedule(crashSchedule))
	// Let it catch up, then stop it.
	deadline := time.Now().Add(time.Minute)
	for {
		in := scheduleInfo(t, e, "tick")
		if in.Next.After(time.Now()) || time.Now().After(deadline) {
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
		if gap := ticks[i].Sub(ticks[i-1]); gap != 20*time.Millisecond {
			t.Errorf("ticks %v and %v: %v apart, a tick is missing", ticks[i-1], ticks[i], gap)
			break
		}
	}
	assert.True(t, ticks[len(ticks)-1].Equal(in.Last), "the last run is the last tick: %v vs %v", ticks[len(ticks)-1], in.Last)
	assert.EqualValues(t, len(ticks), in.Runs)
	t.Logf("%d ticks over 50 kills, each run once", len(ticks))
}
