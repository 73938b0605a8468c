package ringwal

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/wal"
)

// fuzzSeedDir holds FuzzReplayHostileValues's seed corpus.
var fuzzSeedDir = filepath.Join("testdata", "fuzz", "FuzzReplayHostileValues")

// fuzzSeed is one seed: the snapshot and the log after it.
type fuzzSeed struct{ snap, tail []wal.Record }

// fuzzSeeds are the seeds: every record kind as an engine writes it, then
// the hostile values that crashed Open or made an inconsistent engine.
func fuzzSeeds() map[string]fuzzSeed {
	at := fuzzBase
	sec := int64(time.Second)
	enq := func(id uint64) wal.Record {
		return wal.Record{Kind: wal.KindEnqueue, ID: id, Time: at, Payload: []byte("x")}
	}
	lease := func(id uint64, attempt int32) wal.Record {
		return wal.Record{Kind: wal.KindLease, ID: id, Time: at, Attempt: attempt, Until: at + 30*sec}
	}
	queue := func(num uint32, name string) wal.Record {
		return wal.Record{Kind: wal.KindQueue, Queue: num, Key: name, Time: at, Text: `{}`}
	}
	ck := wal.CheckpointRecord(100, at, 12)
	with := func(r wal.Record, f func(*wal.Record)) wal.Record { f(&r); return r }
	transient, permanent := uint8(classify.Transient), uint8(classify.Permanent)
	seeds := map[string]fuzzSeed{
		// Every kind, as an engine writes it.
		"enqueue": {tail: []wal.Record{enq(1)}},
		"enqueue-every-field": {tail: []wal.Record{{Kind: wal.KindEnqueue, ID: 2, Time: at, Priority: 2, Key: "k", DedupID: "d",
			Headers: []string{"h", "v"}, Payload: []byte("p"), NotBefore: at + sec, Deadline: at + 3600*sec,
			ExpiresAt: at + 7200*sec, MaxAttempts: 3, Attempt: 1, Crashes: 1}}},
		"enqueue-unique": {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.DedupID, r.Unique = "d", 2 })}},
		"snapshot": {
			snap: []wal.Record{ck, queue(1, "q1"),
				with(enq(3), func(r *wal.Record) { r.Queue, r.Attempt, r.Until = 1, 1, at+60*sec }),
				{Kind: wal.KindFailure, ID: 3, Time: at, Category: transient, Text: "503", Attempt: 1},
				with(enq(4), func(r *wal.Record) { r.Attempt = 2 }), lease(4, 2),
				{Kind: wal.KindRedrive, ID: 5, Time: at}, with(enq(5), func(r *wal.Record) { r.DedupID = "d" }),
				{Kind: wal.KindRequeue, ID: 5, Time: at + sec},
				enq(6), {Kind: wal.KindDeadLetter, ID: 6, Time: at, Attempt: 1, Category: permanent, Text: "400", DedupID: "e"},
				{Kind: wal.KindReview, ID: 6, Time: at, Text: "seen"},
				{Kind: wal.KindPause, Key: "k", Time: at, Until: at + 3600*sec},
				{Kind: wal.KindDedup, DedupID: "d", ID: 5, Time: at},
			},
			tail: []wal.Record{lease(3, 2), {Kind: wal.KindAck, ID: 3, Time: at}},
		},
		"publish": {tail: []wal.Record{queue(1, "q1"), queue(2, "q2"),
			{Kind: wal.KindPublish, ID: 5, Time: at, DedupID: "d", Payload: []byte("x"),
				Copies: []wal.Copy{{Queue: 0, ID: 5}, {Queue: 1, ID: 6}, {Queue: 2, ID: 7}}}}},
		"lease-extend-ack": {tail: []wal.Record{enq(1), lease(1, 1),
			{Kind: wal.KindExtend, ID: 1, Time: at, Until: at + 60*sec}, {Kind: wal.KindAck, ID: 1, Time: at}}},
		"failures-and-dead-letters": {tail: []wal.Record{enq(1), lease(1, 1),
			{Kind: wal.KindNack, ID: 1, Time: at, Attempt: 1, Category: transient, Text: "503", Until: at + sec},
			{Kind: wal.KindRequeue, ID: 1, Time: at, Attempt: 1},
			lease(1, 2),
			{Kind: wal.KindFailure, ID: 1, Time: at, Category: transient, Text: "503", Attempt: 2},
			{Kind: wal.KindDeadLetter, ID: 1, Time: at, Attempt: 2, Category: uint8(classify.Expired), Text: "ttl"},
			{Kind: wal.KindReview, ID: 1, Time: at, Text: "note"},
			{Kind: wal.KindRedrive, ID: 1, Time: at}, enq(1), lease(1, 1),
			{Kind: wal.KindDeadLetter, ID: 1, Time: at, Attempt: 1, Category: permanent, Text: "400"},
			{Kind: wal.KindPurge, ID: 1, Time: at}}},
		"cancel": {tail: []wal.Record{enq(1), {Kind: wal.KindCancel, ID: 1, Time: at}}},
		"pauses": {tail: []wal.Record{enq(1),
			{Kind: wal.KindPause, Key: "k", Time: at, Until: at + 3600*sec},
			{Kind: wal.KindPause, Time: at, Until: math.MaxInt64},
			{Kind: wal.KindResume, Key: "k", Time: at}}},
		"queue-pause-resume-delete": {tail: []wal.Record{queue(1, "q1"), with(enq(1), func(r *wal.Record) { r.Queue = 1 }),
			{Kind: wal.KindQueuePause, Queue: 1, Key: "q1", Time: at, Until: at + 3600*sec},
			{Kind: wal.KindQueueResume, Queue: 1, Key: "q1", Time: at},
			{Kind: wal.KindAck, ID: 1, Time: at},
			{Kind: wal.KindQueueDelete, Queue: 1, Key: "q1", Time: at}}},
		"schedule": {tail: []wal.Record{
			{Kind: wal.KindSchedule, Key: "s", Time: at, Text: fuzzScheduleJSON},
			{Kind: wal.KindScheduleTick, ID: 9, Time: at, Text: "s", Until: at, Payload: []byte("x")},
			{Kind: wal.KindScheduleTick, Time: at, Text: "s", Until: at + 3600*sec, Attempt: 2},
			{Kind: wal.KindScheduleRemove, Key: "s", Time: at}}},

		// Hostile values.
		"priority-3":             {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.Priority = 3 })}},
		"priority-minus-3":       {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.Priority = -3 })}},
		"priority-in-publish":    {tail: []wal.Record{{Kind: wal.KindPublish, ID: 1, Time: at, Priority: -128, Copies: []wal.Copy{{ID: 1}}}}},
		"priority-in-tick":       {tail: []wal.Record{{Kind: wal.KindScheduleTick, ID: 1, Time: at, Text: "s", Priority: 127}}},
		"attempt-negative":       {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.Attempt = -1 })}},
		"lease-attempt-negative": {tail: []wal.Record{enq(1), lease(1, math.MinInt32)}},
		"nack-attempt-negative": {tail: []wal.Record{enq(1),
			{Kind: wal.KindNack, ID: 1, Time: at, Attempt: -5, Category: transient, Until: at}}},
		"crashes-max":           {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.Crashes = math.MaxInt32 }), lease(1, 1)}},
		"crashes-negative":      {tail: []wal.Record{enq(1), {Kind: wal.KindRequeue, ID: 1, Time: at, Crashes: -7}}},
		"max-attempts-negative": {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.MaxAttempts = -3 })}},
		"dead-letter-category":  {tail: []wal.Record{enq(1), {Kind: wal.KindDeadLetter, ID: 1, Time: at, Category: 200}}},
		"nack-category":         {tail: []wal.Record{enq(1), {Kind: wal.KindNack, ID: 1, Time: at, Attempt: 1, Category: 8, Until: at}}},
		"failure-category":      {tail: []wal.Record{enq(1), {Kind: wal.KindFailure, ID: 1, Time: at, Category: 255}}},
		"id-max":                {tail: []wal.Record{enq(math.MaxUint64), enq(1)}},
		"id-zero":               {tail: []wal.Record{enq(0)}},
		"checkpoint-id-max":     {snap: []wal.Record{wal.CheckpointRecord(math.MaxUint64, at, 12)}, tail: []wal.Record{enq(1)}},
		"checkpoint-slab-bits":  {snap: []wal.Record{with(ck, func(r *wal.Record) { r.Attempt = 1000 })}, tail: []wal.Record{enq(1)}},
		"headers-odd":           {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.Headers = []string{"a"} })}},
		"key-too-long":          {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.Key = fuzzLongString })}},
		"pause-key-too-long":    {tail: []wal.Record{enq(1), {Kind: wal.KindPause, Key: fuzzLongString, Time: at, Until: at + sec}}},
		"dedup-empty":           {snap: []wal.Record{ck, {Kind: wal.KindDedup, ID: 1, Time: at}}},
		"copies-share-an-id": {tail: []wal.Record{queue(1, "q1"),
			{Kind: wal.KindPublish, ID: 5, Time: at, Copies: []wal.Copy{{Queue: 0, ID: 5}, {Queue: 1, ID: 5}}}}},
		"copy-not-the-record": {tail: []wal.Record{{Kind: wal.KindPublish, ID: 5, Time: at, Copies: []wal.Copy{{Queue: 0, ID: 9}}}}},
		"delay-overflows": {tail: []wal.Record{with(enq(1), func(r *wal.Record) {
			r.Time, r.NotBefore = math.MinInt64+1, math.MaxInt64
		})}},
		"ttl-overflows": {tail: []wal.Record{with(enq(1), func(r *wal.Record) {
			r.Time, r.ExpiresAt = math.MinInt64+1, math.MaxInt64
		})}},
		"ttl-before-enqueue":  {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.ExpiresAt = at - sec })}},
		"time-edges":          {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.Time, r.Deadline = math.MaxInt64, math.MinInt64 })}},
		"nack-until-max":      {tail: []wal.Record{enq(1), lease(1, 1), {Kind: wal.KindNack, ID: 1, Time: at, Attempt: 1, Until: math.MaxInt64}}},
		"nack-until-min":      {tail: []wal.Record{enq(1), lease(1, 1), {Kind: wal.KindNack, ID: 1, Time: at, Attempt: 1, Until: math.MinInt64}}},
		"delayed-until-max":   {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.Until = math.MaxInt64 })}},
		"pause-until-min":     {tail: []wal.Record{enq(1), {Kind: wal.KindPause, Time: at, Until: math.MinInt64}}},
		"queue-pause-until":   {tail: []wal.Record{queue(1, "q1"), {Kind: wal.KindQueuePause, Queue: 1, Key: "q1", Time: at, Until: math.MinInt64 + 1}}},
		"queue-undeclared":    {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.Queue = 3 })}},
		"queue-max":           {tail: []wal.Record{queue(wal.MaxQueue, "q1"), with(enq(1), func(r *wal.Record) { r.Queue = wal.MaxQueue })}},
		"queue-named-twice":   {tail: []wal.Record{queue(1, "q1"), queue(2, "q1"), with(enq(1), func(r *wal.Record) { r.Queue = 2 })}},
		"queue-options":       {tail: []wal.Record{{Kind: wal.KindQueue, Queue: 1, Key: "q1", Time: at, Text: fuzzBadPolicies}}},
		"unique-unknown":      {tail: []wal.Record{with(enq(1), func(r *wal.Record) { r.DedupID, r.Unique = "d", 9 })}},
		"review-of-live":      {tail: []wal.Record{enq(1), {Kind: wal.KindReview, ID: 1, Time: math.MinInt64, Text: "n"}}},
		"requeue-time-max":    {tail: []wal.Record{enq(1), lease(1, 1), {Kind: wal.KindRequeue, ID: 1, Time: math.MaxInt64, Attempt: 1}}},
		"lease-attempt-max":   {tail: []wal.Record{enq(1), lease(1, math.MaxInt32)}},
		"id-of-no-message":    {snap: []wal.Record{{Kind: wal.KindQueuePause, ID: 1 << 63, Until: at}}},
		"dead-letter-attempt": {tail: []wal.Record{enq(1), {Kind: wal.KindDeadLetter, ID: 1, Time: at, Attempt: -1, Category: permanent}}},
	}
	return seeds
}

