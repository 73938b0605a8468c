package admin_test

// Tests of the key controls' JSON API over a real memory engine: keys,
// pauses of a key (one with '/', ':' and '#' in it) and of all delivery,
// cancel, and paging through a key's live messages.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// odd is a key that needs escaping in a URL path.
const odd = "slack:#ops/eu"

func enqueueN(t *testing.T, e *ringwal.Engine, key string, n int) []ringwal.ID {
	t.Helper()
	var ids []ringwal.ID
	for i := 0; i < n; i++ {
		id, err := e.Enqueue(context.Background(), ringwal.Message{Key: key, Payload: fmt.Appendf(nil, "%s-%d", key, i)})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

// keyOf finds key in a GET /api/keys answer.
func keyOf(t *testing.T, c adminClient, key string) map[string]any {
	t.Helper()
	var keys []map[string]any
	r := c.do("GET", "/keys", nil).expect(t, http.StatusOK, "keys")
	require.NoError(t, jsonUnmarshal(r.raw, &keys), "%s", r.raw)
	for _, k := range keys {
		if k["key"] == key {
			return k
		}
	}
	return nil
}

func TestAdminKeysPauseResume(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	c := newAdmin(t, e)
	// A delivered message gives key "b" a breaker.
	enqueueN(t, e, "b", 1)
	d := enginetest.Dequeue(t, e)
	require.NoError(t, e.Ack(d.Lease))
	enqueueN(t, e, odd, 3)
	b := keyOf(t, c, "b")
	require.NotNil(t, b, "a key with a breaker is listed")
	assert.Equal(t, "closed", b["breaker"])
	assert.Equal(t, false, b["paused"])
	assert.Nil(t, b["paused_until"])

	path := "/keys/" + admin.KeyPath(odd)
	assert.Equal(t, "slack:%23ops%2Feu", admin.KeyPath(odd))
	r := c.do("POST", path+"/pause", nil).expect(t, http.StatusOK, "pause until resumed")
	assert.Equal(t, odd, r.body["key"])
	assert.Equal(t, "paused", r.body["status"])
	assert.Equal(t, true, r.body["paused"])
	assert.Nil(t, r.body["paused_until"], "until resumed")
	k := keyOf(t, c, odd)
	require.NotNil(t, k, "the paused key is listed under its own name")
	assert.Equal(t, true, k["paused"])
	for _, st := range e.Stats().Keys {
		if st.Key == odd {
			assert.True(t, st.Paused, "the engine has it paused")
		}
	}
	_, ok := e.TryDequeue()
	assert.False(t, ok, "nothing of the paused key is delivered")

	// Its messages say why they wait.
	page := c.do("GET", "/messages?key="+url.QueryEscape(odd), nil).expect(t, http.StatusOK, "messages")
	es, next := page.entries(t)
	require.Len(t, es, 3, "three of %s", odd)
	assert.Empty(t, next)
	for _, en := range es {
		assert.Equal(t, "paused", en["waiting"])
		assert.Equal(t, odd, en["message"].(map[string]any)["key"])
	}
	s := c.do("GET", "/stats", nil).expect(t, http.StatusOK, "stats").body
	assert.Contains(t, s["waiting_by_reason"], "paused")
	assert.Len(t, s["keys"], 1, "stats list the paused key")

	r = c.do("POST", path+"/resume", nil).expect(t, http.StatusOK, "resume")
	assert.Equal(t, "resumed", r.body["status"])
	assert.Equal(t, false, r.body["paused"])
	d = enginetest.Dequeue(t, e)
	assert.Equal(t, odd, d.Message.Key, "delivered again")

	// A timed pause: a duration from now, or an RFC 3339 time.
	r = c.do("POST", path+"/pause", `{"until": "1h"}`).expect(t, http.StatusOK, "pause 1h")
	until, err := time.Parse(time.RFC3339, r.body["paused_until"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(time.Hour), until, time.Minute)
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	r = c.do("POST", path+"/pause", map[string]string{"until": at.Format(time.RFC3339)}).expect(t, http.StatusOK, "pause until")
	assert.Equal(t, at.Format(time.RFC3339), r.body["paused_until"])

	// Bad input is a JSON 400, and changes nothing.
	for _, body := range []string{`{"until": "yesterday"}`, `{"until": "-1h"}`, `{"until": "0s"}`,
		`{"until": "2001-01-01T00:00:00Z"}`, `{"until": 5}`, `{"for": "1h"}`, `{`} {
		c.do("POST", path+"/pause", body).expect(t, http.StatusBadRequest, body)
	}
	assert.Equal(t, at.Format(time.RFC3339), keyOf(t, c, odd)["paused_until"])
	c.do("POST", "/keys/"+admin.KeyPath(".")+"/resume", nil).expect(t, http.StatusOK, "a key named .")
}

func TestAdminPauseAllDelivery(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	c := newAdmin(t, e)
	enqueueN(t, e, "a", 2)
	r := c.do("POST", "/pause", nil).expect(t, http.StatusOK, "pause all")
	assert.Equal(t, "paused", r.body["status"])
	assert.NotContains(t, r.body, "key")
	assert.True(t, e.Stats().DeliveryPaused)
	assert.Equal(t, true, c.do("GET", "/stats", nil).body["delivery_paused"])
	_, ok := e.TryDequeue()
	assert.False(t, ok)
	_, err := e.TryEnqueue(ringwal.Message{Key: "a"})
	assert.NoError(t, err, "enqueue continues")
	c.do("POST", "/pause", `{"until": "nope"}`).expect(t, http.StatusBadRequest, "bad until")

	r = c.do("POST", "/resume", nil).expect(t, http.StatusOK, "resume all")
	assert.Equal(t, "resumed", r.body["status"])
	assert.Equal(t, false, r.body["paused"])
	assert.False(t, e.Stats().DeliveryPaused)
	enginetest.Dequeue(t, e)

	r = c.do("POST", "/pause", `{"until": "30m"}`).expect(t, http.StatusOK, "pause 30m")
	assert.NotNil(t, r.body["paused_until"])
	assert.True(t, e.Stats().DeliveryPaused)
}

func TestAdminCancel(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	c := newAdmin(t, e)
	ids := enqueueN(t, e, "a", 2)
	r := c.do("POST", fmt.Sprintf("/messages/%d/cancel", ids[0]), nil).expect(t, http.StatusOK, "cancel")
	assert.Equal(t, "cancelled", r.body["status"])
	assert.Equal(t, float64(ids[0]), r.body["id"])
	_, err := e.Get(ids[0])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	assert.Equal(t, 1.0, c.do("GET", "/stats", nil).body["cancelled"])

	c.do("POST", fmt.Sprintf("/messages/%d/cancel", ids[0]), nil).expect(t, http.StatusNotFound, "cancelled already")
	c.do("POST", "/messages/999999/cancel", nil).expect(t, http.StatusNotFound, "unknown")
	c.do("POST", "/messages/x/cancel", nil).expect(t, http.StatusBadRequest, "not an ID")
	c.do("GET", fmt.Sprintf("/messages/%d/cancel", ids[1]), nil).expect(t, http.StatusMethodNotAllowed, "GET")

	// A leased message: its lease ends.
	d := enginetest.Dequeue(t, e)
	c.do("POST", fmt.Sprintf("/messages/%d/cancel", d.ID), nil).expect(t, http.StatusOK, "cancel leased")
	assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease)
}

func TestAdminMessages(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	c := newAdmin(t, e)
	ids := enqueueN(t, e, odd, 5)
	enqueueN(t, e, "other", 3)
	delayed, err := e.Enqueue(context.Background(), ringwal.Message{Key: odd, Delay: time.Hour})
	require.NoError(t, err)

	// Page through the key's pending messages, two at a time.
	var got []ringwal.ID
	after := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		q := url.Values{"key": {odd}, "state": {"pending"}, "limit": {"2"}}
		if after != "" {
			q.Set("after", after)
		}
		es, next := c.do("GET", "/messages?"+q.Encode(), nil).expect(t, http.StatusOK, "page").entries(t)
		assert.LessOrEqual(t, len(es), 2)
		got = append(got, entryIDs(es)...)
		if next == "" {
			break
		}
		after = next
	}
	assert.Equal(t, ids, got, "every pending message of the key, once, in order")

	es, _ := c.do("GET", "/messages?state=delayed", nil).expect(t, http.StatusOK, "delayed").entries(t)
	assert.Equal(t, []ringwal.ID{delayed}, entryIDs(es))
	es, _ = c.do("GET", "/messages?state=pending,delayed&key=other", nil).expect(t, http.StatusOK, "other").entries(t)
	assert.Len(t, es, 3)
	es, _ = c.do("GET", "/messages", nil).expect(t, http.StatusOK, "all").entries(t)
	assert.Len(t, es, 9)
	es, _ = c.do("GET", "/messages?key=nobody", nil).expect(t, http.StatusOK, "none").entries(t)
	assert.Empty(t, es)

	// A cursor whose message left meanwhile: the page goes on above it.
	require.NoError(t, e.Cancel(ids[1]))
	es, _ = c.do("GET", fmt.Sprintf("/messages?key=%s&state=pending&after=%d&limit=2", url.QueryEscape(odd), ids[1]), nil).
		expect(t, http.StatusOK, "after a gone ID").entries(t)
	assert.Equal(t, ids[2:4], entryIDs(es))

	for _, q := range []string{"state=dead", "state=waiting", "limit=0", "limit=1001", "limit=x", "after=x",
		"bogus=1", "key=a&key=b"} {
		r := c.do("GET", "/messages?"+q, nil).expect(t, http.StatusBadRequest, q)
		assert.NotEmpty(t, r.errorText())
	}
}

func TestAdminKeysClosed(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	c := newAdmin(t, e)
	require.NoError(t, e.Close())
	c.do("GET", "/keys", nil).expect(t, http.StatusServiceUnavailable, "keys")
	c.do("GET", "/messages", nil).expect(t, http.StatusServiceUnavailable, "messages")
	c.do("POST", "/keys/a/pause", nil).expect(t, http.StatusServiceUnavailable, "pause")
	c.do("POST", "/pause", nil).expect(t, http.StatusServiceUnavailable, "pause all")
	c.do("POST", "/messages/1/cancel", nil).expect(t, http.StatusServiceUnavailable, "cancel")
}

func TestAdminStatsWAL(t *testing.T) {
	e := enginetest.Open(t, t.TempDir(), ringwal.Options{})
	c := newAdmin(t, e)
	enqueueN(t, e, "a", 3)
	require.NoError(t, e.Checkpoint())
	enqueueN(t, e, "a", 1)
	var w map[string]any
	require.Eventually(t, func() bool {
		w = c.do("GET", "/stats", nil).expect(t, http.StatusOK, "stats").body["wal"].(map[string]any)
		return w["since_checkpoint_bytes"].(float64) > 0
	}, 5*time.Second, time.Millisecond)
	assert.Greater(t, w["disk_bytes"].(float64), 0.0)
	assert.GreaterOrEqual(t, w["segments"].(float64), 1.0)
	_, err := time.Parse(time.RFC3339, w["last_checkpoint"].(string))
	assert.NoError(t, err)
	assert.NotContains(t, w, "failed", "the log works")
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// timeIn is d from now; 0 is the zero time (until resumed).
func timeIn(d time.Duration) time.Time {
	if d == 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// TestAdminPauseCountsFromTheEngineClock: with Options.Clock, a pause
// "for 1h" ends an hour after the engine's time, not the wall clock's,
// and the engine delivers again once its clock passes it.
func TestAdminPauseCountsFromTheEngineClock(t *testing.T) {
	fake := clock.NewFake(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	e := enginetest.Open(t, "", ringwal.Options{Clock: fake})
	c := newAdminWith(t, e, admin.Options{Clock: fake})
	enqueueN(t, e, "k", 1)

	r := c.do("POST", "/keys/k/pause", `{"until": "1h"}`).expect(t, http.StatusOK, "pause 1h")
	assert.Equal(t, fake.Now().Add(time.Hour).Format(time.RFC3339), r.body["paused_until"])
	_, ok := e.TryDequeue()
	assert.False(t, ok, "paused")

	fake.Advance(time.Hour + time.Second)
	d := enginetest.Dequeue(t, e)
	assert.Equal(t, "k", d.Message.Key, "delivered once the engine's clock passed the pause")
}
