package ringwal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/wal"
)

// roundTrip encodes rec as the log would and decodes it back.
func roundTrip(t *testing.T, rec wal.Record) *wal.Record {
	t.Helper()
	b := wal.AppendRecord(nil, &rec)
	var out wal.Record
	n, err := wal.DecodeRecord(b, &out)
	require.NoError(t, err)
	require.Equal(t, len(b), n)
	return &out
}

// fullMessage sets every field a Message has.
func fullMessage() Message {
	return Message{
		DedupID: "order-7", Key: "api.example.com", Priority: High,
		Payload: []byte("payload"), Headers: map[string]string{"a": "1", "b": "2"},
		Delay: 3 * time.Second, Deadline: time.Unix(0, 1_900_000_000_000_000_000),
		TTL: time.Minute, MaxAttempts: 4,
	}
}

func TestMessageRecordMappingRoundTrips(t *testing.T) {
	for _, m := range []Message{{}, fullMessage(), {Payload: []byte{0, 255}, Priority: Background}} {
		const at = int64(1_800_000_000_000_000_000)
		rec := wal.Record{Kind: wal.KindEnqueue, ID: 1, Time: at}
		putMessage(&rec, &m, at)
		got := messageOf(roundTrip(t, rec))
		if len(m.Payload) == 0 {
			got.Payload, m.Payload = nil, nil
		}
		assert.Equal(t, m, got)
	}
}