// TestFuzzReplaySeedsAreCurrent checks that the seed corpus is what
// fuzzSeeds says; RINGWAL_WRITE_FUZZ_SEEDS=1 writes it.
func TestFuzzReplaySeedsAreCurrent(t *testing.T) {
	seeds := fuzzSeeds()
	names := make([]string, 0, len(seeds))
	for name := range seeds {
		names = append(names, name)
	}
	sort.Strings(names)
	write := os.Getenv("RINGWAL_WRITE_FUZZ_SEEDS") == "1"
	if write {
		require.NoError(t, os.MkdirAll(fuzzSeedDir, 0o755))
	}
	for _, name := range names {
		s := seeds[name]
		data := encodeFuzzLog(s.snap, s.tail)
		snap, tail := decodeFuzzLog(data)
		require.Equal(t, fmt.Sprint(s.snap), fmt.Sprint(snap), "%s: the input decodes to the seed's snapshot", name)
		require.Equal(t, fmt.Sprint(s.tail), fmt.Sprint(tail), "%s: the input decodes to the seed's log", name)
		file := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
		path := filepath.Join(fuzzSeedDir, name)
		if write {
			require.NoError(t, os.WriteFile(path, []byte(file), 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		if assert.NoError(t, err, "RINGWAL_WRITE_FUZZ_SEEDS=1 go test -run TestFuzzReplaySeedsAreCurrent writes the seeds") {
			assert.Equal(t, file, string(got), "seed %s", name)
		}
	}
}
