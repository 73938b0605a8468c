package ringwal

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/wal"
)

// hostileRecords are well-formed logs (honest framing and hashes) holding
// a value no engine writes, each with what the refusal must name: a
// hostile backup is such a directory.
func hostileRecords() map[string]struct {
	seed fuzzSeed
	want string // in the error: the record and the value
} {
	at := fuzzBase
	enq := func(id uint64, f func(*wal.Record)) wal.Record {
		r := wal.Record{Kind: wal.KindEnqueue, ID: id, Time: at, Payload: []byte("x")}
		if f != nil {
			f(&r)
		}
		return r
	}
	tail := func(rs ...wal.Record) fuzzSeed { return fuzzSeed{tail: rs} }
	permanent := uint8(classify.Permanent)
	return map[string]struct {
		seed fuzzSeed
		want string
	}{
		"priority 3":                    {tail(enq(1, func(r *wal.Record) { r.Priority = 3 })), "enqueue record of message 1: priority 3"},
		"priority -3":                   {tail(enq(1, func(r *wal.Record) { r.Priority = -3 })), "priority -3"},
		"priority of a publish":         {tail(wal.Record{Kind: wal.KindPublish, ID: 1, Time: at, Priority: -128, Copies: []wal.Copy{{ID: 1}}}), "publish record of message 1: priority -128"},
		"priority of a schedule's run":  {tail(wal.Record{Kind: wal.KindScheduleTick, ID: 1, Time: at, Text: "s", Priority: 127}), "scheduletick record of message 1: priority 127"},
		"negative attempts":             {tail(enq(1, func(r *wal.Record) { r.Attempt = -1 })), "attempts -1"},
		"negative lease attempt":        {tail(enq(1, nil), wal.Record{Kind: wal.KindLease, ID: 1, Time: at, Attempt: math.MinInt32}), "lease record of message 1: attempts -2147483648"},
		"negative nack attempt":         {tail(enq(1, nil), wal.Record{Kind: wal.KindNack, ID: 1, Time: at, Attempt: -5}), "nack record of message 1: attempts -5"},
		"negative dead-letter attempts": {tail(enq(1, nil), wal.Record{Kind: wal.KindDeadLetter, ID: 1, Time: at, Attempt: -1, Category: permanent}), "deadletter record of message 1: attempts -1"},
		"crash count at its limit":      {tail(enq(1, func(r *wal.Record) { r.Crashes = math.MaxInt32 })), "crashes 2147483647"},
		"negative crash count":          {tail(enq(1, nil), wal.Record{Kind: wal.KindRequeue, ID: 1, Time: at, Crashes: -7}), "requeue record of message 1: crashes -7"},
		"message ID 0":                  {tail(enq(0, nil)), "enqueue record of message 0: ID 0"},
		"message ID past 2^63":          {tail(enq(math.MaxUint64, nil)), "ID 18446744073709551615"},
		"copy ID past 2^63": {tail(wal.Record{Kind: wal.KindPublish, ID: 1, Time: at,
			Copies: []wal.Copy{{ID: 1}, {ID: 1 << 63}}}), "copy 1: ID 9223372036854775808"},
		"next ID past 2^63":         {fuzzSeed{snap: []wal.Record{wal.CheckpointRecord(math.MaxUint64, at, 12)}}, "checkpoint record: next ID 18446744073709551615"},
		"slab of 2^1000":            {fuzzSeed{snap: []wal.Record{{Kind: wal.KindCheckpoint, ID: 2, Time: at, Attempt: 1000}}}, "slab size 2^1000"},
		"odd header list":           {tail(enq(1, func(r *wal.Record) { r.Headers = []string{"a"} })), "1 header strings"},
		"key too long":              {tail(enq(1, func(r *wal.Record) { r.Key = fuzzLongString })), "key of 5000 bytes"},
		"paused key too long":       {tail(wal.Record{Kind: wal.KindPause, Key: fuzzLongString, Time: at, Until: at + 1}), "pause record: key of 5000 bytes"},
		"dedup entry of no DedupID": {fuzzSeed{snap: []wal.Record{wal.CheckpointRecord(2, at, 12), {Kind: wal.KindDedup, ID: 1, Time: at}}}, "dedup record of message 1: no DedupID"},
		"copies sharing an ID": {tail(wal.Record{Kind: wal.KindPublish, ID: 5, Time: at,
			Copies: []wal.Copy{{Queue: 0, ID: 5}, {Queue: 0, ID: 5}}}), "copy 1: ID 5"},
		"first copy another message":         {tail(wal.Record{Kind: wal.KindPublish, ID: 5, Time: at, Copies: []wal.Copy{{ID: 9}}}), "copy 0: ID 9"},
		"publish of no copies":               {tail(wal.Record{Kind: wal.KindPublish, ID: 5, Time: at}), "publish record of message 5: no copies"},
		"delay past the last instant":        {tail(enq(1, func(r *wal.Record) { r.Time, r.NotBefore = math.MinInt64+1, math.MaxInt64 })), "due time"},
		"TTL past the last instant":          {tail(enq(1, func(r *wal.Record) { r.Time, r.ExpiresAt = math.MinInt64+1, math.MaxInt64 })), "expiry"},
		"TTL ending before its enqueue":      {tail(enq(1, func(r *wal.Record) { r.ExpiresAt = at - int64(time.Second) })), "expiry"},
		"queue options no declaration takes": {tail(wal.Record{Kind: wal.KindQueue, Queue: 1, Key: "q1", Time: at, Text: `{"max":-1}`}), `queue "q1"`},
		"queue named with no number":         {tail(wal.Record{Kind: wal.KindQueue, Key: "q1", Time: at, Text: `{}`}), `queue "q1" declared as number 0`},
		"delay ending before its enqueue":    {tail(enq(1, func(r *wal.Record) { r.NotBefore = at - 1 })), "due time"},
	}
}

