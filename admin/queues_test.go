package admin_test

// The admin API of queues: the list with counts, one queue, pause, resume
// and delete (refused with the counts while a queue holds messages), the
// default queue under its admin name, and the queue filter of the message
// and dead-letter listings and of purge.

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// odd queue names: a '/' and a '#' travel escaped in one path segment.
const slashQueue = "webhooks/eu#1"

// queuesFixture declares emails (3 pending), slashQueue (1 dead letter)
// and empty (nothing), and puts 2 messages and 1 dead letter in the
// default queue.
func queuesFixture(t *testing.T, e *ringwal.Engine, fake *clock.Fake) {
	t.Helper()
	ctx := context.Background()
	for _, name := range []string{"emails", slashQueue, "empty"} {
		require.NoError(t, e.DeclareQueue(name, ringwal.QueueOptions{}))
	}
	for i := 0; i < 3; i++ {
		_, err := e.Queue("emails").Enqueue(ctx, ringwal.Message{Key: "smtp", Payload: []byte("mail")})
		require.NoError(t, err)
	}
	deadIn := func(q *ringwal.Queue) {
		_, err := q.Enqueue(ctx, ringwal.Message{Key: "k", Payload: []byte("dead")})
		require.NoError(t, err)
		d, ok := q.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(assert.AnError, classify.Permanent)))
		fake.Advance(1e9)
	}
	deadIn(e.Queue(slashQueue))
	deadIn(e.Queue(""))
	for i := 0; i < 2; i++ {
		_, err := e.Enqueue(ctx, ringwal.Message{Key: "k", Payload: []byte("default")})
		require.NoError(t, err)
	}
}

// queueNamed decodes GET /api/queues and returns the queue called name.
func queueNamed(t *testing.T, c adminClient, name string) (map[string]any, bool) {
	t.Helper()
	var qs []map[string]any
	r := c.do(http.MethodGet, "/queues", nil).expect(t, http.StatusOK, "queues")
	require.NoError(t, jsonUnmarshal(r.raw, &qs), "%s", r.raw)
	for _, q := range qs {
		if q["name"] == name {
			return q, true
		}
	}
	return nil, false
}

func TestAdminQueues(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	queuesFixture(t, e, fake)
	sq := "/queues/" + admin.QueuePath(slashQueue)

	// The list: the default queue first, under its admin name, then by name.
	var qs []admin.QueueView
	r := c.do(http.MethodGet, "/queues", nil).expect(t, http.StatusOK, "list")
	require.NoError(t, jsonUnmarshal(r.raw, &qs))
	var names []string
	for _, q := range qs {
		names = append(names, q.Name)
	}
	assert.Equal(t, []string{admin.DefaultQueue, "emails", "empty", slashQueue}, names)
	assert.True(t, qs[0].Default)
	assert.Equal(t, 2, qs[0].Pending)
	assert.Equal(t, 1, qs[0].Dead)
	assert.Equal(t, 3, qs[1].Pending)
	assert.Equal(t, uint64(3), qs[1].Enqueued)
	assert.Equal(t, 1, qs[3].Dead)
	assert.Equal(t, []string{}, qs[2].Options.Topics, "topics is [] not null")

	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		has                string // in the error, or the answer
	}{
		{"one queue", http.MethodGet, "/queues/emails", nil, http.StatusOK, `"pending":3`},
		{"the default queue", http.MethodGet, "/queues/_default", nil, http.StatusOK, `"default":true`},
		{"an escaped name", http.MethodGet, sq, nil, http.StatusOK, `"dead":1`},
		{"unknown", http.MethodGet, "/queues/nope", nil, http.StatusNotFound, `no queue "nope"`},
		{"the engine's name of the default queue is no path", http.MethodGet, "/queues/", nil, http.StatusNotFound, ""},
		{"pause until resumed", http.MethodPost, "/queues/emails/pause", nil, http.StatusOK, `"paused":true,"paused_until":null`},
		{"resume", http.MethodPost, "/queues/emails/resume", nil, http.StatusOK, `"status":"resumed","paused":false`},
		{"pause for a while", http.MethodPost, "/queues/emails/pause", admin.PauseRequest{Until: "1h"}, http.StatusOK, `"paused_until":"`},
		{"pause the default queue", http.MethodPost, "/queues/_default/pause", nil, http.StatusOK, `"queue":"_default","status":"paused"`},
		{"resume the default queue", http.MethodPost, "/queues/_default/resume", nil, http.StatusOK, `"paused":false`},
		{"pause with a bad until", http.MethodPost, "/queues/emails/pause", admin.PauseRequest{Until: "soon"}, http.StatusBadRequest, "neither"},
		{"pause with an unknown field", http.MethodPost, "/queues/emails/pause", `{"for":"1h"}`, http.StatusBadRequest, "unknown field"},
		{"pause declares nothing", http.MethodPost, "/queues/typo/pause", nil, http.StatusNotFound, `no queue "typo"`},
		{"resume unknown", http.MethodPost, "/queues/typo/resume", nil, http.StatusNotFound, "typo"},
		{"delete refused with the counts", http.MethodPost, "/queues/emails/delete", nil, http.StatusConflict, "3 live messages and 0 dead letters"},
		{"delete refused for dead letters", http.MethodPost, sq + "/delete", nil, http.StatusConflict, "0 live messages and 1 dead letters"},
		{"the default queue is never deleted", http.MethodPost, "/queues/_default/delete", nil, http.StatusBadRequest, "default queue"},
		{"delete unknown", http.MethodPost, "/queues/typo/delete", nil, http.StatusNotFound, "typo"},
		{"delete an empty queue", http.MethodPost, "/queues/empty/delete", nil, http.StatusOK, `"status":"deleted"`},
		{"deleted is unknown", http.MethodGet, "/queues/empty", nil, http.StatusNotFound, ""},
		{"pause is POST only", http.MethodGet, "/queues/emails/pause", nil, http.StatusMethodNotAllowed, ""},
		{"delete is POST only", http.MethodDelete, "/queues/emails", nil, http.StatusMethodNotAllowed, ""},
		{"messages of a queue", http.MethodGet, "/messages?queue=emails", nil, http.StatusOK, `"queue":"emails"`},
		{"messages: queue once", http.MethodGet, "/messages?queue=a&queue=b", nil, http.StatusBadRequest, "given 2 times"},
		{"dead letters: queue once", http.MethodGet, "/dead-letters?queue=a&queue=b", nil, http.StatusBadRequest, "given 2 times"},
		{"no purge of the default queue alone", http.MethodPost, "/dead-letters/purge", admin.PurgeRequest{Queue: admin.DefaultQueue}, http.StatusBadRequest, "cannot be purged apart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(tc.method, tc.path, tc.body).expect(t, tc.status, tc.name)
			if tc.status >= 400 {
				assert.Contains(t, r.errorText(), tc.has)
				return
			}
			assert.Contains(t, string(r.raw), tc.has)
		})
	}
	_, declared := queueNamed(t, c, "typo")
	assert.False(t, declared, "a pause or resume of an unknown queue declares nothing")
	_, declared = queueNamed(t, c, "empty")
	assert.False(t, declared, "deleted")
	em, _ := queueNamed(t, c, "emails")
	assert.Equal(t, true, em["paused"], "paused for an hour")
	assert.NotNil(t, em["paused_until"])
	d, _ := queueNamed(t, c, admin.DefaultQueue)
	assert.Equal(t, false, d["paused"])
}

