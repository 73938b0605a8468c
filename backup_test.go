package ringwal_test

import (
	"bytes"
	"cmp"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

var backupEpoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// backupOptions: an ordered key, breakers that trip at the first failure
// and stay open (so a key's next message is held), long leases.
func backupOptions(clk clock.Clock) ringwal.Options {
	return ringwal.Options{
		Clock:        clk,
		Durability:   ringwal.Write,
		LeaseTimeout: time.Hour,
		KeyPolicy: func(key string) ringwal.KeyPolicy {
			return ringwal.KeyPolicy{Ordered: key == "ordered"}
		},
		Breaker: breaker.Options{ConsecutiveFailures: 1, OpenTimeout: 10 * time.Hour, MaxOpenTimeout: 10 * time.Hour},
	}
}

// engineView is what the round trip compares: every message, dead letter,
// schedule, queue and the key pause, in a stable order.
type engineView struct {
	Messages    []ringwal.Info
	DeadLetters []ringwal.DeadLetter
	Schedules   []ringwal.ScheduleInfo
	Queues      []ringwal.QueueInfo
	KeyPaused   bool
	KeyUntil    time.Time
}

func viewOf(t *testing.T, e *ringwal.Engine) engineView {
	t.Helper()
	var v engineView
	for in := range e.Messages(ringwal.Filter{}) {
		v.Messages = append(v.Messages, in)
	}
	slices.SortFunc(v.Messages, func(a, b ringwal.Info) int { return cmp.Compare(a.ID, b.ID) })
	dls, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	slices.SortFunc(dls, func(a, b ringwal.DeadLetter) int { return cmp.Compare(a.ID, b.ID) })
	v.DeadLetters = dls
	v.Schedules = e.Schedules()
	v.Queues = e.Queues()
	v.KeyPaused, v.KeyUntil = e.KeyPause("paused")
	return v
}

// fillEveryState leaves e with messages in every state (pending, delayed,
// leased, held, waiting on an ordered key, waiting on a paused key, with a
// TTL, unique, deduplicated), dead letters (one reviewed with a note), a
// named queue with options and a topic, paused, holding a published
// message, a schedule that ran once, and a paused key. It returns the ID
// of the leased message.
func fillEveryState(t *testing.T, e *ringwal.Engine, clk *clock.Fake) (leased ringwal.ID) {
	t.Helper()
	ctx := ctxBG
	enq := func(m ringwal.Message) ringwal.ID {
		t.Helper()
		id, err := e.Enqueue(ctx, m)
		require.NoError(t, err)
		return id
	}
	// An ordered key: its head leased, the next one waits behind it.
	head := enq(ringwal.Message{Key: "ordered", Payload: []byte("o1")})
	enq(ringwal.Message{Key: "ordered", Payload: []byte("o2")})
	d, err := e.Dequeue(ctx)
	require.NoError(t, err)
	require.Equal(t, head, d.ID)
	_, ok := e.TryDequeue() // meets o2 behind its key's head
	require.False(t, ok)
	// A breaker opened by a failure: the key's retry and its next message are held.
	enq(ringwal.Message{Key: "flaky", Payload: []byte("f1")})
	f, err := e.Dequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, e.Nack(f.Lease, classify.Mark(errors.New("503"), classify.Transient)))
	enq(ringwal.Message{Key: "flaky", Payload: []byte("f2")})
	_, ok = e.TryDequeue()
	require.False(t, ok)
	// Dead letters, one reviewed with a note.
	for i, key := range []string{"dead1", "dead2"} {
		enq(ringwal.Message{Key: key, Payload: []byte(key), Headers: map[string]string{"n": key}})
		dd, err := e.Dequeue(ctx)
		require.NoError(t, err)
		require.NoError(t, e.Nack(dd.Lease, classify.Mark(errors.New("bad input"), classify.Permanent)))
		if i == 0 {
			require.NoError(t, e.MarkReviewed(dd.ID, "checked by ops"))
		}
	}
	// A paused key with a message.
	require.NoError(t, e.PauseKey("paused", clk.Now().Add(5*time.Hour)))
	enq(ringwal.Message{Key: "paused", Payload: []byte("p")})
	// Plain, delayed, TTL, deduplicated, unique, deadline, high priority.
	enq(ringwal.Message{Payload: []byte("plain"), Headers: map[string]string{"h": "v"}})
	enq(ringwal.Message{Payload: []byte("later"), Delay: 2 * time.Hour})
	enq(ringwal.Message{Payload: []byte("ttl"), TTL: 3 * time.Hour})
	enq(ringwal.Message{Payload: []byte("dedup"), DedupID: "order-1"})
	enq(ringwal.Message{Payload: []byte("unique"), DedupID: "u", Unique: ringwal.UniqueQueued})
	enq(ringwal.Message{Payload: []byte("urgent"), Priority: ringwal.Priority(1), Deadline: clk.Now().Add(time.Hour)})
	// A named queue with options and a topic, paused, with a published message.
	require.NoError(t, e.DeclareQueue("emails", ringwal.QueueOptions{MaxMessages: 100, LeaseTimeout: time.Minute, Topics: []string{"signup"}}))
	_, err = e.Publish(ctx, "signup", ringwal.Message{Payload: []byte("welcome")})
	require.NoError(t, err)
	require.NoError(t, e.Queue("emails").Pause(clk.Now().Add(6*time.Hour)))
	// A schedule that ran once (its last tick and ID kept).
	require.NoError(t, e.AddSchedule(ringwal.Schedule{Name: "nightly", Spec: "@every 24h", Message: ringwal.Message{Payload: []byte("report")}}))
	_, err = e.TriggerSchedule("nightly")
	require.NoError(t, err)
	return head
}

