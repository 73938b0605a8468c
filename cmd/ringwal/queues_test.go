package main

// The queue commands (queues list|pause|resume|delete) over a running
// engine's admin API, then over its directory once it is stopped: the
// same output, and actions on a directory hold at the next start.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// queueFixture is a data directory with the default queue (one pending
// message), "emails" (two pending, bound to topic "signup"), "billing"
// (one delayed) and "old" (empty).
func queueFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, e.DeclareQueue("emails", ringwal.QueueOptions{Topics: []string{"signup"}}))
	require.NoError(t, e.DeclareQueue("old", ringwal.QueueOptions{}))
	_, err = e.Enqueue(ctx, ringwal.Message{Payload: []byte("default-1")})
	require.NoError(t, err)
	for range 2 {
		_, err = e.Publish(ctx, "signup", ringwal.Message{Payload: []byte("welcome")})
		require.NoError(t, err)
	}
	_, err = e.Queue("billing").Enqueue(ctx, ringwal.Message{Payload: []byte("invoice"), Delay: time.Hour})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	return dir
}

// queueRow returns the table row of queue name in a queues list.
func queueRow(t *testing.T, out, name string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	t.Fatalf("no row %q in:\n%s", name, out)
	return nil
}

func TestQueueCommands(t *testing.T) {
	dir := queueFixture(t)
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{Token: "tok"}))
	t.Cleanup(srv.Close)
	remote := func(args ...string) string {
		t.Helper()
		return ok(t, append(args, "--addr", srv.URL, "--token", "tok")...)
	}

	list := remote("queues", "list")
	assert.Contains(t, list, "4 queues")
	assert.True(t, strings.HasPrefix(strings.SplitN(list, "\n", 3)[1], admin.DefaultQueue), "the default queue first:\n%s", list)
	// QUEUE PAUSED(no) PENDING DELAYED LEASED HELD DEAD ...
	assert.Equal(t, []string{"emails", "no", "2", "0", "0", "0", "0"}, queueRow(t, list, "emails")[:7])
	assert.Equal(t, "signup", queueRow(t, list, "emails")[11])
	assert.Equal(t, []string{"billing", "no", "0", "1"}, queueRow(t, list, "billing")[:4])
	assert.Equal(t, []string{admin.DefaultQueue, "no", "1"}, queueRow(t, list, admin.DefaultQueue)[:3])
	var views []admin.QueueView
	require.NoError(t, json.Unmarshal([]byte(remote("queues", "list", "--json")), &views))
	require.Len(t, views, 4)
	emails, found := admin.FindQueue(views, "emails")
	require.True(t, found)
	assert.Equal(t, []string{"signup"}, emails.Options.Topics)

	// messages --queue: one queue's messages (KEY "" is every key).
	msgs := remote("messages", "", "--queue", "emails")
	assert.Contains(t, msgs, "2 messages")
	assert.Equal(t, 2, strings.Count(msgs, "welcome"), msgs)
	msgs = remote("messages", "", "--queue", admin.DefaultQueue)
	assert.Contains(t, msgs, "1 message\n")
	assert.Contains(t, msgs, "default-1")
	liveMsgs := remote("messages", "", "--queue", "billing")
	assert.Contains(t, liveMsgs, "invoice")

	out := remote("queues", "pause", "emails", "--until", "1h")
	assert.Contains(t, out, "paused queue emails: paused until ")
	assert.Equal(t, "paused queue emails: paused until resumed\n", remote("queues", "pause", "emails"), "until resumed outlasts an hour")
	_, got := e.Queue("emails").TryDequeue()
	assert.False(t, got, "a paused queue delivers nothing")
	assert.Equal(t, "until resumed", strings.Join(queueRow(t, remote("queues", "list"), "emails")[1:3], " "))
	assert.Equal(t, "paused queue "+admin.DefaultQueue+": paused until resumed\n", remote("queues", "pause", admin.DefaultQueue))
	assert.Equal(t, "resumed queue "+admin.DefaultQueue+": delivering\n", remote("queues", "resume", admin.DefaultQueue))

	assert.Equal(t, "deleted queue old\n", remote("queues", "delete", "old"))
	for _, q := range e.Queues() {
		assert.NotEqual(t, "old", q.Name)
	}

	// Refusals: exit status 1, the reason on stderr; nothing declared.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"queues", "delete", "emails"}, "2 live messages"},
		{[]string{"queues", "delete", "old"}, "old"},
		{[]string{"queues", "pause", "typo"}, "typo"},
		{[]string{"queues", "resume", "typo"}, "typo"},
	} {
		r := runBin(t, 30*time.Second, append(c.args, "--addr", srv.URL, "--token", "tok")...)
		assert.Equal(t, 1, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.want, c.args)
	}
	assert.Len(t, e.Queues(), 3, "a pause of an unknown queue declares nothing")

	// Usage errors: exit status 2.
	for _, args := range [][]string{
		{"queues", "pause"},
		{"queues", "pause", "--addr", srv.URL, dir, "emails"},
		{"queues", "pause", "emails", "--until", "yesterday", "--addr", srv.URL},
		{"queues", "delete", admin.DefaultQueue, "--addr", srv.URL},
		{"queues", "list", "a", "b"},
	} {
		r := runBin(t, 30*time.Second, args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
	}
	liveJSON := remote("queues", "list", "--json")

	// Stopped: the same queues from its directory, the pause held.
	srv.Close()
	require.NoError(t, e.Close())
	var stopped []admin.QueueView
	require.NoError(t, json.Unmarshal([]byte(ok(t, "queues", "list", "--json", dir)), &stopped))
	require.NoError(t, json.Unmarshal([]byte(liveJSON), &views))
	require.Len(t, stopped, len(views))
	for i := range views {
		// Totals count since Open, and the oldest age moves: the rest agrees.
		views[i].Enqueued, views[i].Acked, views[i].DeadLettered, views[i].OldestPendingSeconds = 0, 0, 0, 0
		stopped[i].Enqueued, stopped[i].Acked, stopped[i].DeadLettered, stopped[i].OldestPendingSeconds = 0, 0, 0, 0
	}
	assert.Equal(t, views, stopped)
	assert.Equal(t, liveMsgs, ok(t, "messages", dir, "", "--queue", "billing"))
	assert.Contains(t, ok(t, "messages", dir, "", "--queue", admin.DefaultQueue), "1 message\n")
	assert.Equal(t, "until resumed", strings.Join(queueRow(t, ok(t, "queues", "list", dir), "emails")[1:3], " "))

	// Actions on a directory are logged: they hold at the next start.
	assert.Equal(t, "resumed queue emails: delivering\n", ok(t, "queues", "resume", dir, "emails"))
	assert.Contains(t, ok(t, "queues", "pause", dir, "billing", "--until", "1h"), "paused queue billing: paused until ")
	r := runBin(t, 30*time.Second, "queues", "delete", dir, "billing")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "1 live messages")
	r = runBin(t, 30*time.Second, "queues", "pause", dir, "typo")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, `no queue "typo"`)
	e, err = ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	for _, q := range e.Queues() {
		switch q.Name {
		case "emails":
			assert.False(t, q.Paused, "the resume held")
		case "billing":
			assert.True(t, q.Paused, "the pause held")
			assert.False(t, q.PausedUntil.IsZero())
		case "typo":
			t.Error("a pause of an unknown queue declared it")
		}
	}
	_, got = e.Queue("emails").TryDequeue()
	assert.True(t, got)
}

