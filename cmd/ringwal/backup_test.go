package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
)

// backup of a stopped directory and of a running engine (--addr), restore
// into a new directory, and the refusals: an existing file, a non-empty
// directory, a backup cut short.
func TestBackupAndRestoreCommands(t *testing.T) {
	f := newFixture(t)
	tmp := t.TempDir()
	file := filepath.Join(tmp, "b.tar")
	out := ok(t, "backup", f.dir, "-o", file)
	assert.Contains(t, out, "4 messages, 3 dead letters, 0 named queues, 0 schedules")
	assert.Contains(t, out, "checked")
	_, err := os.Stat(file + ".partial")
	assert.True(t, os.IsNotExist(err), "the .partial file is left")

	r := runBin(t, 30*time.Second, "backup", f.dir, "-o", file)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "exists")
	r = runBin(t, 30*time.Second, "backup", f.dir)
	assert.Equal(t, 2, r.code)

	assert.Contains(t, ok(t, "restore", "--check", file), "is a whole backup")
	dir := filepath.Join(tmp, "restored")
	assert.Contains(t, ok(t, "restore", file, dir), "4 messages, 3 dead letters")
	assert.Contains(t, ok(t, "inspect", dir), "pending 3")
	r = runBin(t, 30*time.Second, "restore", file, dir)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "not empty")

	b, err := os.ReadFile(file)
	require.NoError(t, err)
	cut := filepath.Join(tmp, "cut.tar")
	require.NoError(t, os.WriteFile(cut, b[:len(b)/2], 0o600))
	r = runBin(t, 30*time.Second, "restore", cut, filepath.Join(tmp, "never"))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "partial or damaged backup")
	_, err = os.Stat(filepath.Join(tmp, "never"))
	assert.True(t, os.IsNotExist(err))

	// A running engine, through its admin API and token.
	e, err := ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{Token: "tok"}))
	t.Cleanup(srv.Close)
	live := filepath.Join(tmp, "live.tar")
	assert.Contains(t, ok(t, "backup", "--addr", srv.URL, "--token", "tok", "-o", live), "4 messages")
	r = runBin(t, 30*time.Second, "backup", "--addr", srv.URL, "-o", filepath.Join(tmp, "nope.tar"))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "--token")
	_, err = os.Stat(filepath.Join(tmp, "nope.tar.partial"))
	assert.True(t, os.IsNotExist(err))
	assert.Contains(t, ok(t, "restore", live, filepath.Join(tmp, "fromlive")), "4 messages")
}
