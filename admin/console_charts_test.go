package admin_test

// The console's history over HTTP: the overview's and a queue's charts
// from the engine's history, their window links, and what they say
// before the first sample and without counts by state.

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/internal/enginetest"
)

var chartTitle = regexp.MustCompile(`<title id="([a-z-]+)-title">([^<]*)</title>`)

// chartTitles returns the page's charts, by id, with their titles.
func chartTitles(body string) map[string]string {
	out := map[string]string{}
	for _, m := range chartTitle.FindAllStringSubmatch(body, -1) {
		out[m[1]] = m[2]
	}
	return out
}

func TestConsoleOverviewChartsTheEngineHistory(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	b := newBrowser(t, e, admin.Options{Clock: fake})

	p := b.get("").html(t, http.StatusOK, "before the first sample")
	assert.Contains(t, p.body, `id="history-empty"`)
	assert.Contains(t, p.body, "No sample yet: rates appear 10 seconds after the engine opened.")
	assert.Empty(t, chartTitles(p.body))

	// A sample without counts by state (nobody asked for Stats before
	// the overview above; the engine counts from then on, so the second
	// sample has them), then traffic.
	historyTraffic(t, e)
	enginetest.AwaitSamples(t, e, fake, 3)
	p = b.get("").html(t, http.StatusOK, "overview")
	assert.Equal(t, map[string]string{
		"overview-rates":  "Messages per second",
		"overview-states": "Pending and held",
		"overview-dead":   "Dead-lettered by category",
		"overview-wait":   "Wait for a worker, p95",
	}, chartTitles(p.body))
	assert.Regexp(t, `<g class="series c0" data-name="enqueued"><polyline [^>]*points="[^"]+"/>`, p.body)
	assert.Contains(t, p.body, `data-name="permanent"`, "a line per category that dead-lettered")
	assert.NotContains(t, p.body, "counts by state start with the first Stats", "every sample has them")
	assert.Regexp(t, `<tr><td>enqueued</td><td class="num">[0-9.]+/s</td></tr>`, p.body, "the last minute's rates")
	// The window links: 1h by default, the others a link.
	assert.Contains(t, p.body, `<span class="badge current" aria-current="true">1h</span>`)
	assert.Contains(t, p.body, `<a href="?window=24h">24h</a>`)
	p = b.get("?window=15m").html(t, http.StatusOK, "another window")
	assert.Contains(t, p.body, `aria-current="true">15m</span>`)
	p = b.get("?window=nonsense").html(t, http.StatusOK, "an unknown window")
	assert.Contains(t, p.body, `aria-current="true">1h</span>`, "the default")
}

func TestConsoleChartsSayWhenCountsByStateStart(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	b := newBrowser(t, e, admin.Options{Clock: fake})
	enginetest.AwaitSamples(t, e, fake, 1) // nobody has asked for Stats yet
	p := b.get("").html(t, http.StatusOK, "one sample, without counts")
	assert.NotContains(t, chartTitles(p.body), "overview-states")
	assert.Contains(t, p.body, "no sample in this window has them yet")
	enginetest.AwaitSamples(t, e, fake, 1) // the overview asked: counted from now on
	p = b.get("").html(t, http.StatusOK, "counted since")
	assert.Contains(t, chartTitles(p.body), "overview-states")
	assert.Contains(t, p.body, "counts by state start with the first Stats, at")
}

func TestConsoleQueuePageChartsItsHistory(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	b := newBrowser(t, e, admin.Options{Clock: fake})
	historyTraffic(t, e)
	_ = e.Stats()
	enginetest.AwaitSamples(t, e, fake, 2)

	p := b.get("queues").html(t, http.StatusOK, "queues")
	assert.Contains(t, p.body, `href="./queue?queue=emails" class="history small"`)
	p = b.get("queue?queue=emails").html(t, http.StatusOK, "a queue")
	assert.Equal(t, map[string]string{"queue-rates": "Messages per second", "queue-states": "Pending and held"}, chartTitles(p.body))
	assert.Contains(t, p.body, `<a href="?queue=emails&amp;window=6h">6h</a>`, "window links keep the queue")
	p = b.get("queue?queue="+admin.DefaultQueue).html(t, http.StatusOK, "the default queue")
	assert.Len(t, chartTitles(p.body), 2)
	b.get("queue?queue=nosuch").html(t, http.StatusNotFound, "an undeclared queue")
	b.get("queue").html(t, http.StatusOK, "no name: the default queue")
}

func TestConsoleQueuePageSaysWhenTheEngineKeepsNoHistory(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	ctx := context.Background()
	for i := range 17 { // the engine follows 16 named queues
		name := fmt.Sprintf("q%02d", i)
		require.NoError(t, e.DeclareQueue(name, ringwal.QueueOptions{}))
		_, err := e.Queue(name).Enqueue(ctx, ringwal.Message{})
		require.NoError(t, err)
	}
	enginetest.AwaitSamples(t, e, fake, 1)
	b := newBrowser(t, e, admin.Options{Clock: fake})
	unfollowed := 0
	for i := range 17 {
		p := b.get(fmt.Sprintf("queue?queue=q%02d", i)).html(t, http.StatusOK, "a queue")
		if assert.ObjectsAreEqual(0, len(chartTitles(p.body))) {
			unfollowed++
			assert.Contains(t, p.body, `id="history-unfollowed"`)
		}
	}
	assert.Equal(t, 1, unfollowed)
}
