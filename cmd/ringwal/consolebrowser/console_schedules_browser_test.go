package consolebrowser_test

// The console's schedules in a real browser (see console_browser_test.go):
// the nav link leads to the schedule list, which shows each schedule's
// spec, queue, next and last run and last outcome; a schedule is paused
// from its row (and shows paused), another triggered (the flash and its
// row name the run, which is in its queue), and one removed after the
// confirmation page.
//
// RINGWAL_UPDATE_SCREENSHOT=1 writes the schedules page, after the pause
// and the trigger, to docs/console-schedules.png.

import (
	"context"
	"fmt"
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
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// schedulesBrowserFixture gives the schedules page a service's shape on
// the engine's fake clock: a nightly report, a weekday invoice run, a
// cache warm-up every 5 minutes whose runs nobody takes (so that, with
// overlap skip, later ticks are skipped), a partner sync into a queue at
// its cap (its ticks refused), and a weekly digest paused; then 15
// minutes pass, tick by tick.
func schedulesBrowserFixture(t *testing.T, e *ringwal.Engine, fake *clock.Fake) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, e.DeclareQueue("webhooks", ringwal.QueueOptions{MaxMessages: 1}))
	_, err := e.Queue("webhooks").Enqueue(ctx, ringwal.Message{Key: "partners", Payload: []byte(`{"sync":"backlog"}`)})
	require.NoError(t, err)
	for _, s := range []ringwal.Schedule{
		{Name: "nightly-report", Spec: "0 3 * * *", CatchUp: ringwal.CatchUpOne,
			Message: ringwal.Message{Queue: "reports", Key: "reports", Payload: []byte(`{"report":"daily"}`)}},
		{Name: "invoice-run", Spec: "30 6 * * 1-5", CatchUp: ringwal.CatchUpAll, MaxCatchUp: 5,
			Message: ringwal.Message{Queue: "billing", Payload: []byte(`{"run":"invoices"}`)}},
		{Name: "cache-warm", Spec: "@every 5m", Overlap: ringwal.OverlapSkip, Jitter: 10 * time.Second,
			Message: ringwal.Message{Payload: []byte(`{"warm":"homepage"}`)}},
		{Name: "partner-sync", Spec: "*/5 * * * *",
			Message: ringwal.Message{Queue: "webhooks", Key: "partners", Payload: []byte(`{"sync":"all"}`)}},
		{Name: "digest-weekly", Spec: "@weekly", Paused: true,
			Message: ringwal.Message{Queue: "emails", Payload: []byte(`{"digest":"weekly"}`)}},
	} {
		require.NoError(t, e.AddSchedule(s))
	}
	for i := uint64(1); i <= 3; i++ {
		fake.Advance(5*time.Minute + 10*time.Second)
		require.Eventually(t, func() bool {
			c, p := enginetest.Schedule(t, e, "cache-warm"), enginetest.Schedule(t, e, "partner-sync")
			return c.Runs+c.Skipped >= i && p.Skipped >= i
		}, 10*time.Second, time.Millisecond, "tick %d", i)
	}
}