// A backup restored into an empty directory opens to the state the engine
// had at the backup point: every message in its state, dead letters with
// their review, queues with options, topics and pause, schedules with their
// last run, key pauses and the dedup and unique indexes. The engine is
// quiet while the backup runs, so its backup point is its state at Close:
// the restored copy must read exactly as the source reopened after Close
// (a restart forgets breakers and hands leases back in both).
func TestBackupRestoresEveryState(t *testing.T) {
	clk := clock.NewFake(backupEpoch)
	srcDir := t.TempDir()
	src, err := ringwal.Open(srcDir, backupOptions(clk))
	require.NoError(t, err)
	t.Cleanup(func() { _ = src.Close() })
	leased := fillEveryState(t, src, clk)

	before := viewOf(t, src)
	states := map[ringwal.State]bool{}
	for _, in := range before.Messages {
		states[in.State] = true
	}
	for _, s := range []ringwal.State{ringwal.Pending, ringwal.Delayed, ringwal.Leased, ringwal.Held} {
		require.True(t, states[s], "the source holds no %v message: %v", s, slices.Collect(maps.Keys(states)))
	}

	var buf bytes.Buffer
	info, err := src.Backup(&buf)
	require.NoError(t, err)
	assert.Equal(t, len(before.Messages), info.Messages)
	assert.Equal(t, 2, info.DeadLetters)
	assert.Equal(t, 1, info.Queues)
	assert.Equal(t, 1, info.Schedules)
	assert.Positive(t, info.Bytes)
	require.NoError(t, src.Close())

	dir := filepath.Join(t.TempDir(), "restored")
	rinfo, err := ringwal.Restore(bytes.NewReader(buf.Bytes()), dir)
	require.NoError(t, err)
	assert.Equal(t, info, rinfo)

	reopened, err := ringwal.Open(srcDir, backupOptions(clock.NewFake(backupEpoch)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = reopened.Close() })
	want := viewOf(t, reopened)
	dst, err := ringwal.Open(dir, backupOptions(clock.NewFake(backupEpoch)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = dst.Close() })
	got := viewOf(t, dst)

	require.Len(t, got.Messages, len(before.Messages))
	assert.Equal(t, want.Messages, got.Messages)
	assert.Equal(t, want.DeadLetters, got.DeadLetters)
	assert.Equal(t, want.Schedules, got.Schedules)
	assert.Equal(t, want.Queues, got.Queues)
	assert.Equal(t, want.KeyPaused, got.KeyPaused)
	assert.Equal(t, want.KeyUntil, got.KeyUntil)
	assert.True(t, got.KeyPaused)

	// The leased message is back pending with its attempt counted, as
	// after a crash; the reviewed dead letter kept its note.
	in, err := dst.Get(leased)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, in.State)
	assert.Equal(t, 1, in.Attempts)
	reviewed := 0
	for _, dl := range got.DeadLetters {
		if dl.Reviewed {
			reviewed++
			assert.Equal(t, "checked by ops", dl.Note)
		}
	}
	assert.Equal(t, 1, reviewed)

	// The dedup index and the unique entry came along.
	_, err = dst.Enqueue(ctxBG, ringwal.Message{Payload: []byte("again"), DedupID: "order-1"})
	assert.ErrorIs(t, err, ringwal.ErrDuplicate)
	_, err = dst.Enqueue(ctxBG, ringwal.Message{Payload: []byte("again"), DedupID: "u", Unique: ringwal.UniqueQueued})
	assert.ErrorIs(t, err, ringwal.ErrDuplicate)
}
