package prom_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/prom"
)

// exportedFamilies returns the series names a durable engine's collector
// exports: every family it describes (some, per key or per schedule,
// appear only once there is one), and a histogram's _bucket, _sum and
// _count.
func exportedFamilies(t *testing.T) map[string]bool {
	t.Helper()
	e, err := ringwal.Open(t.TempDir(), ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	c := prom.NewCollector(e)
	names := map[string]bool{}
	descs := make(chan *prometheus.Desc, 256)
	c.Describe(descs)
	close(descs)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		m := fqName.FindStringSubmatch(d.String())
		require.NotNil(t, m, "a desc without a name: %s", d)
		names[m[1]] = true
	}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		require.True(t, names[mf.GetName()], "%s gathered but not described", mf.GetName())
		if mf.GetType().String() == "HISTOGRAM" {
			for _, sfx := range []string{"_bucket", "_sum", "_count"} {
				names[mf.GetName()+sfx] = true
			}
		}
	}
	return names
}

var seriesName = regexp.MustCompile(`ringwal_[a-z_]+`)

// assertNamesExported checks that every ringwal_ series an expression
// names is one the collector exports.
func assertNamesExported(t *testing.T, where, expr string, exported map[string]bool) {
	t.Helper()
	names := seriesName.FindAllString(expr, -1)
	assert.NotEmpty(t, names, "%s: %s names no ringwal series", where, expr)
	for _, n := range names {
		assert.True(t, exported[n], "%s: %s is not a series the collector exports (in %s)", where, n, expr)
	}
}

// TestDashboardQueriesNameExportedSeries: every query of the shipped
// Grafana dashboard names only series the collector really exports, so a
// renamed metric cannot leave a panel silently empty.
func TestDashboardQueriesNameExportedSeries(t *testing.T) {
	raw, err := os.ReadFile("dashboards/ringwal.json")
	require.NoError(t, err)
	var dash struct {
		Title  string
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal(raw, &dash), "the dashboard is JSON")
	require.NotEmpty(t, dash.Panels)
	exported := exportedFamilies(t)
	queries := 0
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			assertNamesExported(t, "panel "+p.Title, tg.Expr, exported)
			queries++
		}
	}
	t.Logf("%d panels, %d queries checked", len(dash.Panels), queries)
}

// TestAlertRulesNameExportedSeries: every alert expression names only
// exported series; promtool (TestAlertRulesPassPromtool) checks syntax
// and behaviour.
func TestAlertRulesNameExportedSeries(t *testing.T) {
	raw, err := os.ReadFile("alerts/alerts.yaml")
	require.NoError(t, err)
	exported := exportedFamilies(t)
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		expr, ok := strings.CutPrefix(strings.TrimSpace(line), "expr:")
		if !ok {
			continue
		}
		assertNamesExported(t, "alerts.yaml", expr, exported)
		n++
	}
	assert.GreaterOrEqual(t, n, 8, "alerts found")
}

// TestAlertRulesPassPromtool runs promtool's syntax check and the
// alerts' unit tests (alerts/alerts_test.yaml). Without promtool it skips,
// except under CI=true, where .ci/run installs it (Debian's prometheus).
func TestAlertRulesPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: promtool must run in CI (apt-get install prometheus)")
		}
		t.Skip("promtool not installed (Debian: apt-get install prometheus)")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "alerts"
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	}
}
