package admin_test

// Tests of the admin API (NewHandler) through httptest servers: every
// endpoint, under a prefix (http.StripPrefix) and at the root, with bad
// input, oversized bodies, unknown IDs and a closed engine.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// adminClient talks to the admin API at prefix (paths are relative to
// the API's /api/).
type adminClient struct {
	t      *testing.T
	srv    *httptest.Server
	prefix string
	header http.Header // sent with every request
}

// newAdmin serves e's admin API under /admin (through http.StripPrefix,
// as the package doc shows) and closes the server when the test ends.
func newAdmin(t *testing.T, e *ringwal.Engine) adminClient {
	return newAdminWith(t, e, admin.Options{})
}

func newAdminWith(t *testing.T, e *ringwal.Engine, o admin.Options) adminClient {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", admin.NewHandler(e, o)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return adminClient{t: t, srv: srv, prefix: "/admin/api"}
}

// adminEngine opens a memory engine on a fake clock with its admin API.
func adminEngine(t *testing.T, o ringwal.Options) (*ringwal.Engine, *clock.Fake, adminClient) {
	t.Helper()
	fake := clock.NewFake(time.Time{})
	o.Clock = fake
	e := enginetest.Open(t, "", o)
	return e, fake, newAdmin(t, e)
}

type adminReply struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends a request; body is nil (none), a string or []byte (sent as is)
// or anything else (sent as JSON). A JSON object answer is decoded.
func (c adminClient) do(method, path string, body any) adminReply {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = strings.NewReader(string(b))
	default:
		js, err := json.Marshal(b)
		require.NoError(c.t, err)
		r = strings.NewReader(string(js))
	}
	req, err := http.NewRequest(method, c.srv.URL+c.prefix+path, r)
	require.NoError(c.t, err)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	resp, err := c.srv.Client().Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	out := adminReply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 && raw[0] == '{' {
		require.NoError(c.t, json.Unmarshal(raw, &out.body), "%s %s: %s", method, path, raw)
	}
	return out
}

// expect checks the status and that the answer is JSON.
func (r adminReply) expect(t *testing.T, status int, what string) adminReply {
	t.Helper()
	require.Equal(t, status, r.status, "%s: %s", what, r.raw)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"), what)
	if status >= 400 {
		msg, _ := r.body["error"].(string)
		assert.NotEmpty(t, msg, "%s: a JSON error: %s", what, r.raw)
	}
	return r
}

func (r adminReply) errorText() string {
	s, _ := r.body["error"].(string)
	return s
}

// entries returns a /dead-letters answer's entries and next cursor.
func (r adminReply) entries(t *testing.T) ([]map[string]any, string) {
	t.Helper()
	var page struct {
		Entries []map[string]any `json:"entries"`
		Next    string           `json:"next"`
	}
	require.NoError(t, json.Unmarshal(r.raw, &page), "%s", r.raw)
	require.NotNil(t, page.Entries, "entries is never null: %s", r.raw)
	return page.Entries, page.Next
}

func entryIDs(es []map[string]any) []ringwal.ID {
	var ids []ringwal.ID
	for _, e := range es {
		ids = append(ids, ringwal.ID(e["id"].(float64)))
	}
	return ids
}

// deadLetters makes one dead letter per cause, one fake second apart, and
// returns their IDs in dead-letter order.
func makeDeadLetters(t *testing.T, e *ringwal.Engine, fake *clock.Fake, keys []string, causes []error) []ringwal.ID {
	t.Helper()
	var ids []ringwal.ID
	for i, cause := range causes {
		id, err := e.Enqueue(context.Background(), ringwal.Message{Key: keys[i], Payload: []byte(fmt.Sprintf("m%d", i))})
		require.NoError(t, err)
		d := enginetest.Dequeue(t, e)
		require.Equal(t, id, d.ID)
		require.NoError(t, e.Nack(d.Lease, cause))
		ids = append(ids, id)
		fake.Advance(time.Second)
	}
	return ids
}

