package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// lastSegment returns the path and size of the log's last segment file.
func lastSegment(t *testing.T, dir string) (string, int64) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "log", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	slices.Sort(segs)
	st, err := os.Stat(segs[len(segs)-1])
	require.NoError(t, err)
	return segs[len(segs)-1], st.Size()
}

func TestWALVerify(t *testing.T) {
	f := newFixture(t)
	out := ok(t, "wal", "verify", f.dir)
	assert.Contains(t, out, "torn tail  none")
	assert.Contains(t, out, "result     ok")

	var rep verifyReportJSON
	require.NoError(t, json.Unmarshal([]byte(ok(t, "wal", "verify", "--json", f.dir)), &rep))
	assert.True(t, rep.OK)
	assert.Positive(t, rep.Batches)
	assert.Positive(t, rep.Records)
	assert.Nil(t, rep.TornTail)

	// A crash mid-write: the last batch cut short.
	seg, size := lastSegment(t, f.dir)
	require.NoError(t, os.Truncate(seg, size-3))
	out = ok(t, "wal", "verify", f.dir)
	assert.Contains(t, out, "torn tail")
	assert.Contains(t, out, "left alone")
	assert.Contains(t, out, "result     ok")
	_, after := lastSegment(t, f.dir)
	assert.Equal(t, size-3, after, "verify without --repair changes nothing")

	require.NoError(t, json.Unmarshal([]byte(ok(t, "wal", "verify", "--json", f.dir)), &rep))
	require.NotNil(t, rep.TornTail)
	assert.Positive(t, rep.TornTail.Bytes)
	assert.False(t, rep.Repaired)

	out = ok(t, "wal", "verify", "--repair", f.dir)
	assert.Contains(t, out, "repaired")
	_, repaired := lastSegment(t, f.dir)
	assert.Less(t, repaired, size-3, "--repair cut the torn batch")
	out = ok(t, "wal", "verify", f.dir)
	assert.Contains(t, out, "torn tail  none")
}

func TestWALVerifyDamage(t *testing.T) {
	f := newFixture(t)
	seg, _ := lastSegment(t, f.dir)
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	b[12] ^= 0x40 // inside the first batch, with many after it
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	r := runBin(t, 30*time.Second, "wal", "verify", f.dir)
	assert.Equal(t, 1, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, filepath.Base(seg), "the error names the segment")
}

func TestWALDump(t *testing.T) {
	f := newFixture(t)
	out := ok(t, "wal", "dump", f.dir)
	kinds := map[string]int{}
	var recs []walRecordJSON
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r walRecordJSON
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "line %q", sc.Text())
		kinds[r.Kind]++
		recs = append(recs, r)
		assert.Positive(t, r.Index)
		assert.False(t, r.Time.IsZero())
	}
	assert.Equal(t, 7, kinds["enqueue"], "7 messages were enqueued")
	assert.Equal(t, 3, kinds["deadletter"])
	assert.Equal(t, 3, kinds["lease"])
	var sawPayload, sawCategory bool
	for _, r := range recs {
		if r.Kind == "enqueue" && r.Payload != nil && *r.Payload == "urgent-1" {
			sawPayload = true
			assert.Equal(t, "critical", r.Priority)
			assert.Equal(t, "api", r.Key)
		}
		if r.Kind == "deadletter" && r.ID == f.poison {
			sawCategory = true
			assert.Equal(t, "poison", r.Category)
		}
	}
	assert.True(t, sawPayload)
	assert.True(t, sawCategory)

	only := ok(t, "wal", "dump", "--kind", "deadletter", "--id", fmt.Sprint(f.poison), f.dir)
	lines := strings.Split(strings.TrimSpace(only), "\n")
	require.Len(t, lines, 1, only)
	assert.Contains(t, lines[0], `"kind":"deadletter"`)
}

func TestWALDumpShowsQueuesAndPublishCopies(t *testing.T) {
	dir := t.TempDir()
	e, err := ringwal.Open(dir, ringwal.Options{Queues: map[string]ringwal.QueueOptions{
		"audit": {Topics: []string{"orders"}}, "billing": {Topics: []string{"orders"}}}})
	require.NoError(t, err)
	ids, err := e.Publish(context.Background(), "orders", ringwal.Message{Payload: []byte("order-1")})
	require.NoError(t, err)
	require.Len(t, ids, 2)
	require.NoError(t, e.Close())

	out := ok(t, "wal", "dump", "--kind", "publish", "--id", fmt.Sprint(ids[1]), dir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 1, out)
	var r walRecordJSON
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &r))
	assert.Equal(t, "publish", r.Kind)
	require.NotNil(t, r.Payload)
	assert.Equal(t, "order-1", *r.Payload)
	require.Len(t, r.Copies, 2)
	assert.Equal(t, ids[0], r.Copies[0].ID)
	assert.Equal(t, ids[1], r.Copies[1].ID)
	assert.NotEqual(t, r.Copies[0].Queue, r.Copies[1].Queue, "each copy names its queue's number")

	queues := ok(t, "wal", "dump", "--kind", "queue", dir)
	assert.Contains(t, queues, `"key":"audit"`)
	assert.Contains(t, queues, `"queue":`+fmt.Sprint(r.Copies[0].Queue))
}
