package admin_test

// The console's schedules: the schedule list (names and specs escaped,
// next and last run, last outcome, counts), pause, resume, trigger and
// remove (after a confirmation) behind the CSRF token, and the same
// actions refused from another origin, with a forged token or without a
// session.

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// htmlSchedule is a valid schedule name that is HTML: the console must
// show it as text.
const htmlSchedule = `<b>"s"</b>&x`

func TestConsoleSchedules(t *testing.T) {
	e, _, _ := adminEngine(t, ringwal.Options{})
	b := newBrowser(t, e, admin.Options{})
	p := b.get("schedules").html(t, http.StatusOK, "no schedules")
	assert.Contains(t, p.body, `id="no-schedules"`)
	assert.Contains(t, p.body, `href="./schedules" aria-current="page">Schedules</a>`, "the nav link, current")

	schedulesFixture(t, e)
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: htmlSchedule, Spec: "@every 1h",
		Message: ringwal.Message{Queue: "q<i>"}}))
	p = b.get("schedules").html(t, http.StatusOK, "schedules")
	assert.NotContains(t, p.body, htmlSchedule, "a schedule name is escaped")
	assert.Contains(t, p.body, `data-schedule="`+html.EscapeString(htmlSchedule)+`"`)
	assert.NotContains(t, p.body, "q<i>", "a queue name is escaped")
	assert.Contains(t, strings.ToLower(p.body), strings.ToLower("messages?queue="+url.QueryEscape("q<i>")), "the queue links to its messages")
	assert.Contains(t, p.body, "<code>0 3 * * *</code>")
	assert.Contains(t, p.body, `messages?queue=_default`, "the default queue by its admin name")
	assert.Contains(t, p.body, `title="overlap skip · catch-up skip · jitter 5s"><span class="nowrap">no overlap</span> <span class="nowrap">jitter 5s</span></td>`)
	assert.Contains(t, p.body, "catch up each (≤ 3)")
	assert.Contains(t, p.body, "none yet")
	assert.Contains(t, p.body, "6 schedules, 1 paused")
	tok := p.csrf(t)

	// Pause; a form without the CSRF token, for an unknown schedule or
	// none, does nothing.
	b.post("schedules/pause", url.Values{"schedule": {"nightly"}}, nil).html(t, http.StatusForbidden, "no CSRF field")
	b.post("schedules/pause", url.Values{"csrf": {tok}, "schedule": {"typo"}}, nil).html(t, http.StatusNotFound, "unknown")
	b.post("schedules/pause", url.Values{"csrf": {tok}}, nil).html(t, http.StatusBadRequest, "no schedule")
	assert.False(t, enginetest.Schedule(t, e, "nightly").Paused)
	r := b.post("schedules/pause", url.Values{"csrf": {tok}, "schedule": {"nightly"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	assert.Equal(t, "../schedules?done=schedule-paused", r.header.Get("Location"))
	assert.True(t, enginetest.Schedule(t, e, "nightly").Paused)
	p = b.get("schedules?done=schedule-paused").html(t, http.StatusOK, "paused")
	assert.Contains(t, p.body, "Paused: the schedule")
	assert.Contains(t, p.body, `<tr data-schedule="nightly" class="paused">`)
	r = b.post("schedules/resume", url.Values{"csrf": {tok}, "schedule": {"nightly"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	assert.False(t, enginetest.Schedule(t, e, "nightly").Paused)

	// Trigger: the flash names the run, the row shows it as the outcome.
	r = b.post("schedules/trigger", url.Values{"csrf": {tok}, "schedule": {"nightly"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	id := enginetest.Schedule(t, e, "nightly").LastID
	require.NotZero(t, id)
	assert.Equal(t, "../schedules?done=schedule-triggered&run="+idString(id), r.header.Get("Location"))
	p = b.get("schedules?done=schedule-triggered&run="+idString(id)).html(t, http.StatusOK, "triggered")
	assert.Contains(t, p.body, "Triggered: run #"+idString(id)+" is enqueued")
	assert.Contains(t, p.body, `ran <a href="./dead-letters/`+idString(id)+`">#`+idString(id)+`</a>`)
	p = b.post("schedules/trigger", url.Values{"csrf": {tok}, "schedule": {"full"}}, nil).html(t, http.StatusServiceUnavailable, "a full queue")
	assert.Contains(t, p.body, "MaxMessages")
	b.post("schedules/trigger", url.Values{"csrf": {tok}, "schedule": {"once"}}, nil)
	b.post("schedules/trigger", url.Values{"csrf": {tok}, "schedule": {"once"}}, nil).html(t, http.StatusConflict, "a duplicate")
	b.get("schedules/trigger").html(t, http.StatusMethodNotAllowed, "a GET triggers nothing")

	// Remove: a confirmation first.
	p = b.post("schedules/remove", url.Values{"csrf": {tok}, "schedule": {htmlSchedule}}, nil).html(t, http.StatusOK, "confirm")
	assert.Contains(t, p.body, `id="confirm-remove"`)
	assert.NotContains(t, p.body, htmlSchedule)
	_, found := admin.FindSchedule(admin.NewScheduleViews(e.Schedules()), htmlSchedule)
	assert.True(t, found, "not removed before the confirmation")
	r = b.post("schedules/remove", url.Values{"csrf": {tok}, "schedule": {htmlSchedule}, "confirm": {"yes"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	assert.Equal(t, "../schedules?done=schedule-removed", r.header.Get("Location"))
	_, found = admin.FindSchedule(admin.NewScheduleViews(e.Schedules()), htmlSchedule)
	assert.False(t, found)
	b.post("schedules/remove", url.Values{"csrf": {tok}, "schedule": {htmlSchedule}, "confirm": {"yes"}}, nil).html(t, http.StatusNotFound, "removed twice")
	b.get("schedules/remove").html(t, http.StatusMethodNotAllowed, "a GET removes nothing")
}

// The schedule actions go through the console's and the API's defences:
// another origin, a forged or missing CSRF token, no session or token
// when one is set.
func TestScheduleActionsDefended(t *testing.T) {
	e, _, c := adminEngine(t, ringwal.Options{})
	schedulesFixture(t, e)
	b := newBrowser(t, e, admin.Options{})
	tok := b.get("schedules").html(t, http.StatusOK, "schedules").csrf(t)
	for _, action := range []string{"pause", "resume", "trigger", "remove"} {
		form := url.Values{"csrf": {tok}, "schedule": {"nightly"}, "confirm": {"yes"}}
		path := "schedules/" + action
		b.post(path, form, http.Header{"Origin": {"https://evil.example"}}).html(t, http.StatusForbidden, action+" cross-origin")
		b.post(path, form, http.Header{"Sec-Fetch-Site": {"cross-site"}}).html(t, http.StatusForbidden, action+" cross-site")
		form.Set("csrf", "forged")
		b.post(path, form, nil).html(t, http.StatusForbidden, action+" forged CSRF")
		c.header = http.Header{"Origin": {"https://evil.example"}}
		c.do(http.MethodPost, "/schedules/nightly/"+action, nil).expect(t, http.StatusForbidden, "API "+action+" cross-origin")
	}
	guarded := newBrowser(t, e, admin.Options{Token: "s3cret-s3cret"})
	guarded.get("schedules").html(t, http.StatusUnauthorized, "the sign-in page")
	guarded.post("schedules/remove", url.Values{"csrf": {tok}, "schedule": {"nightly"}, "confirm": {"yes"}}, nil).html(t, http.StatusUnauthorized, "no session")
	api := newAdminWith(t, e, admin.Options{Token: "s3cret-s3cret"})
	api.do(http.MethodPost, "/schedules/nightly/remove", nil).expect(t, http.StatusUnauthorized, "API without the token")

	in := enginetest.Schedule(t, e, "nightly")
	assert.False(t, in.Paused, "not paused")
	assert.Zero(t, in.Runs, "not triggered")
}