// TestJournalRoundTripsEveryKind builds each kind of record with its
// constructor, encodes and decodes it, applies it after the records it
// needs, and compares the rebuilt state with what the constructor said.
func TestJournalRoundTripsEveryKind(t *testing.T) {
	const id = uint64(42)
	t0 := int64(1_800_000_000_000_000_000)
	m := fullMessage()
	enqueue := func() wal.Record {
		var r rec
		r.id.Store(id)
		r.fill(&m, 0, t0, 0, 0, nil, nil)
		var out wal.Record
		enqueueRecord(&out, &r, id)
		return out
	}
	// publish is the record of a Publish whose copies went to the default
	// queue and to queue 7.
	publish := func() wal.Record {
		out := enqueue()
		out.Kind, out.Copies = wal.KindPublish, []wal.Copy{{Queue: 0, ID: id}, {Queue: 7, ID: id + 1}}
		return out
	}
	// nightly is a schedule's record; tick its run's.
	nightly := func() wal.Record {
		r, err := scheduleRecord(&schedule{s: Schedule{Name: "nightly", Spec: "@daily", CatchUp: CatchUpAll,
			Message: Message{Payload: []byte("report")}}, anchor: t0 - 10, from: t0 - 10, last: t0 - 5, runs: 3}, t0)
		require.NoError(t, err)
		return r
	}
	tick := func() wal.Record {
		out := enqueue()
		(&scheduleTick{name: "nightly", at: t0 + 100}).stamp(&out)
		return out
	}
	fail := dlq.Failure{At: time.Unix(0, t0+10), Category: classify.Transient, Error: "503"}
	dead := deadLetterRecord(id, dlq.Failure{At: time.Unix(0, t0+20), Category: classify.Permanent, Error: "400"}, 2, "")

	type check func(t *testing.T, e *Engine, rs *replayState)
	// replayed is the message replay holds: its record (in the slab, owned
	// by replay) and the state the log left it in.
	type replayed struct {
		*rec
		state uint32
	}
	live := func(t *testing.T, rs *replayState) replayed {
		t.Helper()
		slot, r := rs.get(id)
		require.NotNil(t, r, "the message is live")
		require.Equal(t, id, r.id.Load(), "the record is the message's")
		require.Equal(t, stBusy, r.load().state(), "replay owns the record until restore publishes it")
		return replayed{r, rs.state(slot)}
	}
	held := func(rs *replayState) bool {
		_, r := rs.get(id)
		return r != nil
	}
	cases := []struct {
		kind   wal.Kind
		before []wal.Record
		rec    wal.Record
		check  check
	}{
		{wal.KindEnqueue, nil, enqueue(), func(t *testing.T, e *Engine, rs *replayState) {
			got := live(t, rs)
			msg := got.message()
			assert.Equal(t, m.Key, msg.Key)
			assert.Equal(t, m.Headers, msg.Headers)
			assert.Equal(t, m.Delay, msg.Delay)
			assert.Equal(t, m.TTL, msg.TTL)
			assert.Equal(t, m, msg, "every field of the Message")
			assert.Equal(t, t0, got.enqueuedAt)
			assert.Equal(t, t0+int64(m.TTL), got.expiresAt())
			assert.Equal(t, stDelayed, got.state, "a Delay makes it delayed")
			assert.Equal(t, t0+int64(m.Delay), got.at)
			first, dup := e.dedup.lookup(m.DedupID, t0, int64(time.Hour))
			assert.True(t, dup, "the DedupID is indexed")
			assert.Equal(t, id, first)
		}},
		{wal.KindPublish, []wal.Record{mustQueueRecord(t, 7, "emails", QueueOptions{})}, publish(), func(t *testing.T, e *Engine, rs *replayState) {
			for i, c := range []struct {
				queue   uint16
				dedupID string
			}{{0, m.DedupID + "/"}, {7, m.DedupID + "/emails"}} {
				slot, r := rs.get(id + uint64(i))
				require.NotNil(t, r, "copy %d is live", i)
				assert.Equal(t, c.queue, r.queue)
				want := m
				want.DedupID = c.dedupID
				assert.Equal(t, want, r.message(), "copy %d has every field of the message", i)
				assert.Equal(t, t0, r.enqueuedAt)
				assert.Equal(t, stDelayed, rs.state(slot))
				first, dup := e.dedup.lookup(c.dedupID, t0, int64(time.Hour))
				assert.True(t, dup, "copy %d's DedupID is indexed", i)
				assert.Equal(t, id+uint64(i), first)
			}
			assert.Equal(t, id+1, rs.maxID, "every copy's ID is taken")
		}},
		{wal.KindSchedule, nil, nightly(), func(t *testing.T, e *Engine, rs *replayState) {
			s := e.scheds.lookup("nightly")
			require.NotNil(t, s)
			assert.Equal(t, "@daily", s.s.Spec)
			assert.Equal(t, "report", string(s.s.Message.Payload))
			assert.Equal(t, CatchUpAll, s.s.CatchUp)
			assert.Equal(t, t0-5, s.last)
			assert.EqualValues(t, 3, s.runs)
			assert.False(t, s.broken)
		}},
		{wal.KindScheduleRemove, []wal.Record{nightly()}, wal.Record{Kind: wal.KindScheduleRemove, Key: "nightly", Time: t0}, func(t *testing.T, e *Engine, rs *replayState) {
			assert.Nil(t, e.scheds.lookup("nightly"))
		}},
		{wal.KindScheduleTick, []wal.Record{nightly()}, tick(), func(t *testing.T, e *Engine, rs *replayState) {
			got := live(t, rs)
			assert.Equal(t, m, got.message(), "the run's message")
			assert.Equal(t, stDelayed, got.state, "its Delay, not the tick, makes it delayed")
			s := e.scheds.lookup("nightly")
			assert.Equal(t, t0+100, s.last)
			assert.EqualValues(t, id, s.lastID)
			assert.EqualValues(t, 4, s.runs)
		}},
		{wal.KindQueue, nil, mustQueueRecord(t, 7, "emails", QueueOptions{MaxMessages: 3, LeaseTimeout: time.Minute,
			Policies: map[classify.Category]classify.RetryPolicy{classify.Transient: {MaxAttempts: 2}}}), func(t *testing.T, e *Engine, rs *replayState) {
			q := e.queues.at(7)
			require.NotNil(t, q, "the queue has the number the log gave it")
			assert.Equal(t, "emails", q.name)
			assert.Equal(t, 3, q.decl.MaxMessages)
			assert.Equal(t, int64(time.Minute), q.eff.Load().leaseTimeout)
			assert.Equal(t, 2, q.eff.Load().policies[classify.Transient].MaxAttempts)
		}},
		{wal.KindQueuePause, []wal.Record{mustQueueRecord(t, 7, "emails", QueueOptions{})},
			wal.Record{Kind: wal.KindQueuePause, Queue: 7, Key: "emails", Time: t0, Until: t0 + 1000}, func(t *testing.T, e *Engine, rs *replayState) {
				assert.Equal(t, t0+1000, e.queues.at(7).pausedUntil.Load())
			}},
		{wal.KindQueueResume, []wal.Record{mustQueueRecord(t, 7, "emails", QueueOptions{}),
			{Kind: wal.KindQueuePause, Queue: 7, Key: "emails", Time: t0, Until: untilResumed}},
			wal.Record{Kind: wal.KindQueueResume, Queue: 7, Key: "emails", Time: t0 + 5}, func(t *testing.T, e *Engine, rs *replayState) {
				assert.Zero(t, e.queues.at(7).pausedUntil.Load())
			}},
		{wal.KindQueueDelete, []wal.Record{mustQueueRecord(t, 7, "emails", QueueOptions{})},
			wal.Record{Kind: wal.KindQueueDelete, Queue: 7, Key: "emails", Time: t0}, func(t *testing.T, e *Engine, rs *replayState) {
				_, err := e.queueNamed("emails", false)
				assert.ErrorIs(t, err, ErrNotFound, "the name is free again")
				// This engine has no log, so the number is free at once
				// (a durable one retires it until a checkpoint).
				assert.Nil(t, e.queues.at(7), "the number is free")
			}},
		{wal.KindLease, []wal.Record{enqueue()}, leaseRecord(id, t0+5, 3, t0+99), func(t *testing.T, e *Engine, rs *replayState) {
			got := live(t, rs)
			assert.Equal(t, stLeased, got.state)
			assert.EqualValues(t, 3, got.attempts())
		}},
		{wal.KindExtend, []wal.Record{enqueue(), leaseRecord(id, t0+5, 1, t0+99)}, extendRecord(id, t0+6, t0+500), func(t *testing.T, e *Engine, rs *replayState) {
			assert.Equal(t, stLeased, live(t, rs).state, "an extend changes nothing durable")
		}},
		{wal.KindAck, []wal.Record{enqueue()}, ackRecord(id, t0+7), func(t *testing.T, e *Engine, rs *replayState) {
			assert.False(t, held(rs))
			assert.Zero(t, rs.count)
		}},
		{wal.KindNack, []wal.Record{enqueue(), leaseRecord(id, t0+5, 1, t0+99)}, nackRecord(id, fail, 1, t0+1000), func(t *testing.T, e *Engine, rs *replayState) {
			got := live(t, rs)
			assert.Equal(t, stDelayed, got.state)
			assert.Equal(t, t0+1000, got.at)
			text, cat := got.fails.Load().last()
			assert.Equal(t, fail.Error, text)
			assert.Equal(t, fail.Category, cat)
		}},
		{wal.KindRequeue, []wal.Record{enqueue(), leaseRecord(id, t0+5, 2, t0+99)}, requeueRecord(id, t0+8, 2, 1), func(t *testing.T, e *Engine, rs *replayState) {
			got := live(t, rs)
			assert.Equal(t, stPending, got.state)
			assert.EqualValues(t, 2, got.attempts())
			assert.EqualValues(t, 1, got.crashes.Load())
			assert.Equal(t, t0+8, got.at, "pending since the requeue")
		}},
		{wal.KindFailure, []wal.Record{enqueue()}, failureRecord(id, fail), func(t *testing.T, e *Engine, rs *replayState) {
			got := live(t, rs)
			require.NotNil(t, got.fails.Load())
			assert.Equal(t, []dlq.Failure{fail}, got.fails.Load().failures)
		}},
		{wal.KindDeadLetter, []wal.Record{enqueue(), failureRecord(id, fail)}, deadLetterRecord(id, dlq.Failure{At: time.Unix(0, t0+20), Category: classify.Permanent, Error: "400"}, 2, "snap-dedup"), func(t *testing.T, e *Engine, rs *replayState) {
			assert.False(t, held(rs), "no longer live")
			d, ok := e.dead.Get(id)
			require.True(t, ok)
			assert.Equal(t, classify.Permanent, d.Category)
			assert.Equal(t, 2, d.Attempts)
			assert.Equal(t, "snap-dedup", d.Message.DedupID, "a snapshot's record carries the DedupID")
			require.Len(t, d.Failures, 2)
			assert.Equal(t, "400", d.Failures[1].Error, "the verdict ends the history")
			assert.Equal(t, time.Unix(0, t0+20), d.DeadAt)
		}},
		{wal.KindRedrive, []wal.Record{enqueue(), dead}, redriveRecord(id, t0+30), func(t *testing.T, e *Engine, rs *replayState) {
			_, ok := e.dead.Get(id)
			assert.False(t, ok, "no longer a dead letter")
			assert.Equal(t, id, rs.redriven, "the enqueue record that follows is not a first enqueue")
		}},
		{wal.KindPurge, []wal.Record{enqueue(), dead}, purgeRecord(id, t0+30), func(t *testing.T, e *Engine, rs *replayState) {
			_, ok := e.dead.Get(id)
			assert.False(t, ok)
			assert.False(t, held(rs))
		}},
		{wal.KindReview, []wal.Record{enqueue(), dead}, reviewRecord(id, t0+40, "seen"), func(t *testing.T, e *Engine, rs *replayState) {
			d, ok := e.dead.Get(id)
			require.True(t, ok)
			assert.True(t, d.Reviewed)
			assert.Equal(t, "seen", d.Note)
			assert.Equal(t, time.Unix(0, t0+40), d.ReviewedAt)
		}},
		{wal.KindDedup, nil, dedupRecord("d-1", id, t0), func(t *testing.T, e *Engine, rs *replayState) {
			first, dup := e.dedup.lookup("d-1", t0+1, int64(time.Hour))
			assert.True(t, dup)
			assert.Equal(t, id, first)
		}},
		{wal.KindPause, nil, pauseRecord("k", t0+500, t0), func(t *testing.T, e *Engine, rs *replayState) {
			assert.Equal(t, map[string]int64{"k": t0 + 500}, rs.pauses)
		}},
		{wal.KindResume, []wal.Record{pauseRecord("", untilResumed, t0)}, resumeRecord("", t0+1), func(t *testing.T, e *Engine, rs *replayState) {
			assert.Equal(t, map[string]int64{"": 0}, rs.pauses, "the pause of all delivery ended")
		}},
		{wal.KindCancel, []wal.Record{enqueue()}, cancelRecord(id, t0+9), func(t *testing.T, e *Engine, rs *replayState) {
			assert.False(t, held(rs), "cancelled: gone for good")
		}},
		{wal.KindCheckpoint, nil, checkpointRecord(1000, t0, newSlab(17)), func(t *testing.T, e *Engine, rs *replayState) {
			assert.EqualValues(t, 999, rs.maxID, "IDs below the checkpoint's next ID are taken")
			assert.EqualValues(t, 17, rs.bits(), "replay's slab grows to the snapshot's size")
		}},
	}
	covered := map[wal.Kind]bool{}
	for _, c := range cases {
		t.Run(c.kind.String(), func(t *testing.T) {
			require.Equal(t, c.kind, c.rec.Kind, "the constructor's kind")
			covered[c.kind] = true
			e := openEngine(t, "", Options{Clock: clock.NewFake(time.Unix(0, t0))})
			rs := newReplayState(10)
			// As replay does: prepared (on a decoding goroutine), then applied.
			prepare := rs.newPreparer()
			replay := func(r wal.Record) {
				got := roundTrip(t, r)
				prepare(got)
				e.apply(rs, got)
			}
			for _, b := range c.before {
				replay(b)
			}
			replay(c.rec)
			c.check(t, e, rs)
		})
	}
	for k := wal.KindEnqueue; k.Valid(); k++ {
		assert.True(t, covered[k], "record kind %v has no round-trip case", k)
	}
}

