package ringwal_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// 1,000 schedules @every 1s for one hour of the fake clock: exactly
// 3,600,000 runs, each (schedule, tick) once. Under the race detector,
// 100 schedules for ten minutes.
func TestThousandSchedulesForAnHourRunEachTickOnce(t *testing.T) {
	n, seconds := 1000, 3600
	if raceEnabled || testing.Short() {
		n, seconds = 100, 600
	}
	fake := clock.NewFake(scheduleStart)
	e, _ := memEngine(t, ringwal.Options{Clock: fake})
	for i := range n {
		require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: fmt.Sprint("s", i), Spec: "@every 1s"}))
	}
	seen := make([][]uint8, n)
	for i := range seen {
		seen[i] = make([]uint8, seconds+1)
	}
	var mu sync.Mutex
	var handled atomic.Int64
	var bad atomic.Value
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = e.Run(ctx, 2, func(_ context.Context, d ringwal.Delivery) error {
			i, err := strconv.Atoi(strings.TrimPrefix(d.Message.Headers[ringwal.ScheduleHeader], "s"))
			tick, terr := time.Parse(time.RFC3339Nano, d.Message.Headers[ringwal.TickHeader])
			k := int(tick.Sub(scheduleStart) / time.Second)
			if err != nil || terr != nil || k < 1 || k > seconds || i < 0 || i >= n {
				bad.Store(fmt.Sprintf("run %v: %v %v", d.Message.Headers, err, terr))
			} else {
				mu.Lock()
				seen[i][k]++
				mu.Unlock()
			}
			handled.Add(1)
			return nil
		})
	}()
	for k := 1; k <= seconds; k++ {
		fake.Advance(time.Second)
		want := int64(n * k)
		deadline := time.Now().Add(time.Minute)
		for handled.Load() < want {
			require.True(t, time.Now().Before(deadline), "tick %d: %d of %d runs handled", k, handled.Load(), want)
			time.Sleep(50 * time.Microsecond)
		}
	}
	require.Nil(t, bad.Load())
	assert.EqualValues(t, n*seconds, handled.Load())
	mu.Lock()
	defer mu.Unlock()
	for i := range seen {
		for k := 1; k <= seconds; k++ {
			if seen[i][k] != 1 {
				t.Fatalf("schedule s%d tick %d ran %d times", i, k, seen[i][k])
			}
		}
	}
	for _, in := range e.Schedules() {
		require.EqualValues(t, seconds, in.Runs, in.Name)
		require.Zero(t, in.Skipped, in.Name)
	}
	t.Logf("%d schedules, %d s: %d runs, each tick once", n, seconds, n*seconds)
}