func TestAdminQueueFilters(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	queuesFixture(t, e, fake)
	count := func(path string, q url.Values) int {
		es, next := c.do(http.MethodGet, path+"?"+q.Encode(), nil).expect(t, http.StatusOK, path).entries(t)
		assert.Empty(t, next)
		return len(es)
	}
	// Messages: every queue, one named queue, the default queue only.
	assert.Equal(t, 5, count("/messages", nil))
	assert.Equal(t, 3, count("/messages", url.Values{"queue": {"emails"}}))
	assert.Equal(t, 2, count("/messages", url.Values{"queue": {admin.DefaultQueue}}))
	assert.Equal(t, 0, count("/messages", url.Values{"queue": {"nope"}}))
	assert.Equal(t, 3, count("/messages", url.Values{"queue": {"emails"}, "key": {"smtp"}, "state": {"pending"}}))

	// Dead letters, likewise; each entry says its queue.
	assert.Equal(t, 2, count("/dead-letters", nil))
	assert.Equal(t, 1, count("/dead-letters", url.Values{"queue": {slashQueue}}))
	es, _ := c.do(http.MethodGet, "/dead-letters?queue="+url.QueryEscape(slashQueue), nil).expect(t, http.StatusOK, "").entries(t)
	assert.Equal(t, slashQueue, es[0]["queue"])
	assert.Equal(t, slashQueue, es[0]["message"].(map[string]any)["queue"])
	es, _ = c.do(http.MethodGet, "/dead-letters?queue=_default", nil).expect(t, http.StatusOK, "").entries(t)
	require.Len(t, es, 1)
	assert.NotContains(t, es[0], "queue", "the default queue's entries carry no queue")

	// Purge one queue's dead letters; then the queue can go.
	r := c.do(http.MethodPost, "/dead-letters/purge", admin.PurgeRequest{Queue: slashQueue}).expect(t, http.StatusOK, "purge")
	assert.Equal(t, float64(1), r.body["purged"])
	assert.Equal(t, 1, count("/dead-letters", nil), "the default queue's dead letter stays")
	c.do(http.MethodPost, "/queues/"+admin.QueuePath(slashQueue)+"/delete", nil).expect(t, http.StatusOK, "delete")
}

