package consolebrowser_test

// The console's charts in a real browser (see console_browser_test.go):
// after an hour of traffic on the engine's fake clock, with an incident in
// the middle (webhooks rejected, then a backlog), the overview shows its
// four charts with the hour's samples, and a queue's page its own.
//
// RINGWAL_UPDATE_SCREENSHOT=1 writes the overview to
// docs/console-overview-charts.png.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// chartsTraffic runs steps 10-second intervals of a service's traffic on
// e's fake clock, each ending with the engine's sample: orders in the
// default queue (a wave), emails steady, webhooks; from step incident for
// a sixth of the run the webhooks' endpoint rejects them (dead letters)
// and the workers keep up with half the orders (a backlog, longer
// waits), then catch up. A few poison messages and transient failures
// throughout.
func chartsTraffic(t *testing.T, e *ringwal.Engine, fake *clock.Fake, steps, incident int) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{"emails", "webhooks"} {
		require.NoError(t, e.DeclareQueue(q, ringwal.QueueOptions{}))
	}
	_ = e.Stats() // the engine counts by state from the first Stats: as when the console is open
	put := func(queue string, n int) {
		for i := 0; i < n; i++ {
			_, err := e.Queue(queue).Enqueue(ctx, ringwal.Message{Key: queue + "-" + fmt.Sprint(i%4), Payload: []byte("{}")})
			require.NoError(t, err)
		}
	}
	rejected := classify.Mark(errors.New("POST https://hooks.example.com: HTTP 410"), classify.Permanent)
	flaky := classify.Mark(errors.New("smtp: connection reset"), classify.Transient)
	crashed := classify.Mark(errors.New("handler panicked: index out of range"), classify.Poison)
	for step := range steps {
		inIncident := step >= incident && step < incident+steps/6
		put("", 30+int(15*math.Sin(float64(step)/25)))
		put("emails", 8)
		put("webhooks", 4+step%3)
		// Each queue's workers: orders fall behind in the incident and
		// catch up after it.
		capacity := map[string]int{"": 60, "emails": 20, "webhooks": 20}
		if inIncident {
			capacity[""] = 25
		}
		for queue, n := range capacity {
			for i := 0; i < n; i++ {
				d, ok := e.Queue(queue).TryDequeue()
				if !ok {
					break
				}
				var err error
				switch {
				case queue == "webhooks" && inIncident:
					err = rejected
				case queue == "emails" && (step+i)%17 == 0:
					err = flaky
				case queue == "" && step%45 == 7 && i == 0:
					err = crashed
				}
				if err != nil {
					require.NoError(t, e.Nack(d.Lease, err))
				} else {
					require.NoError(t, e.Ack(d.Lease))
				}
			}
		}
		enginetest.AwaitSamples(t, e, fake, 1)
	}
}

func TestConsoleChartsInBrowser(t *testing.T) {
	exe := chromium(t)
	// 09:00 local on the fake clock, which the engine and the handler share.
	fake := clock.NewFake(time.Date(2026, 11, 26, 9, 0, 0, 0, time.Local))
	e := enginetest.Open(t, "", ringwal.Options{Clock: fake})
	const steps = 360 // an hour
	chartsTraffic(t, e, fake, steps, 180)
	require.Len(t, e.History(), 15*6+45, "the last 15 minutes at 10 s, the 45 before at 1 min")

	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{Clock: fake}))
	t.Cleanup(srv.Close)
	base := srv.URL + "/"
	bctx, run := newChrome(t, exe, 50*time.Second, chromedp.WindowSize(1280, 1100))
	eval := func(js string) int {
		t.Helper()
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](js))
		require.NoError(t, err, js)
		return n
	}
	text := pageText(t, bctx)
	count := func(sel string) int { return eval(fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)) }
	points := func(sel string) int {
		return eval(fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).reduce((n, l) => n + l.points.length, 0)`, sel))
	}

	run("overview", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#overview-rates svg`)))
	for _, id := range []string{"overview-rates", "overview-states", "overview-dead", "overview-wait"} {
		assert.Equal(t, 1, count("#"+id+" svg[role=img] > title"), "%s: a chart with its title", id)
		assert.Positive(t, eval(fmt.Sprintf(`Math.round(document.querySelector("#%s svg").getBoundingClientRect().height)`, id)), "%s is drawn", id)
	}
	// The hour's samples: 135 a line (the line breaks nowhere).
	assert.Equal(t, 135, points(`#overview-rates [data-name="enqueued"] polyline`))
	assert.Equal(t, 135, points(`#overview-states [data-name="pending"] polyline`))
	assert.Equal(t, 1, count(`#overview-dead [data-name="permanent"] polyline`), "the rejected webhooks")
	assert.Equal(t, 1, count(`#overview-dead [data-name="poison"] polyline`))
	assert.Contains(t, text(`#overview-rates figcaption`), "Messages per second")
	assert.Regexp(t, `enqueued [0-9.]+/s`, text(`#overview-rates .legend`), "the latest value, in the legend")
	assert.Contains(t, text(`#rates`), "enqueued", "the last minute's rates, from the history")
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)

	// A wider window, from its link.
	run("24h", chromedp.Click(chromedp.CSS(`#history .windows a[href="?window=24h"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#history .windows [aria-current]`)))
	assert.Equal(t, "24h", text(`#history .windows [aria-current]`))
	assert.Equal(t, 135, points(`#overview-rates [data-name="enqueued"] polyline`), "the same samples, on a longer axis")

	// A queue's page, from the queues page.
	run("queues", chromedp.Navigate(base+"queues"), chromedp.WaitVisible(chromedp.CSS(`#queues`)))
	run("webhooks", chromedp.Click(chromedp.CSS(`#queues tr[data-queue="webhooks"] a.history`)),
		chromedp.WaitVisible(chromedp.CSS(`#queue-rates svg`)))
	assert.Equal(t, 135, points(`#queue-rates [data-name="dead-lettered"] polyline`))
	assert.Equal(t, 1, count(`#queue-states svg > title`))

	if os.Getenv("RINGWAL_UPDATE_SCREENSHOT") != "" {
		out := filepath.Join("..", "..", "..", "docs", "console-overview-charts.png")
		require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
		require.NoError(t, os.WriteFile(out, png, 0o644))
		t.Logf("wrote %s", out)
	}
}
