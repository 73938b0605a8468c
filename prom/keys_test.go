package prom_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/internal/enginetest"
)

func TestMetricsKeys(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{KeyPolicy: func(key string) ringwal.KeyPolicy {
		return ringwal.KeyPolicy{MaxInFlight: 1, MaxQueued: 3}
	}})
	reg, coll := registered(t, e)
	for i := range 60 {
		key := fmt.Sprintf("k%02d", i)
		for range 3 {
			_, err := e.TryEnqueue(ringwal.Message{Key: key})
			require.NoError(t, err)
		}
	}
	require.NoError(t, e.PauseKey("k00", time.Time{}))
	// Leasing everything leaves two of each other key waiting at its
	// in-flight cap (59 x 2), and the paused key's three.
	for {
		if _, ok := e.TryDequeue(); !ok {
			break
		}
	}
	fams := scrapeMetrics(t, reg)
	assert.Equal(t, 118.0, metricValue(t, fams, "ringwal_waiting_messages", "reason", "in-flight"))
	assert.Equal(t, 3.0, metricValue(t, fams, "ringwal_waiting_messages", "reason", "paused"))
	assert.Equal(t, 1.0, metricValue(t, fams, "ringwal_keys", "condition", "paused"))
	assert.Equal(t, 60.0, metricValue(t, fams, "ringwal_keys", "condition", "at_cap"), "every key holds MaxQueued")
	assert.Len(t, fams["ringwal_key_waiting_messages"].GetMetric(), 51, "50 keys and _other")
	sum := 0.0
	for _, m := range fams["ringwal_key_waiting_messages"].GetMetric() {
		sum += m.GetGauge().GetValue()
	}
	assert.Equal(t, 121.0, sum, "the cap folds keys into _other without losing messages")
	assert.Equal(t, 0.0, metricValue(t, fams, "ringwal_delivery_paused"))
	problems, err := testutil.CollectAndLint(coll)
	require.NoError(t, err)
	assert.Empty(t, problems)
}