// The default queue's dead letters are found among every queue's: a page
// reads a bounded number of them (50 here), and its next carries on, even
// from a page that found none; paging by next finds each exactly once,
// in order.
func TestAdminDefaultQueueDeadLetterPaging(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	ctx := context.Background()
	var want []ringwal.ID
	defer admin.SetDefaultScan(50)()
	for i := 0; i < 400; i++ {
		q := e.Queue("other")
		if i%60 == 0 || i > 390 {
			q = e.Queue("")
		}
		id, err := q.Enqueue(ctx, ringwal.Message{Payload: []byte("x")})
		require.NoError(t, err)
		d, ok := q.TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(assert.AnError, classify.Permanent)))
		fake.Advance(1e9)
		if i%60 == 0 || i > 390 {
			want = append(want, id)
		}
	}
	var got []ringwal.ID
	after := ""
	empty := 0
	for pages := 0; pages < 100; pages++ {
		q := url.Values{"queue": {admin.DefaultQueue}, "limit": {"3"}}
		if after != "" {
			q.Set("after", after)
		}
		es, next := c.do(http.MethodGet, "/dead-letters?"+q.Encode(), nil).expect(t, http.StatusOK, "page").entries(t)
		assert.LessOrEqual(t, len(es), 3)
		got = append(got, entryIDs(es)...)
		if len(es) == 0 {
			empty++
		}
		if next == "" {
			break
		}
		after = next
	}
	assert.Equal(t, want, got)
	assert.Positive(t, empty, "a page that read its bound without finding any still had a next")
}

// The Client speaks queues: the list, one queue, pause until a time and
// resume, delete refused (ErrConflict, ringwal.ErrInvalid) and allowed,
// and errors.Is across the wire for unknown queues.
func TestClientQueues(t *testing.T) {
	e, fake, c, _ := clientEngine(t)
	queuesFixture(t, e, fake)
	ctx := context.Background()

	qs, err := c.Queues(ctx)
	require.NoError(t, err)
	require.Len(t, qs, 4)
	d, ok := admin.FindQueue(qs, "")
	require.True(t, ok)
	assert.True(t, d.Default)
	assert.Equal(t, "", d.EngineName())
	assert.Equal(t, 2, d.Pending)
	v, ok := admin.FindQueue(qs, slashQueue)
	require.True(t, ok)
	assert.False(t, v.Empty())

	// The handler's clock is the real one, the engine's the fake one: an
	// until after both.
	until := time.Now().Add(90 * time.Minute).Round(time.Second).UTC()
	require.NoError(t, c.PauseQueue(ctx, slashQueue, until))
	v, err = c.QueueStats(ctx, slashQueue)
	require.NoError(t, err)
	assert.True(t, v.Paused)
	require.NotNil(t, v.PausedUntil)
	assert.True(t, until.Equal(*v.PausedUntil), "%v != %v", until, *v.PausedUntil)
	info, ok := enginetest.QueueInfo(e, slashQueue)
	require.True(t, ok)
	assert.True(t, info.Paused, "the engine's queue is paused")
	require.NoError(t, c.ResumeQueue(ctx, slashQueue))
	info, _ = enginetest.QueueInfo(e, slashQueue)
	assert.False(t, info.Paused)

	require.NoError(t, c.PauseQueue(ctx, "", time.Now().Add(time.Minute)), "the default queue by \"\"")
	info, _ = enginetest.QueueInfo(e, "")
	assert.True(t, info.Paused)
	require.NoError(t, c.ResumeQueue(ctx, admin.DefaultQueue), "and by its admin name")

	err = c.DeleteQueue(ctx, "emails")
	require.Error(t, err)
	assert.ErrorIs(t, err, admin.ErrConflict)
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	assert.Contains(t, err.Error(), "3 live messages")
	assert.ErrorIs(t, c.DeleteQueue(ctx, ""), ringwal.ErrInvalid)
	assert.ErrorIs(t, c.DeleteQueue(ctx, "typo"), ringwal.ErrNotFound)
	assert.ErrorIs(t, c.PauseQueue(ctx, "typo", time.Now().Add(time.Minute)), ringwal.ErrNotFound)
	_, err = c.QueueStats(ctx, "typo")
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	require.NoError(t, c.DeleteQueue(ctx, "empty"))
	_, ok = enginetest.QueueInfo(e, "empty")
	assert.False(t, ok)

	// The listings' queue filters, through the Client's queries.
	page, err := c.Messages(ctx, admin.MessageQuery{Queue: "emails"})
	require.NoError(t, err)
	assert.Len(t, page.Entries, 3)
	dl, err := c.DeadLetters(ctx, dlqQuery(admin.DefaultQueue))
	require.NoError(t, err)
	assert.Len(t, dl.Entries, 1)
	res, err := c.Purge(ctx, dlqQuery(slashQueue))
	require.NoError(t, err)
	assert.Equal(t, 1, res.Purged)
	require.NoError(t, c.DeleteQueue(ctx, slashQueue))

	_, err = c.Queues(ctx)
	require.NoError(t, err)
	require.NoError(t, e.Close())
	_, err = c.Queues(ctx)
	assert.ErrorIs(t, err, ringwal.ErrClosed)
}

func dlqQuery(queue string) dlq.Query { return dlq.Query{Queue: queue} }
