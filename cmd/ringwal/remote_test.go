package main

// The operator commands over a running engine's admin API (--addr), and
// the same output as over its directory once the engine is stopped.

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/dlq"
)

// TestDLQListOverHTTP is the acceptance test: `dlq list --addr` against a
// running engine prints the same rows as `dlq list DIR` against its
// directory after the engine is closed.
func TestDLQListOverHTTP(t *testing.T) {
	f := newFixture(t)
	e, err := ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{Token: "tok"}))
	t.Cleanup(srv.Close)

	// The directory is locked; the message says where to go instead.
	r := runBin(t, 30*time.Second, "dlq", "list", f.dir)
	require.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "in use by a running engine")
	assert.Contains(t, r.stderr, "--addr")
	assert.NotContains(t, r.stderr, "ringwal serve")

	// Review one over HTTP, so the list has a reviewed row; the token comes
	// from the environment.
	env := []string{envAddr + "=" + srv.URL, envToken + "=tok"}
	r = runBinEnv(t, env, 30*time.Second, "dlq", "review", fmt.Sprint(f.permanent[1]), "--note", "seen")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, fmt.Sprintf("reviewed 1 dead letter: %d", f.permanent[1]))

	live := ok(t, "dlq", "list", "--addr", srv.URL, "--token", "tok")
	liveJSON := ok(t, "dlq", "list", "--json", "--addr", srv.URL, "--token", "tok")
	liveShow := ok(t, "dlq", "show", "--addr", srv.URL, "--token", "tok", fmt.Sprint(f.poison))
	liveFiltered := runBinEnv(t, env, 30*time.Second, "dlq", "list", "--category", "permanent", "--reviewed=false")
	require.Equal(t, 0, liveFiltered.code, liveFiltered.stderr)
	assert.Contains(t, live, "3 dead letters")
	assert.Contains(t, liveFiltered.stdout, "1 dead letter\n")
	assert.Contains(t, liveShow, "poison-1")

	// Paging through the API's pages gives every entry.
	paged := ok(t, "dlq", "list", "--addr", srv.URL, "--token", "tok", "--limit", "2")
	assert.Contains(t, paged, "2 dead letters")

	insp := ok(t, "inspect", "--addr", srv.URL, "--token", "tok")
	for _, want := range []string{"admin API", srv.URL, "pending 3", "NEXT IN LINE", "urgent-1", "last checkpoint", "waiting on their key",
		"on disk", "segments and snapshots", "of log since the last checkpoint"} { // README: the log's figures are live too
		assert.Contains(t, insp, want)
	}

	r = runBin(t, 30*time.Second, "dlq", "list", "--addr", srv.URL, "--token", "wrong")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "--token")
	r = runBin(t, 30*time.Second, "dlq", "list", "--addr", srv.URL, f.dir)
	assert.Equal(t, 2, r.code, "a directory and --addr")

	srv.Close()
	require.NoError(t, e.Close())
	assert.Equal(t, live, ok(t, "dlq", "list", f.dir), "the same rows either way")
	assert.JSONEq(t, liveJSON, ok(t, "dlq", "list", "--json", f.dir))
	assert.Equal(t, liveShow, ok(t, "dlq", "show", f.dir, fmt.Sprint(f.poison)))
}

// TestDLQActionsOverHTTP: redrive and purge (by ID and by filter) act on
// the running engine.
func TestDLQActionsOverHTTP(t *testing.T) {
	f := newFixture(t)
	e, err := ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{}))
	t.Cleanup(srv.Close)

	out := ok(t, "dlq", "redrive", "--addr", srv.URL, fmt.Sprint(f.permanent[0]))
	assert.Contains(t, out, "redriven 1 dead letter")
	info, err := e.Get(f.permanent[0])
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)

	out = ok(t, "dlq", "purge", "--addr", srv.URL, fmt.Sprint(f.poison))
	assert.Contains(t, out, "purged 1 dead letter")
	out = ok(t, "dlq", "purge", "--addr", srv.URL, "--all", "--yes")
	assert.Contains(t, out, "purged 1 dead letter")
	ds, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	assert.Empty(t, ds)
}
