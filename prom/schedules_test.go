package prom_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/enginetest"
	"github.com/ringwal/ringwal/prom"
)

// counterOf returns the value of the counter name{label=value}, -1 when
// the series is absent.
func counterOf(t *testing.T, e *ringwal.Engine, name, label, value string) float64 {
	t.Helper()
	reg, _ := registered(t, e)
	m := metricSample(scrapeMetrics(t, reg), name, label, value)
	if m == nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// TestMetricsPerSchedule: each schedule's runs (ticks and triggers) and
// skipped ticks carry its name.
func TestMetricsPerSchedule(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	e := enginetest.Open(t, "", ringwal.Options{Clock: fake})
	require.NoError(t, e.DeclareQueue("tiny", ringwal.QueueOptions{MaxMessages: 1}))
	_, err := e.Queue("tiny").Enqueue(context.Background(), ringwal.Message{})
	require.NoError(t, err)
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "report", Spec: "@every 1m", Message: ringwal.Message{Queue: "reports"}}))
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "full", Spec: "@every 1m", Message: ringwal.Message{Queue: "tiny"}}))
	assert.Equal(t, 0.0, counterOf(t, e, "ringwal_schedule_runs_total", "schedule", "report"))

	_, err = e.TriggerSchedule("report")
	require.NoError(t, err)
	fake.Advance(time.Minute)
	require.Eventually(t, func() bool {
		var handled uint64
		for _, in := range e.Schedules() {
			handled += in.Runs + in.Skipped
		}
		return handled == 3
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, 2.0, counterOf(t, e, "ringwal_schedule_runs_total", "schedule", "report"), "a trigger and a tick")
	assert.Equal(t, 0.0, counterOf(t, e, "ringwal_schedule_skipped_total", "schedule", "report"))
	assert.Equal(t, 0.0, counterOf(t, e, "ringwal_schedule_runs_total", "schedule", "full"))
	assert.Equal(t, 1.0, counterOf(t, e, "ringwal_schedule_skipped_total", "schedule", "full"), "the queue was full")
	assert.Equal(t, -1.0, counterOf(t, e, "ringwal_schedule_runs_total", "schedule", prom.OtherScheduleLabel), "no _other under the cap")
}

// TestMetricsScheduleCap: at most MaxScheduleSeries schedules have series
// of their own (the first seen); the rest are summed under "_other",
// which keeps a removed one's totals so that it never goes back.
func TestMetricsScheduleCap(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	n := prom.MaxScheduleSeries + 2
	for i := 0; i < n; i++ {
		require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: fmt.Sprintf("s%02d", i), Spec: "@daily", Message: ringwal.Message{Queue: "jobs"}}))
		_, err := e.TriggerSchedule(fmt.Sprintf("s%02d", i))
		require.NoError(t, err)
	}
	reg, _ := registered(t, e)
	fams := scrapeMetrics(t, reg)
	assert.Len(t, fams["ringwal_schedule_runs_total"].GetMetric(), prom.MaxScheduleSeries+1, "50 schedules and _other")
	assert.NotNil(t, metricSample(fams, "ringwal_schedule_runs_total", "schedule", "s49"))
	assert.Nil(t, metricSample(fams, "ringwal_schedule_runs_total", "schedule", "s50"), "past the cap")
	other := metricSample(fams, "ringwal_schedule_runs_total", "schedule", prom.OtherScheduleLabel)
	require.NotNil(t, other)
	assert.Equal(t, 2.0, other.GetCounter().GetValue(), "s50 and s51")

	// Removing an own schedule frees its place, but a folded one keeps
	// its; a removed folded one's runs stay in _other.
	require.NoError(t, e.RemoveSchedule("s00"))
	require.NoError(t, e.RemoveSchedule("s51"))
	fams = scrapeMetrics(t, reg)
	assert.Nil(t, metricSample(fams, "ringwal_schedule_runs_total", "schedule", "s00"))
	assert.Nil(t, metricSample(fams, "ringwal_schedule_runs_total", "schedule", "s50"), "the choice sticks")
	assert.Equal(t, 2.0, metricSample(fams, "ringwal_schedule_runs_total", "schedule", prom.OtherScheduleLabel).GetCounter().GetValue())
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "new", Spec: "@daily", Message: ringwal.Message{Queue: "jobs"}}))
	fams = scrapeMetrics(t, reg)
	assert.NotNil(t, metricSample(fams, "ringwal_schedule_runs_total", "schedule", "new"), "a schedule seen later takes the free place")
}
