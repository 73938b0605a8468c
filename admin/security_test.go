package admin_test

// Tests of the handler's defences: the bearer token, the CSRF check on
// POST, methods per endpoint, the body bound, and that every error is JSON.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/clock"
)

// endpoints lists every route with a valid request.
func endpoints(id ringwal.ID) []struct{ method, path, body string } {
	return []struct{ method, path, body string }{
		{"GET", "/stats", ""},
		{"GET", fmt.Sprintf("/messages/%d", id), ""},
		{"POST", fmt.Sprintf("/messages/%d/requeue", id), ""},
		{"GET", "/dead-letters", ""},
		{"POST", fmt.Sprintf("/dead-letters/%d/redrive", id), ""},
		{"POST", fmt.Sprintf("/dead-letters/%d/review", id), `{"note": "x"}`},
		{"POST", "/dead-letters/purge", `{"key": "nobody"}`},
		{"GET", "/keys", ""},
		{"POST", "/keys/" + admin.KeyPath("slack:#ops/eu") + "/pause", `{"until": "1h"}`},
		{"POST", "/keys/" + admin.KeyPath("slack:#ops/eu") + "/resume", ""},
		{"POST", "/pause", `{"until": "1h"}`},
		{"POST", "/resume", ""},
		{"POST", fmt.Sprintf("/messages/%d/cancel", id), ""},
		{"GET", "/messages?key=a&state=pending", ""},
		{"GET", "/queues", ""},
		{"GET", "/queues/" + admin.DefaultQueue, ""},
		{"POST", "/queues/" + admin.DefaultQueue + "/pause", `{"until": "1h"}`},
		{"POST", "/queues/" + admin.DefaultQueue + "/resume", ""},
		{"POST", "/queues/" + admin.QueuePath("a/b") + "/delete", ""},
		{"GET", "/schedules", ""},
		{"POST", "/schedules/" + admin.SchedulePath("a/b") + "/pause", ""},
		{"POST", "/schedules/nightly/resume", ""},
		{"POST", "/schedules/nightly/trigger", ""},
		{"POST", "/schedules/nightly/remove", ""},
		{"GET", "/messages?queue=_default", ""},
		{"GET", "/dead-letters?queue=_default", ""},
		{"GET", "/dead-letters/count?category=permanent", ""},
		{"POST", "/dead-letters/redrive?through=1000", ""},
		{"POST", "/dead-letters/review?key=a&through=1000", `{"note": "x"}`},
		{"GET", "/messages/count?state=pending", ""},
		{"POST", "/messages/cancel?through=1000", ""},
	}
}

