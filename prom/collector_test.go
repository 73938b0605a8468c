package prom_test

// Tests of the Prometheus collector, and that Stats carries the same
// figures. Metrics are scraped the way Prometheus does: promhttp on an
// httptest server, parsed with expfmt.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/enginetest"
	"github.com/ringwal/ringwal/prom"
)

// registered returns a registry holding e's collector, and the collector.
func registered(t testing.TB, e *ringwal.Engine) (*prometheus.Registry, prometheus.Collector) {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := prom.NewCollector(e)
	require.NoError(t, reg.Register(c))
	return reg, c
}

// scrape fetches reg's metrics through promhttp and parses them.
func scrapeMetrics(t testing.TB, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// sample returns the metric of family name whose labels are exactly the
// given name/value pairs, or nil.
func metricSample(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		for _, lp := range m.GetLabel() {
			if v, ok := want[lp.GetName()]; !ok || v != lp.GetValue() {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is the counter or gauge value of a sample; it fails the test if
// the sample is missing.
func metricValue(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := metricSample(fams, name, labels...)
	require.NotNil(t, m, "no sample %s%v", name, labels)
	switch fams[name].GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s is a %v", name, fams[name].GetType())
	return 0
}

func histogramOf(t testing.TB, fams map[string]*dto.MetricFamily, name string) *dto.Histogram {
	t.Helper()
	f := fams[name]
	require.NotNil(t, f, "no family %s", name)
	require.Equal(t, dto.MetricType_HISTOGRAM, f.GetType(), name)
	require.Len(t, f.GetMetric(), 1, name)
	return f.GetMetric()[0].GetHistogram()
}

// cumulative returns the cumulative count of h's bucket with upper bound
// le.
func cumulativeCount(t testing.TB, h *dto.Histogram, le float64) uint64 {
	t.Helper()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount()
		}
	}
	t.Fatalf("no bucket le=%g", le)
	return 0
}

var (
	errTransient = classify.Mark(errors.New("upstream reset"), classify.Transient)
	errPermanent = classify.Mark(errors.New("bad request"), classify.Permanent)
)

// slowRetries keeps retried messages Delayed for a minute of fake time.
func slowRetries() map[classify.Category]classify.RetryPolicy {
	p := classify.RetryPolicy{MaxAttempts: 5, Base: time.Minute, Max: time.Minute, Multiplier: 2, Jitter: classify.NoJitter}
	return map[classify.Category]classify.RetryPolicy{classify.Transient: p}
}

// TestMetricsAfterWorkload runs a known workload on a memory engine with
// a fake clock and checks every figure the collector exports, and that
// Stats carries the same ones.
func TestMetricsAfterWorkload(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e := enginetest.Open(t, "", ringwal.Options{
		Clock: fake, TierCapacity: 256, Policies: slowRetries(),
		Breaker: breaker.Options{ConsecutiveFailures: 2, FailureRate: -1, OpenTimeout: time.Hour},
	})
	reg, coll := registered(t, e)

	const n = 128
	for i := 0; i < n; i++ {
		m := ringwal.Message{Payload: []byte("x")}
		if i < 2 {
			m.Key = "api"
		}
		_, err := e.Enqueue(context.Background(), m)
		require.NoError(t, err)
	}
	ds := make([]ringwal.Delivery, n)
	for i := range ds {
		ds[i] = enginetest.Dequeue(t, e)
	}
	fake.Advance(3 * time.Millisecond) // every handling time is 3ms
	permanent := 0
	for _, d := range ds {
		switch {
		case d.Message.Key == "api":
			require.NoError(t, e.Nack(d.Lease, errTransient))
		case permanent < 3:
			permanent++
			require.NoError(t, e.Nack(d.Lease, errPermanent))
		default:
			require.NoError(t, e.Ack(d.Lease))
		}
	}
	_, err := e.Enqueue(context.Background(), ringwal.Message{DedupID: "once"})
	require.NoError(t, err)
	_, err = e.Enqueue(context.Background(), ringwal.Message{DedupID: "once"})
	require.ErrorIs(t, err, ringwal.ErrDuplicate)
	for i := 0; i < 3; i++ {
		_, err := e.Enqueue(context.Background(), ringwal.Message{Priority: ringwal.High})
		require.NoError(t, err)
	}
	fake.Advance(5 * time.Second) // the oldest pending message is 5s old

	fams := scrapeMetrics(t, reg)
	counters := map[string]float64{
		"ringwal_enqueued_total":             n + 1 + 3,
		"ringwal_dequeued_total":             n,
		"ringwal_acked_total":                n - 2 - 3,
		"ringwal_nacked_total":               5,
		"ringwal_retried_total":              2,
		"ringwal_expired_total":              0,
		"ringwal_lease_expiries_total":       0,
		"ringwal_duplicates_refused_total":   1,
		"ringwal_backpressure_waits_total":   0,
		"ringwal_breaker_trips_total":        1,
		"ringwal_redriven_total":             0,
		"ringwal_requeued_total":             0,
		"ringwal_dead_letters_evicted_total": 0,
	}
	for name, want := range counters {
		assert.Equal(t, dto.MetricType_COUNTER, fams[name].GetType(), name)
		assert.Equal(t, want, metricValue(t, fams, name), name)
	}
	for _, cat := range classify.Categories() {
		want := 0.0
		if cat == classify.Permanent {
			want = 3
		}
		assert.Equal(t, want, metricValue(t, fams, "ringwal_dead_lettered_total", "category", cat.String()), cat.String())
		assert.Equal(t, want, metricValue(t, fams, "ringwal_dead_letters", "category", cat.String()), cat.String())
	}
	for _, st := range []string{"pending", "delayed", "leased", "held"} {
		for _, p := range []ringwal.Priority{ringwal.Critical, ringwal.High, ringwal.Normal, ringwal.Low, ringwal.Background} {
			want := 0.0
			switch {
			case st == "pending" && p == ringwal.Normal:
				want = 1
			case st == "pending" && p == ringwal.High:
				want = 3
			case st == "delayed" && p == ringwal.Normal:
				want = 2
			}
			assert.Equal(t, want, metricValue(t, fams, "ringwal_messages", "state", st, "priority", p.String()), "%s %s", st, p)
		}
	}
	assert.Len(t, fams["ringwal_messages"].GetMetric(), 4*5)
	assert.InDelta(t, 3.0/256, metricValue(t, fams, "ringwal_tier_utilization_ratio", "priority", "high"), 1e-9)
	assert.InDelta(t, 1.0/256, metricValue(t, fams, "ringwal_tier_utilization_ratio", "priority", "normal"), 1e-9)
	assert.Equal(t, 0.0, metricValue(t, fams, "ringwal_tier_utilization_ratio", "priority", "critical"))
	assert.Equal(t, 5.0, metricValue(t, fams, "ringwal_oldest_pending_age_seconds"))
	assert.Equal(t, 2.0, metricValue(t, fams, "ringwal_breaker_state", "key", "api"), "open")
	assert.Len(t, fams["ringwal_breaker_state"].GetMetric(), 1)
	assert.Equal(t, 1.0, metricValue(t, fams, "ringwal_breakers", "state", "open"))
	assert.Equal(t, 0.0, metricValue(t, fams, "ringwal_breakers", "state", "closed"))
	assert.Equal(t, 0.0, metricValue(t, fams, "ringwal_breakers", "state", "half-open"))

	// Latency histograms: buckets 1µs, 2µs, ... (powers of two), then +Inf.
	s := e.Stats()
	wait := histogramOf(t, fams, "ringwal_wait_seconds")
	require.NotZero(t, wait.GetSampleCount(), "no message was sampled")
	assert.Equal(t, s.Wait.Count, wait.GetSampleCount())
	assert.Equal(t, wait.GetSampleCount(), cumulativeCount(t, wait, 1e-6), "no time passed before dequeue")
	require.Len(t, wait.GetBucket(), 28, "27 finite buckets (1 µs to 67 s) and +Inf")
	assert.Equal(t, 1e-6, wait.GetBucket()[0].GetUpperBound())
	assert.InDelta(t, 67.108864, wait.GetBucket()[26].GetUpperBound(), 1e-9)
	assert.True(t, math.IsInf(wait.GetBucket()[27].GetUpperBound(), 1))
	handling := histogramOf(t, fams, "ringwal_handling_seconds")
	require.NotZero(t, handling.GetSampleCount())
	assert.Equal(t, s.Handling.Count, handling.GetSampleCount())
	assert.Equal(t, uint64(0), cumulativeCount(t, handling, 0.002048))
	assert.Equal(t, handling.GetSampleCount(), cumulativeCount(t, handling, 0.004096))
	assert.InDelta(t, 0.003*float64(handling.GetSampleCount()), handling.GetSampleSum(), 1e-9)

	// A memory engine has no log: no WAL or recovery series.
	for name := range fams {
		assert.False(t, strings.HasPrefix(name, "ringwal_wal_") || strings.HasPrefix(name, "ringwal_recovery_"), name)
	}

	// Stats carries the same figures.
	assert.Equal(t, uint64(n+4), s.Enqueued)
	assert.Equal(t, uint64(n), s.Dequeued)
	assert.Equal(t, uint64(n-5), s.Acked)
	assert.Equal(t, uint64(5), s.Nacked)
	assert.Equal(t, uint64(2), s.Retried)
	assert.Equal(t, uint64(3), s.DeadLettered)
	assert.Equal(t, uint64(3), s.DeadLetteredByCategory[classify.Permanent])
	assert.Equal(t, 3, s.DeadByCategory[classify.Permanent])
	assert.Equal(t, uint64(1), s.Duplicates)
	assert.Equal(t, uint64(1), s.BreakerTrips)
	assert.Equal(t, 4, s.Pending)
	assert.Equal(t, 2, s.Delayed)
	assert.Equal(t, 3, s.Dead)
	assert.Equal(t, 3, s.PendingByPriority[ringwal.High])
	assert.Equal(t, 1, s.PendingByPriority[ringwal.Normal])
	assert.Equal(t, 2, s.DelayedByPriority[ringwal.Normal])
	assert.Len(t, s.LeasedByPriority, 5)
	assert.Len(t, s.HeldByPriority, 5)
	assert.Equal(t, 5*time.Second, s.OldestPending)
	assert.InDelta(t, float64(3*time.Millisecond), float64(s.Handling.Mean), 1e3)
	for _, q := range []time.Duration{s.Handling.P50, s.Handling.P95, s.Handling.P99} {
		assert.True(t, q > 2048*time.Microsecond && q <= 4096*time.Microsecond, "handling quantile %v", q)
	}
	for _, q := range []time.Duration{s.Wait.P50, s.Wait.P95, s.Wait.P99} {
		assert.LessOrEqual(t, q, time.Microsecond, "wait quantile")
	}
	require.Len(t, s.Breakers, 1)
	assert.Equal(t, "api", s.Breakers[0].Key)
	assert.Equal(t, breaker.Open, s.Breakers[0].State)
	assert.Equal(t, ringwal.WALStats{}, s.WAL)

	problems, err := testutil.CollectAndLint(coll)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestMetricsLint lints every metric, those of a disk engine included,
// with client_golang's linter.
func TestMetricsLint(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		e := enginetest.Open(t, dir, ringwal.Options{})
		reg, coll := registered(t, e)
		_, err := e.Enqueue(context.Background(), ringwal.Message{Key: "k", Payload: []byte("p")})
		require.NoError(t, err)
		d := enginetest.Dequeue(t, e)
		require.NoError(t, e.Ack(d.Lease))

		problems, err := testutil.CollectAndLint(coll)
		require.NoError(t, err)
		assert.Empty(t, problems, "dir %q", dir)
		problems, err = testutil.GatherAndLint(reg)
		require.NoError(t, err)
		assert.Empty(t, problems, "dir %q", dir)
		for name, f := range scrapeMetrics(t, reg) {
			assert.True(t, strings.HasPrefix(name, "ringwal_"), name)
			if f.GetType() == dto.MetricType_COUNTER {
				assert.True(t, strings.HasSuffix(name, "_total"), name)
			}
		}
	}
}

// TestMetricsWAL checks the log's metrics on a disk engine, and the
// recovery gauges (and the torn-tail log line) after a reopen.
func TestMetricsWAL(t *testing.T) {
	dir := t.TempDir()
	e, err := ringwal.Open(dir, ringwal.Options{Durability: ringwal.Fsync})
	require.NoError(t, err)
	reg, coll := registered(t, e)
	for i := 0; i < 20; i++ {
		_, err := e.Enqueue(context.Background(), ringwal.Message{Payload: []byte("payload")})
		require.NoError(t, err)
	}
	for i := 0; i < 10; i++ {
		d := enginetest.Dequeue(t, e)
		require.NoError(t, e.Ack(d.Lease))
	}
	// The writer counts a batch just after it releases its waiters.
	require.Eventually(t, func() bool { return e.Stats().WAL.Records >= 30 }, 5*time.Second, time.Millisecond,
		"20 enqueues and 10 acks at least")
	before := e.Stats()
	fams := scrapeMetrics(t, reg)
	s := e.Stats()
	batches := histogramOf(t, fams, "ringwal_wal_batch_records")
	assert.NotZero(t, batches.GetSampleCount())
	// The writer may log a lease or two meanwhile: Stats before and after
	// bracket the scrape.
	between := func(what string, lo, v, hi uint64) {
		assert.True(t, lo <= v && v <= hi, "%s: %d not in [%d, %d]", what, v, lo, hi)
	}
	between("batches", before.WAL.Batches, batches.GetSampleCount(), s.WAL.Batches)
	between("records", before.WAL.Records, uint64(batches.GetSampleSum()), s.WAL.Records)
	between("bytes", before.WAL.Bytes, uint64(metricValue(t, fams, "ringwal_wal_written_bytes_total")), s.WAL.Bytes)
	require.Len(t, batches.GetBucket(), 20, "1, 2, 4, ... 2^18, +Inf")
	assert.Equal(t, 1.0, batches.GetBucket()[0].GetUpperBound())
	assert.Equal(t, float64(1<<18), batches.GetBucket()[18].GetUpperBound())
	assert.NotZero(t, before.WAL.Bytes)
	assert.Equal(t, 0.0, metricValue(t, fams, "ringwal_wal_failed_batches_total"))
	write := histogramOf(t, fams, "ringwal_wal_write_seconds")
	between("writes", before.WAL.Write.Count, write.GetSampleCount(), s.WAL.Write.Count)
	fsync := histogramOf(t, fams, "ringwal_wal_fsync_seconds")
	assert.NotZero(t, fsync.GetSampleCount(), "Fsync mode syncs")
	between("fsyncs", before.WAL.Fsync.Count, fsync.GetSampleCount(), s.WAL.Fsync.Count)
	assert.Equal(t, 0.0, metricValue(t, fams, "ringwal_recovery_records"))
	require.NoError(t, e.Close())
	// A closed engine still answers, frozen; the caller unregisters.
	closed := scrapeMetrics(t, reg)
	assert.Equal(t, metricValue(t, fams, "ringwal_enqueued_total"), metricValue(t, closed, "ringwal_enqueued_total"))
	assert.True(t, reg.Unregister(coll))
	assert.Empty(t, scrapeMetrics(t, reg))

	// Tear the tail of the last segment, as a crash mid-write would.
	segs, err := filepath.Glob(filepath.Join(dir, "log", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	sort.Strings(segs)
	last := segs[len(segs)-1]
	fi, err := os.Stat(last)
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(3))
	require.NoError(t, os.Truncate(last, fi.Size()-3))

	logs := &lockedWriter{w: &bytes.Buffer{}}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e2 := enginetest.Open(t, dir, ringwal.Options{Logger: logger})
	reg2, _ := registered(t, e2)
	fams = scrapeMetrics(t, reg2)
	s = e2.Stats()
	assert.NotZero(t, metricValue(t, fams, "ringwal_recovery_records"))
	assert.Equal(t, float64(s.Recovery.Records), metricValue(t, fams, "ringwal_recovery_records"))
	assert.NotZero(t, metricValue(t, fams, "ringwal_recovery_torn_bytes"))
	assert.Equal(t, float64(s.Recovery.TornBytes), metricValue(t, fams, "ringwal_recovery_torn_bytes"))
	assert.Equal(t, s.Recovery.Duration.Seconds(), metricValue(t, fams, "ringwal_recovery_duration_seconds"))
	text := logs.String()
	assert.Contains(t, text, "cut torn tail")
	assert.Contains(t, text, "ringwal: opened")
}

// TestMetricsBreakerCap: at most 50 keys one by one, the rest summed under
// key="_other" (a key named "_other" and one that is not UTF-8 included).
func TestMetricsBreakerCap(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	e := enginetest.Open(t, "", ringwal.Options{
		Clock: fake, Policies: slowRetries(),
		Breaker: breaker.Options{ConsecutiveFailures: 1, FailureRate: -1, OpenTimeout: time.Hour},
	})
	reg, _ := registered(t, e)
	var keys []string
	for i := 0; i < 52; i++ {
		keys = append(keys, "k"+string(rune('A'+i/26))+string(rune('a'+i%26)))
	}
	keys = append(keys, "_other", "\xff")
	closed := []string{"c1", "c2"}
	for _, k := range append(slices.Clone(keys), closed...) {
		_, err := e.Enqueue(context.Background(), ringwal.Message{Key: k})
		require.NoError(t, err)
	}
	for range len(keys) + len(closed) {
		d := enginetest.Dequeue(t, e)
		if slices.Contains(closed, d.Message.Key) {
			require.NoError(t, e.Ack(d.Lease))
		} else {
			require.NoError(t, e.Nack(d.Lease, errTransient))
		}
	}
	fams := scrapeMetrics(t, reg)
	series := fams["ringwal_breaker_state"].GetMetric()
	assert.Len(t, series, 51, "50 keys and _other")
	// Open ones first, by name: kAa..kBx (50); kBy, kBz, "_other" and
	// "\xff" are folded: 4 open breakers, 2 each.
	for _, k := range keys[:50] {
		assert.Equal(t, 2.0, metricValue(t, fams, "ringwal_breaker_state", "key", k), k)
	}
	assert.Nil(t, metricSample(fams, "ringwal_breaker_state", "key", "kBy"))
	assert.Nil(t, metricSample(fams, "ringwal_breaker_state", "key", "c1"), "closed keys go after the open ones")
	assert.Equal(t, 8.0, metricValue(t, fams, "ringwal_breaker_state", "key", "_other"))
	assert.Equal(t, float64(len(keys)), metricValue(t, fams, "ringwal_breakers", "state", "open"))
	assert.Equal(t, 2.0, metricValue(t, fams, "ringwal_breakers", "state", "closed"))
	assert.Equal(t, float64(len(keys)), metricValue(t, fams, "ringwal_breaker_trips_total"))
	assert.Len(t, e.Stats().Breakers, len(keys)+len(closed), "Stats lists every key")
}

// TestMetricsTwoEngines: one registry takes two engines only when each
// has a label of its own; unregistering frees the place.
func TestMetricsTwoEngines(t *testing.T) {
	reg := prometheus.NewRegistry()
	labelled := func(name string) prometheus.Registerer {
		return prometheus.WrapRegistererWith(prometheus.Labels{"engine": name}, reg)
	}
	a := enginetest.Open(t, "", ringwal.Options{})
	ca := prom.NewCollector(a)
	require.NoError(t, labelled("a").Register(ca))
	a2 := enginetest.Open(t, "", ringwal.Options{})
	require.Error(t, labelled("a").Register(prom.NewCollector(a2)), "the same series twice")
	b := enginetest.Open(t, "", ringwal.Options{})
	require.NoError(t, labelled("b").Register(prom.NewCollector(b)))
	_, err := b.Enqueue(context.Background(), ringwal.Message{})
	require.NoError(t, err)
	fams := scrapeMetrics(t, reg)
	assert.Equal(t, 0.0, metricValue(t, fams, "ringwal_enqueued_total", "engine", "a"))
	assert.Equal(t, 1.0, metricValue(t, fams, "ringwal_enqueued_total", "engine", "b"))
	require.NoError(t, a.Close())
	require.True(t, labelled("a").Unregister(ca))
	fams = scrapeMetrics(t, reg)
	assert.Nil(t, metricSample(fams, "ringwal_enqueued_total", "engine", "a"))
	assert.NotNil(t, metricSample(fams, "ringwal_enqueued_total", "engine", "b"))
	require.NoError(t, labelled("a").Register(prom.NewCollector(a2)), "the place is free again")
}

// TestMetricsCountersNeverDecrease scrapes while producers and consumers
// run: the derived totals must never go backwards (a counter that does is
// a reset to Prometheus).
func TestMetricsCountersNeverDecrease(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{TierCapacity: 1 << 10, MaxMessages: 1 << 11})
	reg, _ := registered(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ops atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				m := ringwal.Message{}
				if i%7 == 0 {
					m.DedupID = "d" + string(rune('a'+w)) + string(rune('a'+i%5)) // some duplicates
				}
				if _, err := e.TryEnqueue(m); err != nil && !errors.Is(err, ringwal.ErrDuplicate) && !errors.Is(err, ringwal.ErrFull) {
					t.Error(err)
					return
				}
				d, ok := e.TryDequeue()
				if !ok {
					runtime.Gosched()
					continue
				}
				var err error
				if i%11 == 0 {
					err = e.Nack(d.Lease, errPermanent)
				} else {
					err = e.Ack(d.Lease)
				}
				if err != nil {
					t.Error(err)
					return
				}
				ops.Add(1)
			}
		}(w)
	}
	names := []string{"ringwal_enqueued_total", "ringwal_dequeued_total", "ringwal_acked_total", "ringwal_nacked_total"}
	last := map[string]float64{}
	var prev ringwal.Stats
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) || ops.Load() < 1000 {
		g, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range g {
			if i := slices.Index(names, f.GetName()); i >= 0 {
				v := f.GetMetric()[0].GetCounter().GetValue()
				require.GreaterOrEqual(t, v, last[f.GetName()], f.GetName())
				last[f.GetName()] = v
			}
		}
		s := e.Stats()
		require.GreaterOrEqual(t, s.Enqueued, prev.Enqueued)
		require.GreaterOrEqual(t, s.Dequeued, prev.Dequeued)
		require.GreaterOrEqual(t, s.Acked, prev.Acked)
		prev = s
		if time.Now().After(deadline.Add(10 * time.Second)) {
			break
		}
	}
	cancel()
	wg.Wait()
	// At rest every derived figure is exact.
	s := e.Stats()
	assert.Equal(t, s.Dequeued, s.Acked+s.Nacked+uint64(s.Leased))
	assert.Equal(t, s.Enqueued, s.Acked+s.DeadLettered+uint64(s.Pending+s.Delayed+s.Leased+s.Held))
}

// lockedWriter makes a bytes.Buffer safe for a logger used from several
// goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *lockedWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *lockedWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func TestCollectorCountsDeadLetterEvictions(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{MaxDeadLetters: 2})
	enginetest.DeadLetterN(t, e, "", 5)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prom.NewCollector(e)))
	fams := scrapeMetrics(t, reg)
	assert.Equal(t, 3.0, metricValue(t, fams, "ringwal_dead_letters_evicted_total"))
	assert.Equal(t, 2.0, metricValue(t, fams, "ringwal_dead_letters_max"))
}
