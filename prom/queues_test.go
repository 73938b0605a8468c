package prom_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/enginetest"
	"github.com/ringwal/ringwal/prom"
)

// dequeueFrom waits for a delivery of queue q.
func dequeueFrom(t testing.TB, q *ringwal.Queue) ringwal.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.WaitFor)
	defer cancel()
	d, err := q.Dequeue(ctx)
	require.NoError(t, err)
	return d
}

// TestMetricsPerQueue: each queue's messages by state, dead letters,
// totals, oldest pending age and pause carry its name; the default queue
// is queue="_default"; publishes are counted.
func TestMetricsPerQueue(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := enginetest.Open(t, "", ringwal.Options{Clock: fake, Policies: slowRetries()})
	ctx := context.Background()
	require.NoError(t, e.DeclareQueue("billing", ringwal.QueueOptions{Topics: []string{"orders"}}))
	require.NoError(t, e.DeclareQueue("emails", ringwal.QueueOptions{Topics: []string{"orders"}}))
	reg, coll := registered(t, e)

	_, err := e.Enqueue(ctx, ringwal.Message{Payload: []byte("d")})
	require.NoError(t, err)
	for range 2 {
		ids, err := e.Publish(ctx, "orders", ringwal.Message{Payload: []byte("o")})
		require.NoError(t, err)
		require.Len(t, ids, 2)
	}
	ids, err := e.Publish(ctx, "nobody", ringwal.Message{})
	require.NoError(t, err)
	require.Empty(t, ids)
	emails, billing := e.Queue("emails"), e.Queue("billing")
	_, err = emails.Enqueue(ctx, ringwal.Message{Delay: time.Hour})
	require.NoError(t, err)

	// emails: one acked, one dead-lettered, one delayed; billing: one
	// leased, one pending, paused.
	require.NoError(t, e.Ack(dequeueFrom(t, emails).Lease))
	require.NoError(t, e.Nack(dequeueFrom(t, emails).Lease, errPermanent))
	dequeueFrom(t, billing)
	require.NoError(t, billing.Pause(time.Time{}))
	fake.Advance(3 * time.Second)

	fams := scrapeMetrics(t, reg)
	assert.Equal(t, 2.0, metricValue(t, fams, "ringwal_published_total"))
	assert.Equal(t, 1.0, metricValue(t, fams, "ringwal_unrouted_publishes_total"))
	assert.Equal(t, 3.0, metricValue(t, fams, "ringwal_queues"))
	want := map[string]struct {
		pending, delayed, leased, held, dead, enq, acked, dl, paused float64
	}{
		prom.DefaultQueueLabel: {pending: 1, enq: 1},
		"emails":               {delayed: 1, dead: 1, enq: 3, acked: 1, dl: 1},
		"billing":              {pending: 1, leased: 1, enq: 2, paused: 1},
	}
	for q, w := range want {
		for st, v := range map[string]float64{"pending": w.pending, "delayed": w.delayed, "leased": w.leased, "held": w.held} {
			assert.Equal(t, v, metricValue(t, fams, "ringwal_queue_messages", "queue", q, "state", st), "%s %s", q, st)
		}
		assert.Equal(t, w.dead, metricValue(t, fams, "ringwal_queue_dead_letters", "queue", q), q)
		assert.Equal(t, w.enq, metricValue(t, fams, "ringwal_queue_enqueued_total", "queue", q), q)
		assert.Equal(t, w.acked, metricValue(t, fams, "ringwal_queue_acked_total", "queue", q), q)
		assert.Equal(t, w.dl, metricValue(t, fams, "ringwal_queue_dead_lettered_total", "queue", q), q)
		assert.Equal(t, w.paused, metricValue(t, fams, "ringwal_queue_paused", "queue", q), q)
	}
	assert.Equal(t, 3.0, metricValue(t, fams, "ringwal_queue_oldest_pending_age_seconds", "queue", prom.DefaultQueueLabel))
	assert.Equal(t, 0.0, metricValue(t, fams, "ringwal_queue_oldest_pending_age_seconds", "queue", "emails"), "nothing pending")
	assert.Nil(t, metricSample(fams, "ringwal_queue_messages", "queue", prom.OtherQueueLabel, "state", "pending"), "no _other under the cap")
	assert.Len(t, fams["ringwal_queue_dead_letters"].GetMetric(), 3)

	// The queues' figures add up to the engine's.
	s := e.Stats()
	for st, v := range map[string]int{"pending": s.Pending, "delayed": s.Delayed, "leased": s.Leased, "held": s.Held} {
		sum := 0.0
		for _, m := range fams["ringwal_queue_messages"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" && l.GetValue() == st {
					sum += m.GetGauge().GetValue()
				}
			}
		}
		assert.Equal(t, float64(v), sum, st)
	}
	problems, err := testutil.CollectAndLint(coll)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// queueCounters reads every ringwal_queue_*_total series by queue label.
