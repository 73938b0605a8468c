package prom_test

// The README's metrics table is the collector's: the families, their types
// and labels.

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/prom"
)

// readmeSection returns the text under the README's level-two heading,
// up to the next level-two heading.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	require.True(t, ok, "README.md has no section %q", heading)
	rest, _, _ = strings.Cut(rest, "\n## ")
	return rest
}

// metricRow is one row of the README's metrics table, or one family of
// the collector.
type metricRow struct {
	kind   string // counter, gauge, histogram
	labels string // comma-separated, in order
}

// README: "| metric | type | labels | what |" lists every family package
// prom's collector exports, with its type and labels, and nothing else.
func TestDocsReadmeMetricsTableIsTheCollectors(t *testing.T) {
	table := map[string]metricRow{}
	rowRE := regexp.MustCompile("^\\| `(ringwal_[a-z_]+)` \\| ([a-z]+) \\|([^|]*)\\|")
	for _, line := range strings.Split(readmeSection(t, "## Metrics"), "\n") {
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := strings.NewReplacer("`", "", " ", "").Replace(m[3])
		_, dup := table[m[1]]
		assert.False(t, dup, "%s is listed twice", m[1])
		table[m[1]] = metricRow{kind: m[2], labels: labels}
	}
	require.NotEmpty(t, table, "the README's metrics table was not found")

	// Every family the collector describes, with its labels.
	e, err := ringwal.Open(t.TempDir(), ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	c := prom.NewCollector(e)
	descs := make(chan *prometheus.Desc, 256)
	c.Describe(descs)
	close(descs)
	descRE := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}\}$`)
	registered := map[string]metricRow{}
	for d := range descs {
		m := descRE.FindStringSubmatch(d.String())
		require.NotNil(t, m, "unexpected Desc text %s", d)
		registered[m[1]] = metricRow{labels: m[2]}
	}
	// Their types, from a scrape of an engine that has done a little of
	// everything (a family with no series yet is not scraped).
	_, err = e.Enqueue(context.Background(), ringwal.Message{Key: "k"})
	require.NoError(t, err)
	d, err := e.Dequeue(context.Background())
	require.NoError(t, err)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("no"), classify.Permanent)))
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	kinds := map[dto.MetricType]string{dto.MetricType_COUNTER: "counter", dto.MetricType_GAUGE: "gauge", dto.MetricType_HISTOGRAM: "histogram"}
	for _, f := range families {
		r := registered[f.GetName()]
		r.kind = kinds[f.GetType()]
		registered[f.GetName()] = r
	}

	for name, r := range registered {
		row, ok := table[name]
		if !assert.True(t, ok, "the collector exports %s (labels %q); the README's metrics table does not list it", name, r.labels) {
			continue
		}
		assert.Equal(t, r.labels, row.labels, "%s: labels", name)
		if r.kind != "" {
			assert.Equal(t, r.kind, row.kind, "%s: type", name)
		}
	}
	for name := range table {
		_, ok := registered[name]
		assert.True(t, ok, "the README's metrics table lists %s; the collector does not export it", name)
	}
}
