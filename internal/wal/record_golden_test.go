package wal

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordsBeforeQueues is a table of records of every kind that existed
// before named queues (issue #26), with the fields the engine sets on each
// and edge values. Do not change it: testdata/records-before-queues.bin is
// its encoding by the build before queues (c998491), which
// TestRecordEncodingBeforeQueuesIsUnchanged holds every later build to.
func recordsBeforeQueues() []Record {
	big := make([]byte, 20000) // a three-byte length
	for i := range big {
		big[i] = byte(i * 7)
	}
	return []Record{
		{Kind: KindEnqueue, ID: 1, Time: t0, Priority: -2, Key: "slack", DedupID: "order-17",
			Headers: []string{"trace", "abc", "tenant", "t1"}, Payload: []byte("hello"),
			NotBefore: t0 + 5e9, Deadline: t0 + 60e9, ExpiresAt: t0 + 3600e9, MaxAttempts: 5},
		{Kind: KindEnqueue, ID: math.MaxUint64, Time: math.MinInt64, Priority: 2, Payload: big,
			NotBefore: math.MaxInt64, Deadline: math.MinInt64 + 1, ExpiresAt: -1, MaxAttempts: math.MaxInt32,
			Attempt: math.MinInt32, Until: math.MaxInt64, Crashes: math.MaxInt32},
		{Kind: KindEnqueue, ID: 3, Time: t0, Attempt: 2, Until: t0 + 1e9, Key: "ключ", Headers: []string{"", "v"}},
		{Kind: KindEnqueue, ID: 1 << 40, Time: t0, Payload: []byte("x"), Crashes: 1, Until: t0 - 1},
		{Kind: KindLease, ID: 4, Time: t0, Attempt: 1, Until: t0 + 30e9},
		{Kind: KindExtend, ID: 4, Time: t0, Until: t0 + 60e9},
		{Kind: KindAck, ID: 4, Time: t0},
		{Kind: KindNack, ID: 5, Time: t0, Attempt: 3, Category: 2, Text: "connection refused", Until: t0 + 2e9},
		{Kind: KindDeadLetter, ID: 6, Time: t0, Category: 5, Text: "400 bad request", Attempt: 1},
		{Kind: KindRedrive, ID: 6, Time: t0},
		{Kind: KindReview, ID: 6, Time: t0, Text: "looked at it"},
		{Kind: KindPurge, ID: 6},
		{Kind: KindRequeue, ID: 7, Time: t0, Crashes: 2},
		{Kind: KindFailure, ID: 8, Time: t0 - 1, Category: 255, Text: "timeout"},
		{Kind: KindDedup, ID: 9, DedupID: "x", Time: t0},
		CheckpointRecord(1000, t0, 0),
		CheckpointRecord(1<<33, t0, 26),
		{Kind: KindPause, Key: "smtp", Time: t0, Until: t0 + 500},
		{Kind: KindPause, Time: t0},
		{Kind: KindResume, Key: "smtp", Time: t0 + 1},
		{Kind: KindResume, Time: t0 + 1},
		{Kind: KindCancel, ID: 10, Time: t0 + 9},
		{Kind: KindAck}, // everything zero but the kind
	}
}

// Records without a queue (the default queue's) encode exactly as they did
// before named queues: a log written by this build that never used a
// named queue is byte for byte what the build before would have written,
// so that build still reads it. The golden file is the table's records
// back to back as c998491's AppendRecord encoded them.
func TestRecordEncodingBeforeQueuesIsUnchanged(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "records-before-queues.bin"))
	require.NoError(t, err)
	rest := golden
	for i, r := range recordsBeforeQueues() {
		enc := AppendRecord(nil, &r)
		require.GreaterOrEqual(t, len(rest), len(enc), "record %d (%s): the golden file ends early", i, r.Kind)
		if !assert.True(t, bytes.Equal(enc, rest[:len(enc)]), "record %d (%s) encodes differently:\n got %x\nwant %x",
			i, r.Kind, head(enc), head(rest[:len(enc)])) {
			return
		}
		// And the bytes of before decode to the record.
		var got Record
		n, err := DecodeRecord(rest, &got)
		require.NoError(t, err, "record %d (%s)", i, r.Kind)
		require.Equal(t, len(enc), n)
		assert.Equal(t, r, got, "record %d", i)
		rest = rest[len(enc):]
	}
	assert.Empty(t, rest, "the golden file holds more records than the table")
}

// head shortens b for a failure message.
func head(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