// TestPlainRecordsNeedNoMore: replay fills a plain record's message
// without building it (plainRecord); that must be exactly a message that
// sets none of the options msgMore holds.
func TestPlainRecordsNeedNoMore(t *testing.T) {
	for _, tt := range []struct {
		name  string
		r     wal.Record
		plain bool
	}{
		{"payload, key and priority", wal.Record{Payload: []byte("x"), Key: "k", Priority: 2, Attempt: 3, Crashes: 1}, true},
		{"nothing", wal.Record{}, true},
		{"dedup ID", wal.Record{DedupID: "d"}, false},
		{"headers", wal.Record{Headers: []string{"a", "b"}}, false},
		{"delay", wal.Record{Time: 1, NotBefore: 5}, false},
		{"deadline", wal.Record{Deadline: 9}, false},
		{"TTL", wal.Record{Time: 1, ExpiresAt: 9}, false},
		{"max attempts", wal.Record{MaxAttempts: 2}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := messageOf(&tt.r)
			assert.Equal(t, tt.plain, plainRecord(&tt.r))
			assert.Equal(t, tt.plain, !needsMore(&m), "plainRecord agrees with needsMore")
		})
	}
}

func mustQueueRecord(t *testing.T, num uint16, name string, o QueueOptions) wal.Record {
	t.Helper()
	r, err := queueRecord(num, name, o, 1)
	require.NoError(t, err)
	return r
}

func TestRecordOfAnUnknownKindStopsReplay(t *testing.T) {
	e := openEngine(t, "", Options{})
	rs := newReplayState(10)
	e.apply(rs, &wal.Record{Kind: wal.Kind(99), ID: 1})
	assert.ErrorIs(t, rs.err, ErrVersion, "a kind a newer build wrote is refused, not skipped")
}
