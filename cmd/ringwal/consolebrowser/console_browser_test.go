package consolebrowser_test

// The console in a real browser: headless Chromium driven by chromedp
// against an httptest server over an engine with dead letters. It skips
// only when no Chromium is on PATH, and never under CI=true, where it
// fails instead (.ci/run installs Debian's chromium).
//
// RINGWAL_UPDATE_SCREENSHOT=1 writes the dead-letters page it ends on to
// docs/console.png (the README shows it), the overview to
// docs/console-overview.png, and the keys page with a paused key to
// docs/console-keys.png.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
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
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// chromium returns the path of a Chromium or Chrome on PATH. Without one
// the test is skipped on a developer's machine, but fails under CI=true:
// CI promises that the console was driven in a browser (.ci/run installs
// Debian's chromium), and a silent skip would break that promise unseen.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const missing = "no Chromium on PATH (chromium, chromium-browser, google-chrome)"
	if os.Getenv("CI") == "true" {
		t.Fatal(missing + ", and CI=true: the console's browser tests must run in CI (.ci/run installs chromium)")
	}
	t.Skip(missing)
	return ""
}

// consoleFixture fills e with what an incident looks like: dead letters of
// several categories and keys, and some pending work. It returns the IDs
// of the poison ones.
func consoleFixture(t *testing.T, e *ringwal.Engine) (poison []ringwal.ID) {
	t.Helper()
	ctx := context.Background()
	fail := func(m ringwal.Message, cause error) ringwal.ID {
		id, err := e.Enqueue(ctx, m)
		require.NoError(t, err)
		d := enginetest.Dequeue(t, e)
		require.Equal(t, id, d.ID)
		require.NoError(t, e.Nack(d.Lease, cause))
		return id
	}
	hdr := map[string]string{"content-type": "application/json", "x-request-id": "req-7f3a"}
	for i := 1; i <= 3; i++ {
		fail(ringwal.Message{Key: "api.example.com", Priority: ringwal.High, Headers: hdr,
			Payload: fmt.Appendf(nil, `{"order":%d,"total":"19.90"}`, 4100+i)},
			classify.Mark(fmt.Errorf("POST https://api.example.com/v1/orders: HTTP 422: order %d: currency missing", 4100+i), classify.Permanent))
	}
	for i := 1; i <= 2; i++ {
		poison = append(poison, fail(ringwal.Message{Key: "mail", Headers: hdr, Payload: fmt.Appendf(nil, `{"to":"user%d@example.com","template":"receipt"`, i)},
			classify.Mark(errors.New("handler panicked: unexpected end of JSON input\n\ngoroutine 41 [running]:\nmain.sendReceipt(...)\n\t/app/mail.go:88"), classify.Poison)))
	}
	fail(ringwal.Message{Key: "slack", Payload: []byte("\x00\x01binary"), MaxAttempts: 1},
		classify.Mark(errors.New("POST https://hooks.slack.com/services/T000: HTTP 503"), classify.Transient))
	fail(ringwal.Message{Key: "slack", Payload: []byte(`{"text":"deploy finished"}`), MaxAttempts: 1},
		classify.Mark(errors.New("POST https://hooks.slack.com/services/T000: dial tcp: i/o timeout"), classify.Timeout))
	for i := 0; i < 7; i++ {
		_, err := e.Enqueue(ctx, ringwal.Message{Key: "api.example.com", Priority: ringwal.Priority(i%3 - 1), Payload: []byte("later")})
		require.NoError(t, err)
	}
	return poison
}

// tooMany is a downstream's 429 with a Retry-After.
type tooMany struct{ after time.Duration }

func (e tooMany) Error() string             { return fmt.Sprintf("HTTP 429 (Retry-After %s)", e.after) }
func (e tooMany) StatusCode() int           { return http.StatusTooManyRequests }
func (e tooMany) RetryAfter() time.Duration { return e.after }

