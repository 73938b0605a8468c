package main

import (
	"encoding/json"
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