func TestConsoleSchedulesInBrowser(t *testing.T) {
	exe := chromium(t)
	// A quarter past the hour, a minute ago: the page's times read as today's.
	start := time.Now().Add(-16 * time.Minute).Truncate(15 * time.Minute)
	fake := clock.NewFake(start)
	e := enginetest.Open(t, t.TempDir(), ringwal.Options{Clock: fake})
	schedulesBrowserFixture(t, e, fake)
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{Clock: fake}))
	t.Cleanup(srv.Close)
	base := srv.URL + "/"

	bctx, run := newChrome(t, exe, 50*time.Second, chromedp.WindowSize(1360, 800))
	textOf := pageText(t, bctx)
	row := func(name string) string { return fmt.Sprintf(`#schedules tr[data-schedule=%q]`, name) }

	// From the nav link to the list: every schedule by name, with its
	// spec, queue, next run and last outcome.
	run("overview", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`nav a[href="./schedules"]`)))
	run("schedules", chromedp.Click(chromedp.CSS(`nav a[href="./schedules"]`)), chromedp.WaitVisible(chromedp.CSS(`#schedules`)))
	names, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#schedules tbody tr")).map(r => r.dataset.schedule)`))
	require.NoError(t, err)
	assert.Equal(t, []string{"cache-warm", "digest-weekly", "invoice-run", "nightly-report", "partner-sync"}, names)
	nightly := textOf(row("nightly-report"))
	assert.Contains(t, nightly, "0 3 * * *")
	assert.Contains(t, nightly, "reports")
	assert.Contains(t, nightly, "none yet")
	assert.Contains(t, textOf(row("cache-warm")+` td.outcome`), "the previous run is still live", "overlap skip's reason")
	assert.Contains(t, textOf(row("cache-warm")), "1 · 2", "one run, two ticks skipped")
	assert.Contains(t, textOf(row("partner-sync")+` td.outcome`), "MaxMessages", "a full queue's reason")
	assert.Contains(t, textOf(row("digest-weekly")), "paused")
	assert.Contains(t, textOf(row("invoice-run")), "catch up each (≤ 5)")

	// Pause cache-warm from its row: it shows paused, and the engine's
	// schedule is paused.
	run("pause cache-warm",
		chromedp.Click(chromedp.CSS(row("cache-warm")+` button.pause`)),
		chromedp.WaitVisible(chromedp.CSS(row("cache-warm")+` button.resume`)))
	assert.Contains(t, textOf(`.flash`), "Paused")
	assert.Contains(t, textOf(row("cache-warm")), "paused")
	assert.True(t, enginetest.Schedule(t, e, "cache-warm").Paused, "paused from the schedules page")
	assert.True(t, enginetest.Schedule(t, e, "cache-warm").Next.IsZero())

	// Run the nightly report now: the flash and the row name the run,
	// which is in the reports queue; the next tick stays.
	next := enginetest.Schedule(t, e, "nightly-report").Next
	run("trigger nightly-report",
		chromedp.Click(chromedp.CSS(row("nightly-report")+` button.trigger`)),
		chromedp.WaitVisible(chromedp.CSS(row("nightly-report")+` td.outcome a`)))
	in := enginetest.Schedule(t, e, "nightly-report")
	require.NotZero(t, in.LastID)
	assert.Contains(t, textOf(`.flash`), fmt.Sprintf("Triggered: run #%d", in.LastID))
	assert.Equal(t, fmt.Sprintf("ran #%d", in.LastID), textOf(row("nightly-report")+` td.outcome`))
	assert.True(t, in.Next.Equal(next), "the next tick is unchanged")
	d, ok := e.Queue("reports").TryDequeue()
	require.True(t, ok, "the run is in its queue")
	assert.Equal(t, in.LastID, d.ID)
	assert.Equal(t, "nightly-report", d.Message.Headers[ringwal.ScheduleHeader])
	require.NoError(t, e.Ack(d.Lease))
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)

	// Remove the weekly digest, through its confirmation page.
	run("remove digest-weekly",
		chromedp.Click(chromedp.CSS(row("digest-weekly")+` button.remove`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-remove`)))
	_, found := admin.FindSchedule(admin.NewScheduleViews(e.Schedules()), "digest-weekly")
	assert.True(t, found, "not removed before the confirmation")
	run("confirm", chromedp.Click(chromedp.CSS(`#confirm-remove`)), chromedp.WaitVisible(chromedp.CSS(`#schedules`)))
	assert.Contains(t, textOf(`.flash`), "Removed")
	_, found = admin.FindSchedule(admin.NewScheduleViews(e.Schedules()), "digest-weekly")
	assert.False(t, found, "removed from the schedules page")

	if os.Getenv("RINGWAL_UPDATE_SCREENSHOT") != "" {
		out := filepath.Join("..", "..", "..", "docs", "console-schedules.png")
		require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
		require.NoError(t, os.WriteFile(out, png, 0o644))
		t.Logf("wrote %s", out)
	}
}