var (
	errPoison    = classify.Mark(errors.New("handler panicked"), classify.Poison)
	errPermanent = classify.Mark(errors.New("bad request"), classify.Permanent)
)

// fiveDeadLetters: three Permanent under key "a", then two Poison under "b".
func fiveDeadLetters(t *testing.T, e *ringwal.Engine, fake *clock.Fake) []ringwal.ID {
	return makeDeadLetters(t, e, fake, []string{"a", "a", "a", "b", "b"},
		[]error{errPermanent, errPermanent, errPermanent, errPoison, errPoison})
}

func TestAdminStats(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	fiveDeadLetters(t, e, fake)
	_, err := e.Enqueue(context.Background(), ringwal.Message{Priority: ringwal.High})
	require.NoError(t, err)
	fake.Advance(1500 * time.Millisecond)

	r := c.do("GET", "/stats", nil).expect(t, http.StatusOK, "stats")
	b := r.body
	assert.Equal(t, 1.0, b["pending"])
	assert.Equal(t, 5.0, b["dead"])
	assert.Equal(t, 6.0, b["enqueued"])
	assert.Equal(t, 5.0, b["dequeued"])
	assert.Equal(t, 5.0, b["nacked"])
	assert.Equal(t, 5.0, b["dead_lettered"])
	assert.Equal(t, 1.5, b["oldest_pending_seconds"], "durations are float seconds")
	assert.Equal(t, map[string]any{"permanent": 3.0, "poison": 2.0}, b["dead_lettered_by_category"])
	byP := b["by_priority"].(map[string]any)
	assert.Equal(t, 1.0, byP["pending"].(map[string]any)["high"])
	assert.Len(t, byP, 4, "pending, delayed, leased, held")
	dead := b["dead_by_category"].(map[string]any)
	assert.Equal(t, 3.0, dead["permanent"])
	assert.Equal(t, 2.0, dead["poison"])
	for _, k := range []string{"wait", "handling"} {
		l := b[k].(map[string]any)
		for _, f := range []string{"count", "mean_seconds", "p50_seconds", "p95_seconds", "p99_seconds"} {
			assert.Contains(t, l, f, k)
		}
	}
	assert.Contains(t, b["tier_utilization"], "critical")
	assert.Len(t, b["breakers"], 2, "keys a and b")
	assert.NotContains(t, b, "wal", "memory only")
	assert.NotContains(t, b, "recovery", "memory only")
	assert.Equal(t, "no-store", r.header.Get("Cache-Control"))

	// A disk engine adds its log and its recovery.
	d := enginetest.Open(t, t.TempDir(), ringwal.Options{})
	_, err = d.Enqueue(context.Background(), ringwal.Message{})
	require.NoError(t, err)
	dc := newAdmin(t, d)
	// The writer counts a batch just after it releases its waiters.
	require.Eventually(t, func() bool {
		b = dc.do("GET", "/stats", nil).expect(t, http.StatusOK, "disk stats").body
		return b["wal"].(map[string]any)["records"] != 0.0
	}, 5*time.Second, time.Millisecond)
	assert.Contains(t, b["recovery"], "duration_seconds")

	// HEAD works as GET does.
	assert.Equal(t, http.StatusOK, c.do("HEAD", "/stats", nil).status)
}

