package admin_test

// The admin API of the engine's history: GET /api/history and GET
// /api/queues/{queue}/history, over the wire and through the Client.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// historyTraffic enqueues 5 messages in the default queue and 2 in
// emails, acks 3 of the default queue's and dead-letters one.
func historyTraffic(t *testing.T, e *ringwal.Engine) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, e.DeclareQueue("emails", ringwal.QueueOptions{}))
	for i := range 5 {
		_, err := e.Enqueue(ctx, ringwal.Message{Key: "k", Payload: fmt.Appendf(nil, "m%d", i)})
		require.NoError(t, err)
	}
	for range 2 {
		_, err := e.Queue("emails").Enqueue(ctx, ringwal.Message{Key: "smtp"})
		require.NoError(t, err)
	}
	for range 3 {
		d, ok := e.Queue("").TryDequeue()
		require.True(t, ok)
		require.NoError(t, e.Ack(d.Lease))
	}
	d, ok := e.Queue("").TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("bad request"), classify.Permanent)))
}

func TestHistoryAPIServesTheEngineAndQueueSamples(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	historyTraffic(t, e)
	enginetest.AwaitSamples(t, e, fake, 1)

	var h admin.HistoryView
	r := c.do(http.MethodGet, "/history", nil).expect(t, http.StatusOK, "history")
	require.NoError(t, jsonUnmarshal(r.raw, &h), "%s", r.raw)
	assert.True(t, h.Followed)
	assert.Empty(t, h.Queue)
	require.NotEmpty(t, h.Samples)
	s := h.Samples[0]
	assert.Equal(t, 10.0, s.LengthSeconds)
	assert.Equal(t, uint64(7), s.Enqueued)
	assert.Equal(t, uint64(3), s.Acked)
	assert.Equal(t, uint64(1), s.DeadLettered)
	assert.Equal(t, map[string]uint64{"permanent": 1}, s.DeadLetteredByCategory)
	assert.Equal(t, 3, s.Live)
	assert.Equal(t, 1, s.Dead)
	assert.Contains(t, string(r.raw), `"wait_p95_seconds":`)

	r = c.do(http.MethodGet, "/queues/emails/history", nil).expect(t, http.StatusOK, "emails")
	require.NoError(t, jsonUnmarshal(r.raw, &h), "%s", r.raw)
	assert.Equal(t, "emails", h.Queue)
	assert.True(t, h.Followed)
	require.NotEmpty(t, h.Samples)
	assert.Equal(t, uint64(2), h.Samples[0].Enqueued)
	assert.Equal(t, 2, h.Samples[0].Live)

	r = c.do(http.MethodGet, "/queues/"+admin.DefaultQueue+"/history", nil).expect(t, http.StatusOK, "default")
	require.NoError(t, jsonUnmarshal(r.raw, &h), "%s", r.raw)
	assert.Equal(t, admin.DefaultQueue, h.Queue)
	require.NotEmpty(t, h.Samples)
	assert.Equal(t, uint64(5), h.Samples[0].Enqueued, "the default queue's own, not the engine's")

	c.do(http.MethodGet, "/queues/nosuch/history", nil).expect(t, http.StatusNotFound, "undeclared queue")
	c.do(http.MethodPost, "/history", nil).expect(t, http.StatusMethodNotAllowed, "POST")

	require.NoError(t, e.Close())
	c.do(http.MethodGet, "/history", nil).expect(t, http.StatusServiceUnavailable, "closed")
	c.do(http.MethodGet, "/queues/emails/history", nil).expect(t, http.StatusServiceUnavailable, "closed, a queue")
}

func TestHistoryAPIAnswersAnEmptyListBeforeTheFirstSample(t *testing.T) {
	_, _, c := adminEngine(t, ringwal.Options{})
	r := c.do(http.MethodGet, "/history", nil).expect(t, http.StatusOK, "history")
	assert.JSONEq(t, `{"followed":true,"samples":[]}`, string(r.raw))
}

func TestHistoryAPISaysWhichQueuesItDoesNotFollow(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	ctx := context.Background()
	const queues = 17 // the engine follows 16 named queues
	for i := range queues {
		name := fmt.Sprintf("q%02d", i)
		require.NoError(t, e.DeclareQueue(name, ringwal.QueueOptions{}))
		_, err := e.Queue(name).Enqueue(ctx, ringwal.Message{})
		require.NoError(t, err)
	}
	enginetest.AwaitSamples(t, e, fake, 1)
	unfollowed := 0
	for i := range queues {
		var h admin.HistoryView
		r := c.do(http.MethodGet, fmt.Sprintf("/queues/q%02d/history", i), nil).expect(t, http.StatusOK, "queue")
		require.NoError(t, jsonUnmarshal(r.raw, &h), "%s", r.raw)
		if !h.Followed {
			unfollowed++
			assert.NotNil(t, h.Samples, "samples is never null")
			assert.Empty(t, h.Samples)
		}
	}
	assert.Equal(t, 1, unfollowed)
}

func TestClientHistory(t *testing.T) {
	e, fake, c, _ := clientEngine(t)
	ctx := context.Background()
	opened := fake.Now()
	historyTraffic(t, e)
	enginetest.AwaitSamples(t, e, fake, 1)

	h, err := c.History(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, h.Samples)
	assert.Equal(t, uint64(7), h.Samples[0].Enqueued)
	assert.True(t, opened.Equal(h.Samples[0].Start), "the first interval starts when the engine opened: %v", h.Samples[0].Start)

	q, err := c.QueueHistory(ctx, "emails")
	require.NoError(t, err)
	assert.Equal(t, "emails", q.Queue)
	require.NotEmpty(t, q.Samples)
	assert.Equal(t, uint64(2), q.Samples[0].Enqueued)

	_, err = c.QueueHistory(ctx, "nosuch")
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
}