// TestQueueOutputSanitized: a queue name from a live engine (which
// validates names, but the API's answer is outside text) cannot reach the
// terminal raw.
func TestQueueOutputSanitized(t *testing.T) {
	var b strings.Builder
	p := time.Now()
	require.NoError(t, printQueues(&b, []admin.QueueView{{Name: "evil\x1b]0;pwn\a\ttab", PausedUntil: &p,
		Options: admin.QueueOptionsView{Topics: []string{"t\x1b[2J"}}}}))
	assert.NotContains(t, b.String(), "\x1b")
	assert.NotContains(t, b.String(), "\a")
	assert.Contains(t, b.String(), `evil\x1b]0;pwn\x07\ttab`)
	b.Reset()
	require.NoError(t, printQueuePause(&b, "paused", admin.QueueView{Name: "q\u009b", Paused: true}))
	assert.Equal(t, "paused queue q\\u009b: paused until resumed\n", b.String())
}

// queueDeadFixture is a data directory with two dead letters in the
// default queue (payloads d-1, d-2) and two in "emails" (e-1, e-2).
func queueDeadFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	cause := classify.Mark(errors.New("HTTP 400"), classify.Permanent)
	for i := 1; i <= 2; i++ {
		for _, q := range []*ringwal.Queue{e.Queue(""), e.Queue("emails")} {
			payload := fmt.Sprintf("%c-%d", "de"[len(q.Name())/len("emails")], i)
			_, err := q.Enqueue(ctx, ringwal.Message{Payload: []byte(payload)})
			require.NoError(t, err)
			d, got := q.TryDequeue()
			require.True(t, got)
			require.NoError(t, e.Nack(d.Lease, cause))
		}
	}
	require.NoError(t, e.Close())
	return dir
}