// TestOpenRefusesRecordValuesNoEngineWrites: Open trusts no value of a
// well-formed log. A record holding one no engine writes (a priority
// outside the five, a negative count, a category or ID out of range, an
// odd header list, a delay or TTL that does not fit) is refused with an
// error wrapping ErrCorrupt that names the record and the value, as a
// torn record is, in every recovery mode; never a panic, never applied.
func TestOpenRefusesRecordValuesNoEngineWrites(t *testing.T) {
	for name, tc := range hostileRecords() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFuzzLog(t, dir, tc.seed.snap, tc.seed.tail)
			for _, mode := range []RecoveryMode{PointInTime, AbsoluteConsistency, SkipToPointInTime} {
				var err error
				msg := fuzzGuard(func() string {
					var e *Engine
					e, err = Open(dir, Options{Recovery: mode})
					if err == nil {
						e.Close()
					}
					return ""
				})
				require.Empty(t, msg, "%v", mode)
				if assert.ErrorIs(t, err, wal.ErrCorrupt, "%v", mode) {
					assert.Contains(t, err.Error(), tc.want, "%v", mode)
				}
			}
		})
	}
}

// A message's MaxAttempts beyond what a record's int32 holds (a caller's
// "as many as it takes", math.MaxInt) comes back from the log as the
// largest it holds, not truncated to another limit (math.MaxInt was -1,
// a policy's default; 1<<32+5 was 5); and a log holding such a truncated,
// negative, limit (today's engines wrote them) opens the same way.
func TestMaxAttemptsBeyondARecordsRangeSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	var ids []ID
	for _, n := range []int{math.MaxInt, 1<<32 + 5, math.MaxInt32, 7} {
		id, err := e.Enqueue(ctxBG, Message{MaxAttempts: n})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	for i, want := range []int{math.MaxInt32, math.MaxInt32, math.MaxInt32, 7} {
		info, err := e.Get(ids[i])
		require.NoError(t, err)
		assert.Equal(t, want, info.Message.MaxAttempts, "message %d", i)
	}

	old := t.TempDir()
	writeFuzzLog(t, old, nil, []wal.Record{{Kind: wal.KindEnqueue, ID: 1, Time: fuzzBase, MaxAttempts: -1}})
	e2 := openEngine(t, old, Options{})
	info, err := e2.Get(1)
	require.NoError(t, err)
	assert.Equal(t, math.MaxInt32, info.Message.MaxAttempts)
}

// A failure of a category past the last (a custom Classifier may return
// one, and engines logged it as is) replays as Unknown, as the engine
// counts it, instead of dropping the dead letter the store would refuse.
func TestFailuresOfAnUnknownCategoryReplayAsUnknown(t *testing.T) {
	at := fuzzBase
	dir := t.TempDir()
	writeFuzzLog(t, dir, nil, []wal.Record{
		{Kind: wal.KindEnqueue, ID: 1, Time: at},
		{Kind: wal.KindLease, ID: 1, Time: at, Attempt: 1, Until: at + 1},
		{Kind: wal.KindNack, ID: 1, Time: at, Attempt: 1, Category: 200, Text: "odd", Until: at},
		{Kind: wal.KindLease, ID: 1, Time: at, Attempt: 2, Until: at + 1},
		{Kind: wal.KindDeadLetter, ID: 1, Time: at, Attempt: 2, Category: 201, Text: "odder"},
	})
	e := openEngine(t, dir, Options{})
	d, err := e.DeadLetter(1)
	require.NoError(t, err, "the dead letter is kept")
	assert.Equal(t, classify.Unknown, d.Category)
	require.Len(t, d.Failures, 2)
	for i, text := range []string{"odd", "odder"} {
		assert.Equal(t, classify.Unknown, d.Failures[i].Category)
		assert.Equal(t, text, d.Failures[i].Error)
	}
	assert.Equal(t, 1, e.Stats().Dead)
}