func TestAdminGetMessage(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	deadline := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	id, err := e.Enqueue(context.Background(), ringwal.Message{
		Key: "api", Priority: ringwal.High, Payload: []byte("hello"), Headers: map[string]string{"h": "v"},
		Delay: 2 * time.Second, TTL: time.Minute, Deadline: deadline, MaxAttempts: 4, DedupID: "dd",
	})
	require.NoError(t, err)

	b := c.do("GET", fmt.Sprintf("/messages/%d", id), nil).expect(t, http.StatusOK, "get").body
	assert.Equal(t, float64(id), b["id"])
	assert.Equal(t, "delayed", b["state"])
	assert.Equal(t, 0.0, b["attempts"])
	assert.NotEmpty(t, b["enqueued_at"])
	next, err := time.Parse(time.RFC3339Nano, b["next_at"].(string))
	require.NoError(t, err)
	assert.Equal(t, fake.Now().Add(2*time.Second), next)
	m := b["message"].(map[string]any)
	assert.Equal(t, "hello", m["payload"], "a UTF-8 payload is text")
	assert.Equal(t, "text", m["payload_encoding"])
	assert.Equal(t, "high", m["priority"])
	assert.Equal(t, "api", m["key"])
	assert.Equal(t, "dd", m["dedup_id"])
	assert.Equal(t, 2.0, m["delay_seconds"])
	assert.Equal(t, 60.0, m["ttl_seconds"])
	assert.Equal(t, 4.0, m["max_attempts"])
	assert.Equal(t, deadline.Format(time.RFC3339), m["deadline"])
	assert.Equal(t, map[string]any{"h": "v"}, m["headers"])
	assert.NotContains(t, b, "last_error")
	assert.NotContains(t, b, "dead_letter")

	// A payload that is not UTF-8 is base64, and says so.
	bin, err := e.Enqueue(context.Background(), ringwal.Message{Payload: []byte{0xff, 0x00, 'x'}, Delay: time.Hour})
	require.NoError(t, err)
	m = c.do("GET", fmt.Sprintf("/messages/%d", bin), nil).expect(t, http.StatusOK, "binary").body["message"].(map[string]any)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 'x'}), m["payload"])
	assert.Equal(t, "base64", m["payload_encoding"])

	// A dead message carries its dead letter.
	dead := makeDeadLetters(t, e, fake, []string{""}, []error{errPoison})[0]
	b = c.do("GET", fmt.Sprintf("/messages/%d", dead), nil).expect(t, http.StatusOK, "get dead").body
	assert.Equal(t, "dead", b["state"])
	assert.Equal(t, "handler panicked", b["last_error"])
	assert.Equal(t, "poison", b["last_category"])
	dl := b["dead_letter"].(map[string]any)
	assert.Equal(t, "poison", dl["category"])
	assert.Equal(t, false, dl["reviewed"])
	require.Len(t, dl["failures"], 1)
	assert.Equal(t, "handler panicked", dl["failures"].([]any)[0].(map[string]any)["error"])

	c.do("GET", "/messages/999999", nil).expect(t, http.StatusNotFound, "unknown ID")
	c.do("GET", "/messages/0", nil).expect(t, http.StatusNotFound, "ID 0")
	for _, bad := range []string{"abc", "-1", "1.5", "0x10", "18446744073709551616"} {
		r := c.do("GET", "/messages/"+bad, nil).expect(t, http.StatusBadRequest, "bad ID "+bad)
		assert.Contains(t, r.errorText(), "not a decimal number")
	}
}

