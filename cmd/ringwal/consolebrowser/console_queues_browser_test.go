package consolebrowser_test

// The console's queues in a real browser (see console_browser_test.go):
// the queue list shows every queue with its counts and rates, a queue is
// paused from its row (and shows paused) and resumed, and the messages
// page filters by queue through its selector.
//
// RINGWAL_UPDATE_SCREENSHOT=1 writes the queues page, with one queue
// paused, to docs/console-queues.png.

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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

// queuesBrowserFixture gives the queues page a service's shape: emails
// with a backlog, webhooks with failures, billing and audit bound to a
// topic, reports empty, and a little in the default queue. work moves
// some messages through, for the rates.
func queuesBrowserFixture(t *testing.T, e *ringwal.Engine) (work func(n int)) {
	t.Helper()
	ctx := context.Background()
	decl := map[string]ringwal.QueueOptions{
		"emails":   {MaxMessages: 10_000},
		"webhooks": {LeaseTimeout: 10 * time.Second},
		"billing":  {Strict: true, Topics: []string{"orders"}},
		"audit":    {Topics: []string{"orders"}},
		"reports":  {},
	}
	for name, o := range decl {
		require.NoError(t, e.DeclareQueue(name, o))
	}
	put := func(queue string, n int) {
		for i := 0; i < n; i++ {
			_, err := e.Queue(queue).Enqueue(ctx, ringwal.Message{Key: queue + ".example.com", Payload: fmt.Appendf(nil, `{"n":%d}`, i)})
			require.NoError(t, err)
		}
	}
	put("emails", 42)
	put("", 3)
	for i := 0; i < 4; i++ {
		_, err := e.Publish(ctx, "orders", ringwal.Message{Key: "ledger", Payload: fmt.Appendf(nil, `{"order":%d}`, 7000+i)})
		require.NoError(t, err)
	}
	for i := 0; i < 3; i++ {
		put("webhooks", 1)
		d, ok := e.Queue("webhooks").TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("POST https://hooks.example.com: HTTP 410"), classify.Permanent)))
	}
	return func(n int) {
		put("webhooks", n)
		put("emails", n/2)
		for i := 0; i < n; i++ {
			d, ok := e.Queue("webhooks").TryDequeue()
			require.True(t, ok)
			require.NoError(t, e.Ack(d.Lease))
		}
	}
}

func TestConsoleQueuesInBrowser(t *testing.T) {
	exe := chromium(t)
	// One fake clock for the engine and the handler: the rates come from
	// the engine's history, whose samples the test makes by moving it
	// rather than by waiting.
	hclock := clock.NewFake(time.Now())
	e := enginetest.Open(t, t.TempDir(), ringwal.Options{Clock: hclock})
	work := queuesBrowserFixture(t, e)
	enginetest.AwaitSamples(t, e, hclock, 1) // the fixture's traffic in the first sample
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{Clock: hclock}))
	t.Cleanup(srv.Close)
	base := srv.URL + "/"

	bctx, run := newChrome(t, exe, 50*time.Second, chromedp.WindowSize(1280, 720))
	textOf := pageText(t, bctx)
	row := func(name string) string { return fmt.Sprintf(`#queues tr[data-queue=%q]`, name) }

	// From the overview's link to the queue list: every queue, the
	// default first, with its counts.
	run("overview", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#all-queues`)))
	assert.Contains(t, textOf(`#overview-queues`), "emails")
	run("queues", chromedp.Click(chromedp.CSS(`#all-queues`)), chromedp.WaitVisible(chromedp.CSS(`#queues`)))
	names, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#queues tbody tr")).map(r => r.dataset.queue)`))
	require.NoError(t, err)
	assert.Equal(t, []string{admin.DefaultQueue, "audit", "billing", "emails", "reports", "webhooks"}, names)
	assert.Contains(t, textOf(row("emails")), "42")
	assert.Contains(t, textOf(row("webhooks")), "3", "its dead letters")
	assert.Contains(t, textOf(row("billing")), "orders", "its topic")

	// Traffic, and the page again a minute later: rates, over the last
	// minute of the engine's history.
	work(60)
	enginetest.AwaitSamples(t, e, hclock, 6)
	run("queues again", chromedp.Navigate(base+"queues"), chromedp.WaitVisible(chromedp.CSS(`#queues`)))
	assert.Contains(t, textOf(row("webhooks")), "1.0/s · 1.0/s · 0.0/s", "60 enqueued and acked in the minute")

	// Pause emails from its row, until resumed: it shows paused, and the
	// engine's queue is paused.
	run("pause emails",
		chromedp.Click(chromedp.CSS(row("emails")+` button.pause`)),
		chromedp.WaitVisible(chromedp.CSS(row("emails")+` button.resume`)))
	assert.Contains(t, textOf(`.flash`), "Paused")
	assert.Contains(t, textOf(row("emails")), "paused")
	assert.Contains(t, textOf(row("emails")), "until resumed")
	info, found := enginetest.QueueInfo(e, "emails")
	require.True(t, found)
	assert.True(t, info.Paused, "paused from the queues page")
	_, ok := e.Queue("emails").TryDequeue()
	assert.False(t, ok, "a paused queue delivers nothing")
	d, ok := e.TryDequeue()
	require.True(t, ok, "the other queues go on")
	require.NoError(t, e.Ack(d.Lease))
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)

	// The default queue for an hour, typed into its row.
	run("pause the default queue",
		chromedp.SendKeys(chromedp.CSS(row(admin.DefaultQueue)+` input[name="until"]`), "1h"),
		chromedp.Click(chromedp.CSS(row(admin.DefaultQueue)+` button.pause`)),
		chromedp.WaitVisible(chromedp.CSS(row(admin.DefaultQueue)+` button.resume`)))
	assert.Contains(t, textOf(row(admin.DefaultQueue)), "until ")
	info, _ = enginetest.QueueInfo(e, "")
	assert.True(t, info.Paused)
	assert.False(t, info.PausedUntil.IsZero())

	// Resume emails from its row.
	run("resume emails",
		chromedp.Click(chromedp.CSS(row("emails")+` button.resume`)),
		chromedp.WaitVisible(chromedp.CSS(row("emails")+` button.pause`)))
	info, _ = enginetest.QueueInfo(e, "emails")
	assert.False(t, info.Paused, "resumed from the queues page")

	// The messages page, filtered by its queue selector.
	run("messages of billing",
		chromedp.Navigate(base+"messages"),
		chromedp.WaitVisible(chromedp.CSS(`#queue-filter`)),
		chromedp.SetValue(chromedp.CSS(`#queue-filter`), "billing"),
		chromedp.Submit(chromedp.CSS(`#filters`)),
		chromedp.WaitReady(chromedp.CSS(`#queue-filter option[value="billing"][selected]`)))
	listed := textOf(`#messages tbody`)
	assert.Equal(t, 4, strings.Count(listed, "billing"), "the four published copies: %s", listed)
	assert.NotContains(t, listed, "emails")

	if os.Getenv("RINGWAL_UPDATE_SCREENSHOT") != "" {
		out := filepath.Join("..", "..", "..", "docs", "console-queues.png")
		require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
		require.NoError(t, os.WriteFile(out, png, 0o644))
		t.Logf("wrote %s", out)
	}
}