// keysFixture gives the keys page something to show: a key paused by a
// Retry-After with messages waiting, and a key out of tokens (its policy
// allows one an hour) with messages waiting for one. Neither delivers
// again during the test.
func keysFixture(t *testing.T, e *ringwal.Engine) {
	t.Helper()
	ctx := context.Background()
	for _, key := range []string{"discord:eng", "sms"} {
		for i := 0; i < 3; i++ {
			_, err := e.Enqueue(ctx, ringwal.Message{Key: key, Payload: fmt.Appendf(nil, `{"n":%d}`, i)})
			require.NoError(t, err)
		}
		d := enginetest.Dequeue(t, e)
		require.Equal(t, key, d.Message.Key)
		if key == "sms" {
			require.NoError(t, e.Ack(d.Lease))
			continue
		}
		require.NoError(t, e.Nack(d.Lease, tooMany{after: 10 * time.Minute}))
	}
}

func TestConsoleInBrowser(t *testing.T) {
	exe := chromium(t)
	start := time.Now()
	e := enginetest.Open(t, t.TempDir(), ringwal.Options{KeyPolicy: func(key string) ringwal.KeyPolicy {
		if key == "sms" {
			return ringwal.KeyPolicy{Rate: 1.0 / 3600, Burst: 1} // one an hour: the rest wait for a token
		}
		return ringwal.KeyPolicy{}
	}})
	keysFixture(t, e)
	poison := consoleFixture(t, e)
	opsKey := "slack:#ops/eu"
	for i := 1; i <= 4; i++ {
		_, err := e.Enqueue(context.Background(), ringwal.Message{Key: opsKey, Payload: fmt.Appendf(nil, `{"text":"deploy %d of 4 done"}`, i)})
		require.NoError(t, err)
	}
	const token = "t0ken-for-the-test"
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", admin.NewHandler(e, admin.Options{Token: token})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base := srv.URL + "/ops/"

	bctx, run := newChrome(t, exe, 50*time.Second, chromedp.WindowSize(1280, 860))
	textOf := pageText(t, bctx)

	// Sign in: the console asks for the token once.
	run("sign in",
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), token),
		chromedp.Submit(chromedp.CSS(`#token`)),
		chromedp.WaitVisible(chromedp.CSS(`#live`)))
	text := textOf(`#live`)
	assert.Contains(t, text, "dead letters")
	assert.Contains(t, text, "poison")

	// Filter the dead letters by category and key.
	run("filter",
		chromedp.Navigate(base+"dead-letters"),
		chromedp.WaitVisible(chromedp.CSS(`#filters`)),
		chromedp.Click(chromedp.CSS(`#filters input[value="poison"]`)),
		chromedp.SendKeys(chromedp.CSS(`#filters input[name="key"]`), "mail"),
		chromedp.Submit(chromedp.CSS(`#filters`)),
		// The value attribute (not the typed-in property) is the new page's.
		chromedp.WaitVisible(chromedp.CSS(`#filters input[name="key"][value="mail"]`)))
	text = textOf(`#dead-letters tbody`)
	assert.Equal(t, 2, strings.Count(text, "poison"), "the two poison letters: %s", text)
	// How close the store is to its bound (Options.MaxDeadLetters).
	bound := textOf(`#dead-bound`)
	assert.Regexp(t, `^\d+ of 1,000,000 dead letters$`, bound)
	assert.NotContains(t, text, "permanent")

	// Open one, review it with a note.
	target := poison[0]
	note := "JSON cut short by the producer; fixed in v2.3.1"
	run("open",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#dead-letters a[href="./dead-letters/%d"]`, target))),
		chromedp.WaitVisible(chromedp.CSS(`#note`)))
	assert.Contains(t, textOf(`#payload`), "user1@example.com")
	run("review",
		chromedp.SendKeys(chromedp.CSS(`#note`), note),
		chromedp.Click(chromedp.CSS(`#review`)),
		chromedp.WaitVisible(chromedp.CSS(`#note-text`)))
	assert.Equal(t, note, textOf(`#note-text`))
	ds, err := e.DeadLetters(dlq.Query{Key: "mail", Categories: []classify.Category{classify.Poison}, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, target, ds[0].ID)
	assert.True(t, ds[0].Reviewed, "reviewed before the redrive")
	assert.Equal(t, note, ds[0].Note)

	// Redrive it: it is pending again.
	run("redrive",
		chromedp.Click(chromedp.CSS(`#redrive`)),
		chromedp.WaitVisible(chromedp.CSS(`#state.pending`)))
	assert.Equal(t, "pending", textOf(`#state`))
	info, err := e.Get(target)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)

	// A POST from the signed-in page without the CSRF field is refused.
	other := poison[1]
	status, err := chromedp.Run(bctx, chromedp.Evaluate[int](fmt.Sprintf(
		`fetch("../dead-letters/%d/redrive", {method: "POST", body: new URLSearchParams({note: "x"})}).then(r => r.status)`, other),
		chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, status)
	// Without the token (no session cookie, no bearer header) it is refused
	// too, CSRF field or not.
	resp, err := http.PostForm(fmt.Sprintf("%sdead-letters/%d/redrive", base, other), url.Values{"csrf": {"anything"}})
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	info, err = e.Get(other)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Dead, info.State, "neither refused request redrove it")

	// End on the whole list (one more reviewed, for the picture), and keep
	// pictures of it and of the overview.
	slack, err := e.DeadLetters(dlq.Query{Key: "slack", Limit: 1})
	require.NoError(t, err)
	require.NoError(t, e.MarkReviewed(slack[0].ID, "Slack outage 21:04-21:09, see status page"))
	// Keys: pause one from the keys page (until resumed), check through
	// the Go API, keep a picture of the page with it paused, and resume it
	// from its row.
	opsRow := fmt.Sprintf(`#keys tr[data-key=%q]`, opsKey)
	run("pause a key",
		chromedp.Navigate(base+"keys"),
		chromedp.WaitVisible(chromedp.CSS(`#pause-key`)),
		chromedp.SendKeys(chromedp.CSS(`#pause-key`), opsKey),
		chromedp.Click(chromedp.CSS(`#pause-key-submit`)),
		chromedp.WaitVisible(chromedp.CSS(opsRow+` button.resume`)))
	assert.True(t, enginetest.KeyPaused(e, opsKey), "paused from the keys page")
	assert.Contains(t, textOf(opsRow), "until resumed")
	keysPNG, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	run("resume the key",
		chromedp.Click(chromedp.CSS(opsRow+` button.resume`)),
		// Resumed, the key has nothing left to show: its row goes.
		chromedp.WaitNotPresent(chromedp.CSS(opsRow+` button.resume`)))
	assert.Contains(t, textOf(`.flash`), "Resumed")
	assert.False(t, enginetest.KeyPaused(e, opsKey), "resumed from the keys page")

	// A key's live messages, from its link on the keys page: the
	// throttled key's, waiting for a token. Cancel one, after the
	// confirmation.
	smsRow := `#keys tr[data-key="sms"]`
	run("open the key's messages",
		chromedp.Navigate(base+"keys"),
		chromedp.WaitVisible(chromedp.CSS(smsRow+` a.key`)),
		chromedp.Click(chromedp.CSS(smsRow+` a.key`)),
		chromedp.WaitVisible(chromedp.CSS(`#messages`)))
	listed := textOf(`#messages tbody`)
	assert.Equal(t, 2, strings.Count(listed, "rate"), "two wait for a token: %s", listed)
	doomed, err := chromedp.Run(bctx, chromedp.Evaluate[int](`Number(document.querySelector("#messages tbody tr").dataset.id)`))
	require.NoError(t, err)
	run("cancel one",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#messages tr[data-id="%d"] button.cancel`, doomed))),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cancel`)),
		chromedp.Click(chromedp.CSS(`#confirm-cancel`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	assert.Contains(t, textOf(`.flash`), "Cancelled")
	assert.Equal(t, 1, strings.Count(textOf(`#messages tbody`), "rate"), "one left")
	_, err = e.Get(ringwal.ID(doomed))
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "cancelled through the console")

	run("overview", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#live`)))
	overview, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	run("list", chromedp.Navigate(base+"dead-letters"), chromedp.WaitVisible(chromedp.CSS(`#dead-letters`)))
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#dead-letters tbody tr").length`))
	require.NoError(t, err)
	assert.Equal(t, 6, rows, "six dead letters left")
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	if os.Getenv("RINGWAL_UPDATE_SCREENSHOT") != "" {
		out := filepath.Join("..", "..", "..", "docs", "console.png")
		require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
		require.NoError(t, os.WriteFile(out, png, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join("..", "..", "..", "docs", "console-overview.png"), overview, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join("..", "..", "..", "docs", "console-keys.png"), keysPNG, 0o644))
		t.Logf("wrote %s, console-overview.png and console-keys.png", out)
	}
	t.Logf("browser test took %s", time.Since(start).Round(time.Millisecond))
}

// TestConsoleSignInURLInBrowser: the sign-in URL that ringwal serve prints
// signs a browser in and leaves the token out of the address bar (and of
// the history's current entry); signing out revokes the session, so the
// pages ask for the token again.
func TestConsoleSignInURLInBrowser(t *testing.T) {
	exe := chromium(t)
	e := enginetest.Open(t, "", ringwal.Options{})
	consoleFixture(t, e)
	const token = "0123456789abcdef0123456789abcdef"
	hclock := clock.NewFake(time.Now()) // the handler's: it ends the wrong token's penalty
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{Token: token, Clock: hclock}))
	t.Cleanup(srv.Close)

	bctx, run := newChrome(t, exe, 40*time.Second)
	href := func() string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href`))
		require.NoError(t, err)
		return s
	}

	run("a wrong sign-in URL", chromedp.Navigate(srv.URL+"/dead-letters?token=wrong"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)))
	body, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`))
	require.NoError(t, err)
	assert.Contains(t, body, "Wrong token in the sign-in URL.")
	hclock.Advance(100 * time.Millisecond) // the wrong token's penalty

	run("the sign-in URL", chromedp.Navigate(srv.URL+"/dead-letters?category=poison&token="+token),
		chromedp.WaitVisible(chromedp.CSS(`#dead-letters`)))
	assert.Equal(t, srv.URL+"/dead-letters?category=poison", href(), "signed in, the token gone from the address")
	run("the overview", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#live`)))

	run("sign out", chromedp.Click(chromedp.CSS(`form.logout button`)), chromedp.WaitVisible(chromedp.CSS(`#token`)))
	run("signed out", chromedp.Navigate(srv.URL+"/dead-letters"), chromedp.WaitVisible(chromedp.CSS(`#token`)))
	assert.NotContains(t, href(), "token=")
}

// newChrome starts headless Chromium (exe) for the test, closed when it
// ends or after timeout, and returns its context and run, which does
// steps and fails the test with the page the browser is on when one fails.
func newChrome(t *testing.T, exe string, timeout time.Duration, extra ...chromedp.ExecAllocatorOption) (context.Context, func(what string, steps ...chromedp.Action[chromedp.Void])) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	actx, acancel := chromedp.NewExecAllocator(ctx, append(opts, extra...)...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			// Say where the browser is, for the failure message.
			body, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
			require.NoError(t, err, "%s; the page:\n%s", what, body)
		}
	}
	return bctx, run
}

// pageText returns textOf for bctx's browser: the text of what the CSS
// selector sel selects on the page it is on, failing the test when
// nothing does.
func pageText(t *testing.T, bctx context.Context) (textOf func(sel string) string) {
	return func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, "text of %s", sel)
		return s
	}
}