func TestAdminListDeadLetters(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	start := fake.Now()
	ids := fiveDeadLetters(t, e, fake)

	all, next := c.do("GET", "/dead-letters", nil).expect(t, http.StatusOK, "all").entries(t)
	assert.Equal(t, ids, entryIDs(all))
	assert.Empty(t, next, "one page")
	first := all[0]
	assert.Equal(t, "permanent", first["category"])
	assert.Equal(t, "a", first["key"])
	assert.Equal(t, "m0", first["message"].(map[string]any)["payload"])
	assert.Equal(t, "permanent", first["category"])
	assert.Equal(t, "bad request", first["last_error"])
	assert.Equal(t, start.Format(time.RFC3339), first["dead_at"])
	assert.Equal(t, 1.0, first["attempts"])

	// Cursor paging: 2 + 2 + 1, no empty last page.
	var paged []ringwal.ID
	after := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		q := url.Values{"limit": {"2"}}
		if after != "" {
			q.Set("after", after)
		}
		es, next := c.do("GET", "/dead-letters?"+q.Encode(), nil).expect(t, http.StatusOK, "page").entries(t)
		paged = append(paged, entryIDs(es)...)
		if next == "" {
			assert.Len(t, es, 1, "the last page")
			break
		}
		assert.Len(t, es, 2)
		after = next
	}
	assert.Equal(t, ids, paged)

	list := func(q url.Values) []ringwal.ID {
		t.Helper()
		es, _ := c.do("GET", "/dead-letters?"+q.Encode(), nil).expect(t, http.StatusOK, q.Encode()).entries(t)
		return entryIDs(es)
	}
	assert.Equal(t, ids[3:], list(url.Values{"category": {"poison"}}))
	assert.Equal(t, ids[:3], list(url.Values{"category": {"PERMANENT"}}), "ParseCategory ignores case")
	assert.Equal(t, ids, list(url.Values{"category": {"poison", "permanent"}}), "repeatable")
	assert.Equal(t, ids, list(url.Values{"category": {"poison,permanent"}}), "comma-separated")
	assert.Empty(t, list(url.Values{"category": {"rate-limited"}}))
	assert.Equal(t, ids[:3], list(url.Values{"key": {"a"}}))
	assert.Equal(t, ids[3:], list(url.Values{"key": {"b"}, "category": {"poison"}}))
	at := func(i int) string { return start.Add(time.Duration(i) * time.Second).Format(time.RFC3339) }
	assert.Equal(t, ids[2:], list(url.Values{"since": {at(2)}}))
	assert.Equal(t, ids[:2], list(url.Values{"until": {at(2)}}), "until is exclusive")
	assert.Equal(t, ids[1:3], list(url.Values{"since": {at(1)}, "until": {at(3)}}))
	offset := start.Add(2 * time.Second).In(time.FixedZone("x", 3600)).Format(time.RFC3339)
	assert.Equal(t, ids[2:], list(url.Values{"since": {offset}}), "a zone offset")
	assert.Empty(t, list(url.Values{"reviewed": {"true"}}))
	assert.Equal(t, ids, list(url.Values{"reviewed": {"false"}}))

	bad := map[string]string{
		"category=bogus":                     "bogus",
		"since=yesterday":                    "RFC 3339",
		"until=2026-01-01":                   "RFC 3339",
		"reviewed=maybe":                     "true or false",
		"limit=0":                            "limit",
		"limit=-1":                           "limit",
		"limit=abc":                          "limit",
		"limit=1001":                         "limit",
		"after=xyz":                          "cursor",
		"after=999999":                       "",
		"foo=1":                              "unknown query parameter",
		"key=a&key=b":                        "given 2 times",
		"since=" + at(3) + "&until=" + at(1): "",
	}
	for q, want := range bad {
		r := c.do("GET", "/dead-letters?"+strings.ReplaceAll(q, "+", "%2B"), nil).expect(t, http.StatusBadRequest, q)
		assert.Contains(t, r.errorText(), want, q)
	}
}

func TestAdminReview(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	path := fmt.Sprintf("/dead-letters/%d/review", ids[0])

	b := c.do("POST", path, map[string]string{"note": "looked at it"}).expect(t, http.StatusOK, "review").body
	assert.Equal(t, map[string]any{"id": float64(ids[0]), "status": "reviewed", "note": "looked at it"}, b)
	es, _ := c.do("GET", "/dead-letters?reviewed=true", nil).expect(t, http.StatusOK, "reviewed").entries(t)
	require.Len(t, es, 1)
	assert.Equal(t, "looked at it", es[0]["note"])
	assert.Equal(t, true, es[0]["reviewed"])
	assert.NotEmpty(t, es[0]["reviewed_at"])
	es, _ = c.do("GET", "/dead-letters?reviewed=false", nil).expect(t, http.StatusOK, "unreviewed").entries(t)
	assert.Len(t, es, 4)

	// No body: no note.
	c.do("POST", fmt.Sprintf("/dead-letters/%d/review", ids[1]), nil).expect(t, http.StatusOK, "no body")

	for name, body := range map[string]string{
		"malformed":     `{"note": `,
		"not an object": `"note"`,
		"wrong type":    `{"note": 5}`,
		"unknown field": `{"note": "x", "nope": 1}`,
		"two values":    `{"note": "x"} {"note": "y"}`,
		"trailing junk": `{"note": "x"} ]`,
	} {
		r := c.do("POST", path, body).expect(t, http.StatusBadRequest, name)
		assert.Contains(t, r.errorText(), "malformed JSON body", name)
	}
	big := `{"note": "` + strings.Repeat("x", admin.MaxBody) + `"}`
	r := c.do("POST", path, big).expect(t, http.StatusRequestEntityTooLarge, "oversized")
	assert.Contains(t, r.errorText(), "larger than")

	c.do("POST", "/dead-letters/999999/review", `{"note": "x"}`).expect(t, http.StatusNotFound, "unknown ID")
	c.do("POST", "/dead-letters/x/review", `{"note": "x"}`).expect(t, http.StatusBadRequest, "bad ID")
}

