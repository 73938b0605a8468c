package admin_test

// The Client's key controls against a real engine, errors.Is across the
// wire included.

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
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/enginetest"
)

func TestClientKeyControls(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	mux := http.NewServeMux()
	hclock := clock.NewFake(time.Now()) // the handler's: it ends the penalty of the wrong token below
	mux.Handle("/ops/", http.StripPrefix("/ops", admin.NewHandler(e, admin.Options{Token: "s3cret", Clock: hclock})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := admin.NewClient(srv.URL+"/ops/", admin.WithToken("s3cret"))
	ctx := context.Background()
	ids := enqueueN(t, e, odd, 4)
	enqueueN(t, e, "other", 1)

	// Pause the key with '/', ':' and '#' in it, until resumed.
	pv, err := c.PauseKey(ctx, odd, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, admin.PauseView{Key: odd, Status: "paused", Paused: true}, pv)
	keys, err := c.Keys(ctx)
	require.NoError(t, err)
	k, found := admin.FindKey(keys, odd)
	require.True(t, found, "%+v", keys)
	assert.True(t, k.Paused)
	assert.Nil(t, k.PausedUntil)
	assert.True(t, k.Notable())
	st, err := c.Stats(ctx)
	require.NoError(t, err)
	k, _ = admin.FindKey(st.Keys, odd)
	assert.True(t, k.Paused, "the stats list the paused key")
	assert.Contains(t, st.WaitingByReason, "paused")

	// Its messages, paged, say why they wait.
	page, err := c.Messages(ctx, admin.MessageQuery{Key: odd, Limit: 3})
	require.NoError(t, err)
	require.Len(t, page.Entries, 3)
	assert.Equal(t, "paused", page.Entries[0].Waiting)
	cur, err := admin.ParseCursor(page.Next)
	require.NoError(t, err)
	page, err = c.Messages(ctx, admin.MessageQuery{Key: odd, After: cur})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	assert.Equal(t, ids[3], page.Entries[0].ID)
	assert.Empty(t, page.Next)

	// A timed pause, then resume.
	until := time.Now().Add(time.Hour).Truncate(time.Second)
	pv, err = c.PauseKey(ctx, "other", until)
	require.NoError(t, err)
	require.NotNil(t, pv.PausedUntil)
	assert.True(t, until.Equal(*pv.PausedUntil))
	pv, err = c.ResumeKey(ctx, odd)
	require.NoError(t, err)
	assert.False(t, pv.Paused)
	_, err = c.PauseKey(ctx, odd, time.Now().Add(-time.Hour))
	assert.ErrorIs(t, err, ringwal.ErrInvalid, "a pause in the past")

	// All delivery.
	pv, err = c.Pause(ctx, time.Time{})
	require.NoError(t, err)
	assert.True(t, pv.Paused)
	assert.True(t, e.Stats().DeliveryPaused)
	_, ok := e.TryDequeue()
	assert.False(t, ok)
	pv, err = c.Resume(ctx)
	require.NoError(t, err)
	assert.Equal(t, "resumed", pv.Status)
	assert.False(t, e.Stats().DeliveryPaused)

	// Cancel, and errors.Is across the wire.
	av, err := c.Cancel(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, admin.ActionView{ID: ids[0], Status: "cancelled"}, av)
	_, err = e.Get(ids[0])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	_, err = c.Cancel(ctx, ids[0])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	var ae *admin.Error
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, http.StatusNotFound, ae.Status)
	_, err = c.Messages(ctx, admin.MessageQuery{Limit: admin.MaxLimit + 1})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)

	// Without the token: unauthorized, nothing done. A wrong token puts
	// its address in a penalty: the next tries are throttled (429) before
	// their token is even looked at.
	bad := admin.NewClient(srv.URL+"/ops", admin.WithToken("wrong"))
	_, err = bad.Pause(ctx, time.Time{})
	assert.ErrorIs(t, err, admin.ErrUnauthorized)
	assert.NotErrorIs(t, err, admin.ErrThrottled)
	_, err = bad.Cancel(ctx, ids[1])
	assert.ErrorIs(t, err, admin.ErrUnauthorized)
	assert.ErrorIs(t, err, admin.ErrThrottled)
	hclock.Advance(2 * time.Second)
	_, err = bad.Keys(ctx)
	assert.ErrorIs(t, err, admin.ErrUnauthorized)
	assert.False(t, e.Stats().DeliveryPaused)
	_, err = e.Get(ids[1])
	assert.NoError(t, err)
	hclock.Advance(2 * time.Second) // the penalty is the address's: it ends for c too

	require.NoError(t, e.Close())
	_, err = c.Keys(ctx)
	assert.ErrorIs(t, err, ringwal.ErrClosed)
	_, err = c.Messages(ctx, admin.MessageQuery{})
	assert.ErrorIs(t, err, ringwal.ErrClosed)
}

func TestClientDeadLetterKeysCountsEachKeysDeadLetters(t *testing.T) {
	e, fake, c, _ := clientEngine(t)
	makeDeadLetters(t, e, fake, []string{"a", "a", "b", ""}, []error{errPermanent, errPermanent, errPermanent, errPermanent})
	got, err := c.DeadLetterKeys(context.Background())
	require.NoError(t, err)
	want, err := e.DeadLetterKeys()
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, 2, got["a"])
	assert.Equal(t, 1, got["b"])
}
