package admin_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// backupServer serves e's admin API with a token.
func backupServer(t *testing.T, e *ringwal.Engine) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{Token: "s3cret"}))
	t.Cleanup(srv.Close)
	return srv
}

// GET /api/backup streams a live engine's backup, which restores to its
// messages; it needs the token like every route.
func TestClientBackupStreamsALiveEngine(t *testing.T) {
	e := enginetest.Open(t, t.TempDir(), ringwal.Options{})
	ctx := context.Background()
	for range 5 {
		_, err := e.Enqueue(ctx, ringwal.Message{Payload: []byte("x")})
		require.NoError(t, err)
	}
	srv := backupServer(t, e)
	c := admin.NewClient(srv.URL, admin.WithToken("s3cret"), admin.WithHTTPClient(srv.Client()))
	var buf bytes.Buffer
	n, err := c.Backup(ctx, &buf)
	require.NoError(t, err)
	assert.Equal(t, int64(buf.Len()), n)

	dir := filepath.Join(t.TempDir(), "r")
	info, err := ringwal.Restore(&buf, dir)
	require.NoError(t, err)
	assert.Equal(t, 5, info.Messages)
	r := enginetest.Open(t, dir, ringwal.Options{})
	assert.Equal(t, 5, r.Stats().Pending)

	_, err = admin.NewClient(srv.URL, admin.WithHTTPClient(srv.Client())).Backup(ctx, &buf)
	assert.ErrorIs(t, err, admin.ErrUnauthorized)
}

// A memory-only engine has nothing to back up: 400, ErrInvalid through the
// client, and no bytes written.
func TestClientBackupOfMemoryEngineIsInvalid(t *testing.T) {
	e := enginetest.Open(t, "", ringwal.Options{})
	srv := backupServer(t, e)
	c := admin.NewClient(srv.URL, admin.WithToken("s3cret"), admin.WithHTTPClient(srv.Client()))
	var buf bytes.Buffer
	_, err := c.Backup(context.Background(), &buf)
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	assert.Zero(t, buf.Len())

	req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/backup?x=1", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