func TestAdminRedrive(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)

	b := c.do("POST", fmt.Sprintf("/dead-letters/%d/redrive", ids[3]), nil).expect(t, http.StatusOK, "redrive").body
	assert.Equal(t, map[string]any{"id": float64(ids[3]), "status": "redriven"}, b)
	info, err := e.Get(ids[3])
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
	assert.Equal(t, 0, info.Attempts, "attempts reset")
	es, _ := c.do("GET", "/dead-letters", nil).expect(t, http.StatusOK, "list").entries(t)
	assert.NotContains(t, entryIDs(es), ids[3])

	c.do("POST", fmt.Sprintf("/dead-letters/%d/redrive", ids[3]), nil).expect(t, http.StatusNotFound, "no longer dead")
	c.do("POST", "/dead-letters/999999/redrive", nil).expect(t, http.StatusNotFound, "unknown ID")
	c.do("POST", "/dead-letters/-3/redrive", nil).expect(t, http.StatusBadRequest, "bad ID")
	assert.Equal(t, uint64(1), e.Stats().Redriven)
}

func TestAdminRequeue(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	id, err := e.Enqueue(context.Background(), ringwal.Message{Delay: time.Hour})
	require.NoError(t, err)

	b := c.do("POST", fmt.Sprintf("/messages/%d/requeue", id), nil).expect(t, http.StatusOK, "requeue").body
	assert.Equal(t, map[string]any{"id": float64(id), "status": "requeued"}, b)
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)

	// A leased message: its lease goes stale.
	d := enginetest.Dequeue(t, e)
	c.do("POST", fmt.Sprintf("/messages/%d/requeue", id), nil).expect(t, http.StatusOK, "requeue leased")
	assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease)
	d = enginetest.Dequeue(t, e)
	require.Equal(t, id, d.ID)
	require.NoError(t, e.Ack(d.Lease))

	dead := makeDeadLetters(t, e, fake, []string{""}, []error{errPoison})[0]
	r := c.do("POST", fmt.Sprintf("/messages/%d/requeue", dead), nil).expect(t, http.StatusBadRequest, "dead letter")
	assert.Contains(t, r.errorText(), "Redrive")
	c.do("POST", "/messages/999999/requeue", nil).expect(t, http.StatusNotFound, "unknown ID")
	c.do("POST", "/messages/one/requeue", nil).expect(t, http.StatusBadRequest, "bad ID")
}

