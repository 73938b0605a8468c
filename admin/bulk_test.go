package admin_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/dlq"
)

// A count answers the number and a mark; a redrive given the mark acts
// on exactly those counted, not on a dead letter of the same query that
// arrived after the count.
func TestAdminBulkRedriveActsOnTheCounted(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	r := c.do("GET", "/dead-letters/count?key=a", nil).expect(t, http.StatusOK, "count")
	assert.Equal(t, float64(3), r.body["count"])
	through := r.body["through"].(string)
	later := makeDeadLetters(t, e, fake, []string{"a"}, []error{errPermanent})

	c.do("POST", "/dead-letters/redrive?key=a", nil).expect(t, http.StatusBadRequest, "no through")
	r = c.do("POST", "/dead-letters/redrive?key=a&through="+through, nil).expect(t, http.StatusOK, "redrive")
	assert.Equal(t, float64(3), r.body["count"])
	es, _ := c.do("GET", "/dead-letters?key=a", nil).expect(t, http.StatusOK, "list").entries(t)
	assert.Equal(t, later, entryIDs(es), "the one after the count stays")
	for _, id := range ids[:3] {
		info, err := e.Get(id)
		require.NoError(t, err)
		assert.Equal(t, ringwal.Pending, info.State)
	}
}

// A review in bulk takes a note; a limit bounds it.
func TestAdminBulkReview(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	ids := fiveDeadLetters(t, e, fake)
	through := c.do("GET", "/dead-letters/count", nil).expect(t, http.StatusOK, "count").body["through"].(string)
	r := c.do("POST", "/dead-letters/review?category=poison&limit=1&through="+through, `{"note": "known bug"}`).
		expect(t, http.StatusOK, "review")
	assert.Equal(t, float64(1), r.body["count"])
	d, err := e.DeadLetter(ids[3])
	require.NoError(t, err)
	assert.True(t, d.Reviewed)
	assert.Equal(t, "known bug", d.Note)
	d, err = e.DeadLetter(ids[4])
	require.NoError(t, err)
	assert.False(t, d.Reviewed, "past the limit")
}

// Bad bulk requests are refused before anything is done: the default
// queue alone, a malformed mark, an unknown parameter; a mark of 0 (an
// empty store was counted) acts on nothing.
func TestAdminBulkRefusals(t *testing.T) {
	e, fake, c := adminEngine(t, ringwal.Options{})
	fiveDeadLetters(t, e, fake)
	for _, path := range []string{
		"/dead-letters/redrive?queue=_default&through=9",
		"/dead-letters/redrive?through=x",
		"/dead-letters/redrive?through=1&through=2",
		"/dead-letters/review?bogus=1&through=9",
		"/messages/cancel?limit=5&through=9",
		"/messages/cancel?after=5&through=9",
		"/messages/cancel?queue=_default&through=9",
		"/messages/cancel?state=dead&through=9",
	} {
		c.do("POST", path, nil).expect(t, http.StatusBadRequest, path)
	}
	c.do("GET", "/dead-letters/count?queue=_default", nil).expect(t, http.StatusBadRequest, "count default")
	r := c.do("POST", "/dead-letters/redrive?through=0", nil).expect(t, http.StatusOK, "through 0")
	assert.Equal(t, float64(0), r.body["count"])
	assert.Equal(t, 5, e.Stats().Dead)
}

// Messages: a count and its mark; a cancel with it spares one enqueued
// after the count.
func TestAdminBulkCancel(t *testing.T) {
	e, _, c := adminEngine(t, ringwal.Options{})
	ctx := context.Background()
	for _, key := range []string{"a", "a", "b"} {
		_, err := e.Enqueue(ctx, ringwal.Message{Key: key})
		require.NoError(t, err)
	}
	r := c.do("GET", "/messages/count?key=a&state=pending", nil).expect(t, http.StatusOK, "count")
	assert.Equal(t, float64(2), r.body["count"])
	later, err := e.Enqueue(ctx, ringwal.Message{Key: "a"})
	require.NoError(t, err)
	r = c.do("POST", "/messages/cancel?key=a&state=pending&through="+r.body["through"].(string), nil).
		expect(t, http.StatusOK, "cancel")
	assert.Equal(t, float64(2), r.body["count"])
	n, _, err := e.CountMessages(ringwal.Filter{Key: "a"})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = e.Get(later)
	assert.NoError(t, err, "enqueued after the count")
}

// The Client's bulk methods: count, then act with the mark.
func TestClientBulk(t *testing.T) {
	e, fake, c, _ := clientEngine(t)
	ctx := context.Background()
	ids := fiveDeadLetters(t, e, fake)

	cnt, err := c.CountDeadLetters(ctx, dlq.Query{Key: "b"})
	require.NoError(t, err)
	assert.Equal(t, 2, cnt.Count)
	mark, err := admin.ParseMark(cnt.Through)
	require.NoError(t, err)
	res, err := c.ReviewMatching(ctx, dlq.Query{Key: "b", Through: mark}, "seen")
	require.NoError(t, err)
	assert.Equal(t, 2, res.Count)
	res, err = c.RedriveMatching(ctx, dlq.Query{Key: "b", Reviewed: dlq.OnlyReviewed, Through: mark})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Count)
	res, err = c.RedriveMatching(ctx, dlq.Query{Key: "a"})
	require.NoError(t, err)
	assert.Zero(t, res.Count, "no mark: nothing")
	assert.Equal(t, 3, e.Stats().Dead)

	cm, err := c.CountMessages(ctx, admin.MessageQuery{Key: "b"})
	require.NoError(t, err)
	assert.Equal(t, 2, cm.Count)
	through, err := admin.ParseMark(cm.Through)
	require.NoError(t, err)
	res, err = c.CancelMatching(ctx, admin.MessageQuery{Key: "b"}, through)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Count)
	_, err = e.Get(ids[3])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)

	_, err = c.CancelMatching(ctx, admin.MessageQuery{Key: "b", Limit: 3}, 9)
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
}
