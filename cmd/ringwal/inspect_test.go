package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

func TestInspect(t *testing.T) {
	f := newFixture(t)

	var rep inspectReport
	require.NoError(t, json.Unmarshal([]byte(ok(t, "inspect", "--json", f.dir)), &rep))
	assert.Equal(t, 3, rep.Pending)
	assert.Equal(t, 1, rep.Delayed)
	assert.Equal(t, 0, rep.Leased)
	assert.Equal(t, 0, rep.Held)
	assert.Equal(t, 3, rep.Dead)
	assert.Equal(t, map[string]int{"critical": 1, "high": 0, "normal": 2, "low": 0, "background": 0}, rep.ByPriority["pending"])
	assert.Equal(t, 2, rep.DeadByCategory[classify.Permanent])
	assert.Equal(t, 1, rep.DeadByCategory[classify.Poison])
	assert.Equal(t, 0, rep.DeadByCategory[classify.Transient])
	assert.GreaterOrEqual(t, rep.LogFiles.Segments, 1)
	assert.Positive(t, rep.LogFiles.Records)
	assert.Positive(t, rep.LogFiles.DiskBytes)
	require.NotNil(t, rep.Recovery)
	assert.Positive(t, rep.Recovery.Records)
	assert.True(t, rep.Durable)
	require.Len(t, rep.Next, 3)
	assert.Equal(t, "critical", rep.Next[0].Message.Priority, "the critical message is next in line")
	assert.Equal(t, "urgent-1", rep.Next[0].Message.Payload)
	assert.Equal(t, "text", rep.Next[0].Message.PayloadEncoding)

	// The admin API's vocabulary: durations in _seconds, no _ns.
	raw := ok(t, "inspect", "--json", f.dir)
	assert.Contains(t, raw, `"oldest_pending_seconds"`)
	assert.Contains(t, raw, `"duration_seconds"`)
	assert.NotContains(t, raw, `_ns"`)

	text := ok(t, "inspect", f.dir)
	for _, want := range []string{
		"pending 3 · delayed 1 · leased 0 · held 0 · dead 3",
		"PENDING BY TIER", "DEAD LETTERS BY CATEGORY", "WRITE-AHEAD LOG",
		"last checkpoint", "segments", "NEXT IN LINE", "urgent-1",
	} {
		assert.Contains(t, text, want)
	}
	assert.Regexp(t, `permanent\s+2`, text)
	assert.Regexp(t, `poison\s+1`, text)
	assert.Regexp(t, `critical\s+1`, text)
}

func TestInspectAfterCheckpoint(t *testing.T) {
	f := newFixture(t)
	e, err := ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	require.NoError(t, e.Checkpoint())
	require.NoError(t, e.Close())

	var rep inspectReport
	require.NoError(t, json.Unmarshal([]byte(ok(t, "inspect", "--json", f.dir)), &rep))
	require.NotNil(t, rep.Checkpoint)
	assert.Positive(t, rep.Checkpoint.Index)
	assert.WithinDuration(t, time.Now(), rep.Checkpoint.Time, time.Minute)
	assert.Equal(t, 3, rep.Pending)
	assert.Equal(t, 3, rep.Dead)
	assert.Contains(t, ok(t, "inspect", f.dir), "covers batches up to")
}

func TestInspectLocked(t *testing.T) {
	f := newFixture(t)
	e, err := ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()

	for _, args := range [][]string{
		{"inspect", f.dir},
		{"dlq", "list", f.dir},
		{"wal", "verify", "--repair", f.dir},
	} {
		r := runBin(t, 30*time.Second, args...)
		assert.Equal(t, 1, r.code, "%v", args)
		assert.Contains(t, r.stderr, "in use by a running engine", "%v", args)
	}
}

// A log tail torn by a crash is cut at Open; inspect says what was cut and
// where the cut bytes were kept.
func TestInspectReportsACutTail(t *testing.T) {
	dir := t.TempDir()
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	for range 3 {
		_, err := e.TryEnqueue(ringwal.Message{Payload: []byte("x")})
		require.NoError(t, err)
	}
	require.NoError(t, e.Close())
	segs, err := filepath.Glob(filepath.Join(dir, "log", "*"))
	require.NoError(t, err)
	sort.Strings(segs)
	require.NotEmpty(t, segs)
	f, err := os.OpenFile(segs[len(segs)-1], os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{0x40, 0x01, 0x02}) // a batch cut short by the crash
	require.NoError(t, err)
	require.NoError(t, f.Close())

	out := ok(t, "inspect", dir)
	assert.Contains(t, out, "damaged tail (recovery point-in-time)")
	assert.Contains(t, out, "cut bytes kept in")
	assert.Contains(t, out, ".broken")
}