func TestAdminPurge(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	start := fake.Now()
	ids := fiveDeadLetters(t, e, fake)

	for name, body := range map[string]any{
		"no body":        nil,
		"empty query":    `{}`,
		"malformed":      `{"category": [`,
		"unknown field":  `{"categories": ["poison"]}`,
		"bad category":   `{"category": ["bogus"]}`,
		"bad since":      `{"since": "last week"}`,
		"negative limit": `{"key": "a", "limit": -1}`,
		"bad cursor":     `{"key": "a", "after": "x"}`,
		"since > until":  fmt.Sprintf(`{"since": %q, "until": %q}`, start.Add(time.Hour).Format(time.RFC3339), start.Format(time.RFC3339)),
	} {
		c.do("POST", "/dead-letters/purge", body).expect(t, http.StatusBadRequest, name)
	}
	big := `{"key": "` + strings.Repeat("k", 2*admin.MaxBody) + `"}`
	c.do("POST", "/dead-letters/purge", big).expect(t, http.StatusRequestEntityTooLarge, "oversized")
	require.Equal(t, 5, e.Stats().Dead, "nothing purged by bad requests")

	b := c.do("POST", "/dead-letters/purge", map[string]any{"category": []string{"poison"}}).expect(t, http.StatusOK, "poison").body
	assert.Equal(t, map[string]any{"purged": 2.0}, b)
	// A single category as a string; a time window; a cursor as a string.
	b = c.do("POST", "/dead-letters/purge", map[string]any{"category": "permanent",
		"since": start.Add(time.Second).Format(time.RFC3339), "after": fmt.Sprint(ids[1])}).expect(t, http.StatusOK, "window").body
	assert.Equal(t, 1.0, b["purged"])
	b = c.do("POST", "/dead-letters/purge", map[string]any{"key": "a", "reviewed": true}).expect(t, http.StatusOK, "none reviewed").body
	assert.Equal(t, 0.0, b["purged"])
	b = c.do("POST", "/dead-letters/purge", map[string]any{"all": true}).expect(t, http.StatusOK, "all").body
	assert.Equal(t, 2.0, b["purged"])
	assert.Equal(t, 0, e.Stats().Dead)
	_, err := e.Get(ids[0])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
}

// TestAdminClosed: every endpoint answers 503 once the engine is closed.
func TestAdminClosed(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	require.NoError(t, e.Close())
	for _, rq := range []struct{ method, path, body string }{
		{"GET", "/stats", ""},
		{"GET", fmt.Sprintf("/messages/%d", ids[0]), ""},
		{"POST", fmt.Sprintf("/messages/%d/requeue", ids[0]), ""},
		{"GET", "/dead-letters", ""},
		{"GET", "/dead-letters?category=poison&limit=1", ""},
		{"POST", fmt.Sprintf("/dead-letters/%d/redrive", ids[0]), ""},
		{"POST", fmt.Sprintf("/dead-letters/%d/review", ids[0]), `{"note": "x"}`},
		{"POST", "/dead-letters/purge", `{"all": true}`},
	} {
		var body any
		if rq.body != "" {
			body = rq.body
		}
		r := c.do(rq.method, rq.path, body).expect(t, http.StatusServiceUnavailable, rq.method+" "+rq.path)
		assert.Contains(t, r.errorText(), "closed")
	}
}

// TestAdminRouting: unknown paths and wrong methods get JSON 404 and 405;
// the handler works at the root of a server too.
func TestAdminRouting(t *testing.T) {
	e, _, c := adminEngine(t, ringwal.Options{})
	c.do("GET", "/nope", nil).expect(t, http.StatusNotFound, "unknown path")
	c.do("GET", "/messages/1/extra", nil).expect(t, http.StatusNotFound, "too deep")
	r := c.do("DELETE", "/stats", nil).expect(t, http.StatusMethodNotAllowed, "DELETE /stats")
	assert.Contains(t, r.header.Get("Allow"), "GET")
	r = c.do("GET", "/dead-letters/purge", nil).expect(t, http.StatusMethodNotAllowed, "GET purge")
	assert.Equal(t, "POST", r.header.Get("Allow"))
	c.do("POST", "/stats", `{}`).expect(t, http.StatusMethodNotAllowed, "POST /stats")

	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{}))
	t.Cleanup(srv.Close)
	root := adminClient{t: t, srv: srv}
	root.do("GET", "/api/stats", nil).expect(t, http.StatusOK, "at the root")
	r = root.do("GET", "/stats", nil)
	assert.Equal(t, http.StatusNotFound, r.status, "the API is under /api/")
	assert.Contains(t, r.header.Get("Content-Type"), "text/html", "outside /api/ is the console")
	r = root.do("GET", "/", nil)
	assert.Equal(t, http.StatusOK, r.status, "the console is at the root")
	assert.Contains(t, r.header.Get("Content-Type"), "text/html")
}