func bodyOf(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func TestAdminTokenRequired(t *testing.T) {
	e, fake, _ := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	hclock := clock.NewFake(time.Now()) // the handler's: each wrong token's penalty is waited out
	c := newAdminWith(t, e, admin.Options{Token: "tok", Clock: hclock})
	for _, h := range []http.Header{
		nil,
		{"Authorization": {"Bearer wrong"}},
		{"Authorization": {"tok"}},
		{"Authorization": {"Basic dG9rOnRvaw=="}},
		{"Authorization": {"Bearer tokx"}},
	} {
		c.header = h
		for _, ep := range append(endpoints(ids[0]), struct{ method, path, body string }{"GET", "/nope", ""}) {
			r := c.do(ep.method, ep.path, bodyOf(ep.body)).expect(t, http.StatusUnauthorized, fmt.Sprint(ep, h))
			assert.Contains(t, r.header.Get("WWW-Authenticate"), "Bearer")
			hclock.Advance(2 * time.Second)
		}
	}
	require.Equal(t, 5, e.Stats().Dead, "nothing done without the token")

	c.header = http.Header{"Authorization": {"Bearer tok"}}
	c.do("GET", "/stats", nil).expect(t, http.StatusOK, "with the token")
	c.do("POST", fmt.Sprintf("/dead-letters/%d/redrive", ids[0]), nil).expect(t, http.StatusOK, "with the token")

	// No token configured: none asked for.
	open := newAdmin(t, e)
	open.do("GET", "/stats", nil).expect(t, http.StatusOK, "no token")
}

func TestAdminCrossOriginPostRefused(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	host := strings.TrimPrefix(c.srv.URL, "http://")
	for name, h := range map[string]http.Header{
		"foreign origin":                            {"Origin": {"https://evil.example"}},
		"same host, other port":                     {"Origin": {"http://" + strings.Split(host, ":")[0] + ":1"}},
		"null origin":                               {"Origin": {"null"}},
		"cross-site fetch, no origin":               {"Sec-Fetch-Site": {"cross-site"}},
		"foreign origin, same-origin fetch claimed": {"Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"same-origin"}},
	} {
		c.header = h
		for _, ep := range endpoints(ids[0]) {
			if ep.method != "POST" {
				c.do(ep.method, ep.path, nil).expect(t, http.StatusOK, name+": a read is no forgery")
				continue
			}
			r := c.do(ep.method, ep.path, bodyOf(ep.body)).expect(t, http.StatusForbidden, name+" "+ep.path)
			assert.Contains(t, r.errorText(), "cross-origin")
		}
	}
	require.Equal(t, 5, e.Stats().Dead, "nothing done cross-origin")

	for name, h := range map[string]http.Header{
		"same origin":               {"Origin": {c.srv.URL}},
		"same origin, upper case":   {"Origin": {strings.ToUpper(c.srv.URL)}},
		"same-origin fetch":         {"Sec-Fetch-Site": {"same-origin"}},
		"no origin (curl, clients)": nil,
	} {
		c.header = h
		c.do("POST", "/dead-letters/purge", `{"key": "nobody"}`).expect(t, http.StatusOK, name)
	}
}

// TestAdminMethods: read endpoints answer GET and HEAD only, mutating ones
// POST only; anything else is a JSON 405 with Allow.
func TestAdminMethods(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	for _, ep := range endpoints(ids[0]) {
		var wrong []string
		if ep.method == "GET" {
			wrong = []string{"POST", "PUT", "DELETE", "PATCH"}
			assert.Equal(t, http.StatusOK, c.do("HEAD", ep.path, nil).status, "HEAD %s", ep.path)
		} else {
			wrong = []string{"GET", "HEAD", "PUT", "DELETE", "PATCH"}
		}
		for _, m := range wrong {
			r := c.do(m, ep.path, bodyOf(ep.body))
			require.Equal(t, http.StatusMethodNotAllowed, r.status, "%s %s: %s", m, ep.path, r.raw)
			assert.Contains(t, r.header.Get("Allow"), ep.method, "%s %s", m, ep.path)
			if m != "HEAD" {
				r.expect(t, http.StatusMethodNotAllowed, m+" "+ep.path)
			}
		}
	}
	require.Equal(t, 5, e.Stats().Dead)
}

// TestAdminBodyBounded: every endpoint that reads a body stops at MaxBody.
func TestAdminBodyBounded(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	big := `{"note": "` + strings.Repeat("x", admin.MaxBody) + `"}`
	c.do("POST", fmt.Sprintf("/dead-letters/%d/review", ids[0]), big).expect(t, http.StatusRequestEntityTooLarge, "review")
	bigQ := `{"key": "` + strings.Repeat("k", admin.MaxBody) + `"}`
	c.do("POST", "/dead-letters/purge", bigQ).expect(t, http.StatusRequestEntityTooLarge, "purge")
	es, _ := c.do("GET", "/dead-letters?reviewed=true", nil).expect(t, http.StatusOK, "list").entries(t)
	assert.Empty(t, es, "the oversized review did nothing")
}

// TestAdminErrorsAreJSON: every error answer is a JSON object with an
// error text and no Go internals.
func TestAdminErrorsAreJSON(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	for _, rq := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/nope", "", http.StatusNotFound},
		{"GET", "/messages/x", "", http.StatusBadRequest},
		{"GET", "/messages/999999", "", http.StatusNotFound},
		{"GET", "/dead-letters?bogus=1", "", http.StatusBadRequest},
		{"POST", "/dead-letters/purge", "{", http.StatusBadRequest},
		{"POST", fmt.Sprintf("/messages/%d/requeue", ids[0]), "", http.StatusBadRequest},
		{"DELETE", "/stats", "", http.StatusMethodNotAllowed},
	} {
		r := c.do(rq.method, rq.path, bodyOf(rq.body)).expect(t, rq.status, rq.method+" "+rq.path)
		assert.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
		for _, leak := range []string{"goroutine", ".go:", "panic"} {
			assert.NotContains(t, string(r.raw), leak, rq.path)
		}
	}
}