func queueCounters(t testing.TB, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	g, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range g {
		switch f.GetName() {
		case "ringwal_queue_enqueued_total", "ringwal_queue_acked_total", "ringwal_queue_dead_lettered_total":
			for _, m := range f.GetMetric() {
				out[f.GetName()+"/"+m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// TestMetricsQueueCap: at most 50 named queues one by one (the first seen,
// by name at the first scrape), the rest summed under queue="_other"; a
// deleted queue's place goes to a queue seen later, a queue folded stays
// folded, and no counter goes back when queues are deleted or deleted and
// declared again between scrapes.
func TestMetricsQueueCap(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	ctx := context.Background()
	reg, coll := registered(t, e)
	name := func(i int) string { return fmt.Sprintf("q%02d", i) }
	for i := range 53 {
		_, err := e.Queue(name(i)).Enqueue(ctx, ringwal.Message{})
		require.NoError(t, err)
	}
	_, err := e.Enqueue(ctx, ringwal.Message{})
	require.NoError(t, err)

	fams := scrapeMetrics(t, reg)
	assert.Len(t, fams["ringwal_queue_dead_letters"].GetMetric(), 52, "_default, 50 named queues and _other")
	for i := range 50 {
		assert.Equal(t, 1.0, metricValue(t, fams, "ringwal_queue_enqueued_total", "queue", name(i)), name(i))
	}
	assert.Nil(t, metricSample(fams, "ringwal_queue_enqueued_total", "queue", "q50"))
	assert.Equal(t, 3.0, metricValue(t, fams, "ringwal_queue_enqueued_total", "queue", prom.OtherQueueLabel))
	assert.Equal(t, 3.0, metricValue(t, fams, "ringwal_queue_messages", "queue", prom.OtherQueueLabel, "state", "pending"))
	assert.Equal(t, 1.0, metricValue(t, fams, "ringwal_queue_enqueued_total", "queue", prom.DefaultQueueLabel))
	assert.Equal(t, 54.0, metricValue(t, fams, "ringwal_queues"))
	before := queueCounters(t, reg)

	// Drain and delete an exported queue (q07) and a folded one (q51):
	// q07's place goes to "a-new", seen later, although its name sorts
	// first; q50 and q52 stay folded; q51's total stays in _other.
	for _, n := range []string{"q07", "q51"} {
		require.NoError(t, e.Ack(dequeueFrom(t, e.Queue(n)).Lease))
		require.NoError(t, e.DeleteQueue(n))
	}
	_, err = e.Queue("a-new").Enqueue(ctx, ringwal.Message{})
	require.NoError(t, err)
	fams = scrapeMetrics(t, reg)
	assert.Nil(t, metricSample(fams, "ringwal_queue_enqueued_total", "queue", "q07"), "a deleted queue's series ends")
	assert.Equal(t, 1.0, metricValue(t, fams, "ringwal_queue_enqueued_total", "queue", "a-new"))
	assert.Nil(t, metricSample(fams, "ringwal_queue_enqueued_total", "queue", "q50"), "folded stays folded")
	assert.Equal(t, 3.0, metricValue(t, fams, "ringwal_queue_enqueued_total", "queue", prom.OtherQueueLabel))
	assert.Equal(t, 0.0, metricValue(t, fams, "ringwal_queue_acked_total", "queue", prom.OtherQueueLabel),
		"q51's ack came after the last scrape that saw it")
	assert.Equal(t, 2.0, metricValue(t, fams, "ringwal_queue_messages", "queue", prom.OtherQueueLabel, "state", "pending"))
	after := queueCounters(t, reg)
	for k, v := range before {
		if _, ok := after[k]; ok {
			assert.GreaterOrEqual(t, after[k], v, k)
		}
	}

	// q50 deleted and declared again between two scrapes: its new totals
	// are below the last seen, which stay in _other.
	q50 := e.Queue("q50")
	require.NoError(t, e.Ack(dequeueFrom(t, q50).Lease))
	require.NoError(t, e.DeleteQueue("q50"))
	require.NoError(t, e.DeclareQueue("q50", ringwal.QueueOptions{}))
	fams = scrapeMetrics(t, reg)
	assert.Equal(t, 3.0, metricValue(t, fams, "ringwal_queue_enqueued_total", "queue", prom.OtherQueueLabel))
	assert.Equal(t, 1.0, metricValue(t, fams, "ringwal_queue_messages", "queue", prom.OtherQueueLabel, "state", "pending"))
	problems, err := testutil.CollectAndLint(coll)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestMetricsQueueCountersNeverDecrease scrapes from two goroutines while
// producers and consumers work 60 queues and one of them is deleted and
// declared again over and over: no queue counter series ever goes back.
func TestMetricsQueueCountersNeverDecrease(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	reg, _ := registered(t, e)
	const queues = 60
	// Every queue declared and scraped once first, so that q00-q49 take
	// the series of their own and q59, the one churned, is folded.
	for i := range queues {
		require.NoError(t, e.DeclareQueue(fmt.Sprintf("q%02d", i), ringwal.QueueOptions{}))
	}
	queueCounters(t, reg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ctx.Err() == nil; i++ {
				q := e.Queue(fmt.Sprintf("q%02d", i%queues))
				if _, err := q.TryEnqueue(ringwal.Message{}); err != nil && !errors.Is(err, ringwal.ErrFull) {
					t.Error(err)
					return
				}
				if d, ok := q.TryDequeue(); ok {
					if err := e.Ack(d.Lease); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // churns the last queue, which is folded (seen after q00-q49)
		defer wg.Done()
		for ctx.Err() == nil {
			_ = e.DeleteQueue("q59") // refused while it holds messages
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var scrapers sync.WaitGroup
	for range 2 {
		scrapers.Add(1)
		go func() {
			defer scrapers.Done()
			last := map[string]float64{}
			for range 100 {
				for k, v := range queueCounters(t, reg) {
					if v < last[k] {
						t.Errorf("%s went from %v to %v", k, last[k], v)
					}
					last[k] = v
				}
			}
		}()
	}
	scrapers.Wait()
	cancel()
	wg.Wait()
}
