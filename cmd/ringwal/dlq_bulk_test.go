package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
)

// lockedBuffer is a log sink the server's goroutines write to while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Given filters and --addr, redrive and review send one bulk request
// (the count's mark with it) instead of one request a dead letter, and
// print what they did as the loop did.
func TestDLQBulkByFilterOverTheAPIUsesTheBulkRoutes(t *testing.T) {
	f := newFixture(t)
	e, err := ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	var logged lockedBuffer
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{Token: "tok", Logger: slog.New(slog.NewTextHandler(&logged, nil))}))
	t.Cleanup(srv.Close)

	out := ok(t, "dlq", "review", "--addr", srv.URL, "--token", "tok", "--key", "api", "--note", "upstream fixed", "--yes")
	assert.Contains(t, out, fmt.Sprintf("reviewed 2 dead letters: %d %d", f.permanent[0], f.permanent[1]))
	out = ok(t, "dlq", "redrive", "--addr", srv.URL, "--token", "tok", "--key", "api", "--json", "--yes")
	var res struct {
		Done   []uint64 `json:"done"`
		Failed []any    `json:"failed"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, []uint64{f.permanent[0], f.permanent[1]}, res.Done)
	assert.Empty(t, res.Failed)

	log := logged.String()
	assert.Contains(t, log, "admin reviewed dead letters")
	assert.Contains(t, log, "admin redrove dead letters")
	assert.NotContains(t, log, "admin redrove a dead letter", "no one-by-one requests")
	assert.Equal(t, 1, e.Stats().Dead, "the poison one stays")
	info, err := e.Get(f.permanent[0])
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)

	out = ok(t, "dlq", "redrive", "--addr", srv.URL, "--token", "tok", "--key", "nobody")
	assert.Contains(t, out, "redriven 0 dead letters")
}
