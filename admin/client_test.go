package admin_test

// Tests of the Client against an httptest server over a real engine:
// every method, its views, and errors.Is across the wire.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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

// clientEngine serves a memory engine's admin API with a token, under a
// prefix, and returns a client of it.
func clientEngine(t *testing.T) (*ringwal.Engine, *clock.Fake, *admin.Client, *httptest.Server) {
	t.Helper()
	fake := clock.NewFake(time.Time{})
	e := enginetest.Open(t, "", ringwal.Options{Clock: fake})
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", admin.NewHandler(e, admin.Options{Token: "s3cret"})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return e, fake, admin.NewClient(srv.URL+"/ops/", admin.WithToken("s3cret"), admin.WithHTTPClient(srv.Client())), srv
}

func TestClientReads(t *testing.T) {
	e, fake, c, _ := clientEngine(t)
	ctx := context.Background()
	ids := fiveDeadLetters(t, e, fake)
	live, err := e.Enqueue(ctx, ringwal.Message{Key: "k", Priority: ringwal.High, Payload: []byte{0xfe, 0xff}, Delay: time.Hour})
	require.NoError(t, err)

	s, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, s.Dead)
	assert.Equal(t, 1, s.Delayed)
	assert.Equal(t, 1, s.ByPriority["delayed"]["high"])
	assert.Equal(t, 3, s.DeadByCategory[classify.Permanent])
	assert.Equal(t, uint64(2), s.DeadLetteredByCategory[classify.Poison])
	assert.False(t, s.Durable)
	assert.Nil(t, s.WAL)

	info, err := c.Get(ctx, live)
	require.NoError(t, err)
	assert.Equal(t, live, info.ID)
	assert.Equal(t, "delayed", info.State)
	assert.Equal(t, "high", info.Message.Priority)
	assert.Equal(t, admin.PayloadBase64, info.Message.PayloadEncoding)
	p, err := info.Message.PayloadBytes()
	require.NoError(t, err)
	assert.Equal(t, []byte{0xfe, 0xff}, p)
	assert.Nil(t, info.DeadLetter)

	dead, err := c.Get(ctx, ids[3])
	require.NoError(t, err)
	assert.Equal(t, "dead", dead.State)
	require.NotNil(t, dead.DeadLetter)
	assert.Equal(t, classify.Poison, dead.DeadLetter.Category)
	assert.Equal(t, "m3", dead.DeadLetter.Message.Payload)
	assert.Equal(t, "handler panicked", dead.DeadLetter.LastError)

	// Paging through the client: 2 + 2 + 1.
	var got []ringwal.ID
	q := dlq.Query{Limit: 2}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		page, err := c.DeadLetters(ctx, q)
		require.NoError(t, err)
		for _, d := range page.Entries {
			got = append(got, d.ID)
		}
		if page.Next == "" {
			break
		}
		q.After, err = admin.ParseCursor(page.Next)
		require.NoError(t, err)
	}
	assert.Equal(t, ids, got)
	page, err := c.DeadLetters(ctx, dlq.Query{Categories: []classify.Category{classify.Poison}, Key: "b",
		Since: fake.Now().Add(-3 * time.Second), Reviewed: dlq.OnlyUnreviewed})
	require.NoError(t, err)
	require.Len(t, page.Entries, 2)
	assert.Equal(t, ids[3], page.Entries[0].ID)

	_, err = c.Get(ctx, 999999)
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	var ae *admin.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusNotFound, ae.Status)
	assert.NotEmpty(t, ae.Message)
	_, err = c.DeadLetters(ctx, dlq.Query{Limit: admin.MaxLimit + 1})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
}