// TestDLQQueueFilter: --queue limits dlq list, redrive and purge to one
// queue's dead letters, the default queue's included (_default); the
// default queue's cannot be purged apart.
func TestDLQQueueFilter(t *testing.T) {
	dir := queueDeadFixture(t)
	out := ok(t, "dlq", "list", dir, "--queue", "emails")
	assert.Contains(t, out, "2 dead letters")
	var views []admin.DeadLetterView
	require.NoError(t, json.Unmarshal([]byte(ok(t, "dlq", "list", dir, "--queue", admin.DefaultQueue, "--json")), &views))
	require.Len(t, views, 2)
	for _, v := range views {
		assert.True(t, strings.HasPrefix(v.Message.Payload, "d-"), v.Message.Payload)
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, "dlq", "list", dir, "--queue", admin.DefaultQueue, "--json", "--limit", "1")), &views))
	assert.Len(t, views, 1)
	assert.Contains(t, ok(t, "dlq", "list", dir, "--queue", "nobody"), "0 dead letters")

	r := runBin(t, 30*time.Second, "dlq", "purge", dir, "--queue", admin.DefaultQueue)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "cannot be purged apart")
	r = runBin(t, 30*time.Second, "dlq", "purge", dir, "--queue", "emails", "12")
	assert.Equal(t, 2, r.code, "IDs and a filter")

	assert.Contains(t, ok(t, "dlq", "purge", dir, "--queue", "emails", "--yes"), "purged 2 dead letters")
	assert.Contains(t, ok(t, "dlq", "list", dir), "2 dead letters", "the default queue's are kept")
	assert.Contains(t, ok(t, "dlq", "redrive", dir, "--queue", admin.DefaultQueue, "--yes"), "redriven 2 dead letters")
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	assert.Equal(t, 0, e.Stats().Dead)
	assert.Equal(t, 2, e.Stats().Queues[0].Pending, "redriven into the default queue")
	require.NoError(t, e.Close())
}

// TestDLQQueueFilterOverHTTP: over --addr, --queue lists and purges one
// queue's dead letters only; the default queue's cannot be purged apart.
func TestDLQQueueFilterOverHTTP(t *testing.T) {
	dir := queueDeadFixture(t)
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	srv := httptest.NewServer(admin.NewHandler(e, admin.Options{}))
	t.Cleanup(srv.Close)
	for q, prefix := range map[string]string{"emails": "e-", admin.DefaultQueue: "d-"} {
		var views []admin.DeadLetterView
		require.NoError(t, json.Unmarshal([]byte(ok(t, "dlq", "list", "--addr", srv.URL, "--queue", q, "--json")), &views))
		assert.Len(t, views, 2, q)
		for _, v := range views {
			assert.True(t, strings.HasPrefix(v.Message.Payload, prefix), "%s: %s", q, v.Message.Payload)
		}
	}
	list := ok(t, "dlq", "list", "--addr", srv.URL)
	assert.Equal(t, 2, strings.Count(list, " emails "), "a QUEUE column:\n%s", list)
	assert.Equal(t, 2, strings.Count(list, " "+admin.DefaultQueue+" "), list)
	r := runBin(t, 30*time.Second, "dlq", "purge", "--addr", srv.URL, "--queue", admin.DefaultQueue)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "cannot be purged apart")
	assert.Contains(t, ok(t, "dlq", "purge", "--addr", srv.URL, "--queue", "emails", "--yes"), "purged 2 dead letters")
	ds, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	require.Len(t, ds, 2)
	for _, d := range ds {
		assert.Equal(t, "", d.Queue, "the default queue's dead letters are kept")
	}
}
