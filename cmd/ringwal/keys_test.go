package main

// The key commands (keys list|pause|resume, messages, cancel, pause,
// resume) over a running engine's admin API, then over its directory once
// it is stopped: the same output, and actions on a directory hold at the
// next start.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
)

const opsKey = "slack:#ops/eu"

func TestKeyCommands(t *testing.T) {
	f := newFixture(t)
	e, err := ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	var ops []ringwal.ID
	for i := 1; i <= 3; i++ {
		id, err := e.Enqueue(context.Background(), ringwal.Message{Key: opsKey, Payload: fmt.Appendf(nil, "deploy-%d", i)})
		require.NoError(t, err)
		ops = append(ops, id)
	}
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{Token: "tok"}))
	t.Cleanup(srv.Close)
	remote := func(args ...string) string {
		t.Helper()
		return ok(t, append(args, "--addr", srv.URL, "--token", "tok")...)
	}

	out := remote("keys", "pause", opsKey, "--until", "1h")
	assert.Contains(t, out, "paused key "+opsKey+": paused until ")
	assert.Contains(t, remote("keys", "list"), opsKey)
	out = remote("keys", "pause", opsKey)
	assert.Equal(t, "paused key "+opsKey+": paused until resumed\n", out, "until resumed outlasts an hour")
	for _, k := range e.Stats().Keys {
		if k.Key == opsKey {
			assert.True(t, k.Paused)
		}
	}

	msgs := remote("messages", opsKey)
	assert.Contains(t, msgs, "3 messages")
	assert.Equal(t, 3, strings.Count(msgs, "paused"), "each says why it waits:\n%s", msgs)
	assert.Contains(t, msgs, "deploy-1")
	assert.NotContains(t, msgs, "mail-1")
	assert.Contains(t, remote("messages", "mail", "--state", "delayed"), "later-1")
	assert.Contains(t, remote("messages", opsKey, "--limit", "2"), "2 messages")

	insp := remote("inspect")
	for _, want := range []string{"KEYS PAUSED, THROTTLED", opsKey, "until resumed", "waiting on their key", "delivering", "last checkpoint"} {
		assert.Contains(t, insp, want)
	}

	out = remote("cancel", fmt.Sprint(ops[0]))
	assert.Equal(t, fmt.Sprintf("%d: cancelled\n", ops[0]), out)
	_, err = e.Get(ops[0])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	r := runBin(t, 30*time.Second, "cancel", "--addr", srv.URL, "--token", "tok", fmt.Sprint(ops[0]), "999999")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "not cancelled")
	assert.Contains(t, r.stderr, "2 of 2 not cancelled")

	assert.Equal(t, "paused all delivery: paused until resumed\n", remote("pause"))
	assert.True(t, e.Stats().DeliveryPaused)
	assert.Contains(t, remote("inspect"), "ALL DELIVERY PAUSED")
	assert.Equal(t, "resumed all delivery: delivering\n", remote("resume"))
	assert.False(t, e.Stats().DeliveryPaused)

	liveKeys := remote("keys", "list")
	liveKeysJSON := remote("keys", "list", "--json")
	liveMsgs := remote("messages", opsKey)
	liveMsgsJSON := remote("messages", opsKey, "--json")

	// Usage errors: exit status 2.
	for _, args := range [][]string{
		{"keys", "pause"},
		{"keys", "pause", "--addr", srv.URL, f.dir, opsKey},
		{"keys", "pause", opsKey, "--until", "yesterday", "--addr", srv.URL},
		{"messages", opsKey, "--state", "dead", "--addr", srv.URL},
		{"cancel", "--addr", srv.URL},
		{"pause", "--until", "-1h", "--addr", srv.URL},
	} {
		r := runBin(t, 30*time.Second, args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
	}

	// Stopped: the same output from its directory, the pause held.
	srv.Close()
	require.NoError(t, e.Close())
	assert.Equal(t, liveKeys, ok(t, "keys", "list", f.dir))
	assert.JSONEq(t, liveKeysJSON, ok(t, "keys", "list", "--json", f.dir))
	assert.Equal(t, liveMsgs, ok(t, "messages", f.dir, opsKey))
	assert.JSONEq(t, liveMsgsJSON, ok(t, "messages", "--json", f.dir, opsKey))

	// Actions on a directory are logged: they hold at the next start.
	assert.Equal(t, "resumed key "+opsKey+": delivering\n", ok(t, "keys", "resume", f.dir, opsKey))
	assert.Contains(t, ok(t, "pause", f.dir, "--until", "1h"), "paused all delivery: paused until ")
	assert.Equal(t, fmt.Sprintf("%d: cancelled\n", ops[1]), ok(t, "cancel", f.dir, fmt.Sprint(ops[1])))
	e, err = ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	s := e.Stats()
	assert.True(t, s.DeliveryPaused, "the pause held")
	for _, k := range s.Keys {
		assert.NotEqual(t, opsKey, k.Key, "resumed: nothing to report")
	}
	_, err = e.Get(ops[1])
	assert.ErrorIs(t, err, ringwal.ErrNotFound, "the cancel held")
	_, err = e.Get(ops[2])
	assert.NoError(t, err)
}

// keys list prints the same rows from a directory and from a live engine
// over the same data, keys that only have dead letters included (as the
// console's keys page shows them).
func TestKeysListSameRowsOnDirectoryAndLiveEngine(t *testing.T) {
	f := newFixture(t)
	e, err := ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	id, err := e.Enqueue(context.Background(), ringwal.Message{Key: "gone", Payload: []byte("x")})
	require.NoError(t, err)
	d, got := e.TryDequeue()
	require.True(t, got)
	for d.ID != id { // the fixture's pending ones first
		require.NoError(t, e.Ack(d.Lease))
		d, got = e.TryDequeue()
		require.True(t, got)
	}
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("HTTP 410"), classify.Permanent)))
	require.NoError(t, e.PauseKey("slack", time.Time{}))
	require.NoError(t, e.Close())

	dirKeys := ok(t, "keys", "list", f.dir)
	dirJSON := ok(t, "keys", "list", "--json", f.dir)

	e, err = ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{}))
	t.Cleanup(srv.Close)
	assert.Equal(t, dirKeys, ok(t, "keys", "list", "--addr", srv.URL))
	assert.JSONEq(t, dirJSON, ok(t, "keys", "list", "--json", "--addr", srv.URL))

	var rows []keyRow
	require.NoError(t, json.Unmarshal([]byte(dirJSON), &rows))
	dead := map[string]int{}
	var keys []string
	for _, r := range rows {
		keys = append(keys, r.Key)
		dead[r.Key] = r.DeadLetters
	}
	assert.Equal(t, []string{"api", "gone", "mail", "slack"}, keys, "the dead-letter keys and the paused one:\n%s", dirKeys)
	assert.Equal(t, map[string]int{"api": 2, "gone": 1, "mail": 1, "slack": 0}, dead)
	assert.Contains(t, dirKeys, "4 keys\n")
}