func TestClientActions(t *testing.T) {
	e, fake, c, _ := clientEngine(t)
	ctx := context.Background()
	ids := fiveDeadLetters(t, e, fake)

	a, err := c.Review(ctx, ids[0], "seen")
	require.NoError(t, err)
	assert.Equal(t, admin.ActionView{ID: ids[0], Status: "reviewed", Note: a.Note}, a)
	require.NotNil(t, a.Note)
	assert.Equal(t, "seen", *a.Note)
	page, err := c.DeadLetters(ctx, dlq.Query{Reviewed: dlq.OnlyReviewed})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	assert.Equal(t, "seen", page.Entries[0].Note)
	assert.False(t, page.Entries[0].ReviewedAt.IsZero())

	a, err = c.Redrive(ctx, ids[3])
	require.NoError(t, err)
	assert.Equal(t, admin.ActionView{ID: ids[3], Status: "redriven"}, a)
	_, err = c.Redrive(ctx, ids[3])
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "no longer dead")

	delayed, err := e.Enqueue(ctx, ringwal.Message{Delay: time.Hour})
	require.NoError(t, err)
	a, err = c.Requeue(ctx, delayed)
	require.NoError(t, err)
	assert.Equal(t, admin.ActionView{ID: delayed, Status: "requeued"}, a)
	info, err := e.Get(delayed)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
	_, err = c.Requeue(ctx, ids[0])
	assert.ErrorIs(t, err, ringwal.ErrInvalid, "a dead letter is redriven, not requeued")

	_, err = c.Purge(ctx, dlq.Query{})
	assert.ErrorIs(t, err, ringwal.ErrInvalid, "an empty query is refused")
	n, err := c.Purge(ctx, dlq.Query{Key: "a", Reviewed: dlq.OnlyReviewed})
	require.NoError(t, err)
	assert.Equal(t, 1, n.Purged)
	n, err = c.Purge(ctx, dlq.Query{Categories: []classify.Category{classify.Permanent}, After: ids[1], Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, 1, n.Purged)
	_, err = e.Get(ids[2])
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "the one after ids[1]")
	n, err = c.PurgeAll(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n.Purged, "ids[1] and ids[4]")
	assert.Equal(t, 0, e.Stats().Dead)

	require.NoError(t, e.Close())
	_, err = c.Stats(ctx)
	assert.ErrorIs(t, err, ringwal.ErrClosed)
	_, err = c.Redrive(ctx, ids[1])
	assert.ErrorIs(t, err, ringwal.ErrClosed)
}

func TestClientAuthAndTransportErrors(t *testing.T) {
	_, _, _, srv := clientEngine(t)
	ctx := context.Background()
	for name, c := range map[string]*admin.Client{
		"no token":    admin.NewClient(srv.URL+"/ops", admin.WithHTTPClient(srv.Client())),
		"wrong token": admin.NewClient(srv.URL+"/ops", admin.WithToken("guess")),
	} {
		_, err := c.Stats(ctx)
		assert.ErrorIs(t, err, admin.ErrUnauthorized, name)
	}
	_, err := admin.NewClient(srv.URL+"/nowhere", admin.WithToken("s3cret")).Stats(ctx)
	assert.ErrorIs(t, err, admin.ErrProtocol, "a plain-text 404 of another handler is not ErrNotFound")
	_, err = admin.NewClient("http://127.0.0.1:1").Stats(ctx)
	require.Error(t, err)
	var ae *admin.Error
	assert.False(t, errors.As(err, &ae), "a transport error is not an answer")
}

func TestClientPurgeTakesWhatItsCountCounted(t *testing.T) {
	for _, filtered := range []bool{true, false} {
		e, fake, c, _ := clientEngine(t)
		makeDeadLetters(t, e, fake, []string{"a", "a", "b"}, []error{errPermanent, errPermanent, errPermanent})
		q := dlq.Query{}
		if filtered {
			q.Key = "a"
		}
		count, err := c.CountDeadLetters(context.Background(), q)
		require.NoError(t, err)
		mark, err := admin.ParseMark(count.Through)
		require.NoError(t, err)
		late := makeDeadLetters(t, e, fake, []string{"a"}, []error{errPermanent})[0]
		q.Through = mark
		res, err := c.Purge(context.Background(), q)
		require.NoError(t, err)
		assert.Equal(t, count.Count, res.Purged, "filtered %v", filtered)
		_, err = e.DeadLetter(late)
		assert.NoError(t, err, "a dead letter added after the count survives (filtered %v)", filtered)
	}
}

func TestClientPurgeDeadLetterDeletesOne(t *testing.T) {
	e, fake, c, _ := clientEngine(t)
	ids := makeDeadLetters(t, e, fake, []string{"a", "a"}, []error{errPermanent, errPermanent})
	v, err := c.PurgeDeadLetter(context.Background(), ids[0])
	require.NoError(t, err)
	assert.Equal(t, "purged", v.Status)
	_, err = e.DeadLetter(ids[0])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	_, err = e.DeadLetter(ids[1])
	assert.NoError(t, err, "only that one")
	_, err = c.PurgeDeadLetter(context.Background(), ids[0])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
}
