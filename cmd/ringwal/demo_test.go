package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

func TestDemo(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "demo")
	start := time.Now()
	r := runBin(t, 90*time.Second, "demo", "--duration", "3s", "--dir", parent)
	took := time.Since(start)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	t.Logf("demo took %s:\n%s", took, r.stdout)
	for _, want := range []string{
		"ACT 1", "live act", "enqueued", "acked", "retried", "breakers", "p99",
		`"slack" answers 429 Retry-After`, "keys: healthy acked", "retry-after", "slack paused",
		"ACT 2", "SIGKILL sent to pid", "reopened",
		"recovery check (every ID the child reported",
		"[ok  ]", "recovery check: held",
		"two queues", "queues: default pending", "emails pending", "queue emails paused for",
		"queue emails resumed by itself", "emails paused a while, the default queue acked",
		"SUMMARY", "WHAT TO TRY NEXT", "inspect " + filepath.Join(parent, "live"),
	} {
		assert.Contains(t, r.stdout, want)
	}
	assert.NotContains(t, r.stdout, "FAIL")
	assert.NotContains(t, r.stdout, "\x1b[", "no terminal escapes when stdout is not a terminal")
	assert.Less(t, took, 30*time.Second, "--duration is honoured")

	// What it leaves behind is readable by the other commands.
	assert.Contains(t, ok(t, "inspect", filepath.Join(parent, "live")), "DEAD LETTERS BY CATEGORY")
	assert.Contains(t, ok(t, "dlq", "list", filepath.Join(parent, "live")), "dead letters")
	assert.Contains(t, ok(t, "queues", "list", filepath.Join(parent, "live")), "emails")
	assert.Contains(t, ok(t, "wal", "verify", filepath.Join(parent, "crash")), "result     ok")

	r = runBin(t, 30*time.Second, "demo", "--duration", "3s", "--dir", parent)
	assert.Equal(t, 2, r.code, "a non-empty --dir is refused")
	assert.Contains(t, r.stderr, "not empty")
}

// TestCrashCheck drives the recovery check itself with reports that agree
// with the log, and with reports that do not: a lost message, a wrong
// payload and an acked message that came back must each fail it.
func TestCrashCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	var ids []ringwal.ID
	for _, p := range []string{"pa", "pb", "pc", "pd"} {
		id, err := e.Enqueue(context.Background(), ringwal.Message{Payload: []byte(p)})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.Equal(t, ids[0], d.ID)
	require.NoError(t, e.Ack(d.Lease))
	d, ok = e.TryDequeue() // leased at the "crash": comes back pending
	require.True(t, ok)
	require.Equal(t, ids[1], d.ID)
	require.NoError(t, e.Close())

	good := newCrashAct(dir, time.Second, nil)
	good.enqueued = map[ringwal.ID]string{ids[0]: "pa", ids[1]: "pb", ids[2]: "pc"}
	good.dequeued = map[ringwal.ID]bool{ids[0]: true, ids[1]: true}
	good.acked = map[ringwal.ID]bool{ids[0]: true}
	var res crashResult
	require.NoError(t, good.check(&res))
	assert.True(t, res.held)
	assert.Equal(t, 3, res.enqueued)
	assert.Equal(t, 1, res.acked)
	assert.Equal(t, 1, res.owed)
	assert.Equal(t, 1, res.inFlight)
	assert.Equal(t, 1, res.inFlightUp)
	assert.Equal(t, 1, res.unreported, "pd was never reported")
	var out bytes.Buffer
	res.printCheck(&out)
	assert.Contains(t, out.String(), "recovery check: held")

	bad := newCrashAct(dir, time.Second, nil)
	bad.enqueued = map[ringwal.ID]string{ids[2]: "wrong", 999: "ghost"}
	bad.acked = map[ringwal.ID]bool{ids[3]: true}
	res = crashResult{}
	require.NoError(t, bad.check(&res))
	assert.False(t, res.held)
	assert.Equal(t, []ringwal.ID{999}, res.lost)
	assert.Equal(t, []ringwal.ID{ids[2]}, res.badPayload)
	assert.Equal(t, []ringwal.ID{ids[3]}, res.resurrected)
	out.Reset()
	res.printCheck(&out)
	assert.Contains(t, out.String(), "LOST: 999")
	assert.Contains(t, out.String(), "recovery check: FAILED")

	_, err = os.Stat(dir)
	require.NoError(t, err)
}
