package ringwal_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// updateFixture makes TestWriteBeforeQueuesFixture rewrite
// testdata/before-queues: go test -run WriteBeforeQueuesFixture -update-fixture .
var updateFixture = flag.Bool("update-fixture", false, "rewrite testdata/before-queues with this build's engine")

// beforeQueuesDir is a data directory written by the engine as it was before
// named queues (issue #26) changed the log format. It must never be rewritten
// by a build that has queues: it stands for the directories users already
// have.
var beforeQueuesDir = filepath.Join("testdata", "before-queues")

// The fixture's clock. Every message i is enqueued at fixtureStart + i
// seconds; what happens after the checkpoint happens at fixtureTail; the
// replay test opens the copy at fixtureReopen. Due times and pauses end in
// 2100, so they are still ahead even for a test that one day reads the
// fixture with the real clock.
var (
	fixtureStart  = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fixtureTail   = fixtureStart.Add(time.Minute)
	fixtureReopen = fixtureStart.Add(time.Hour)
	farDue        = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	farRetry      = time.Date(2100, 2, 1, 0, 0, 0, 0, time.UTC)
	farPause      = time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC)
)

func fixtureEnqueuedAt(id ringwal.ID) time.Time {
	return fixtureStart.Add(time.Duration(id) * time.Second)
}

// fixtureOptions are the options the fixture is written and read with. The
// dedup window is long enough that the fixture's DedupIDs are still
// remembered at fixtureReopen, and the leases taken before the checkpoint
// last past fixtureTail.
func fixtureOptions(c clock.Clock) ringwal.Options {
	return ringwal.Options{Clock: c, DedupWindow: 24 * time.Hour, LeaseTimeout: 24 * time.Hour}
}

// fixtureMsg is one message of the fixture: how the generator makes it, and
// what a replay must find. It is written once, here, for both.
type fixtureMsg struct {
	id  ringwal.ID // IDs count from 1 in table order
	msg ringwal.Message
	// tail: enqueued after the checkpoint, so it is in the log only; the
	// others are in the snapshot, with their later records in the log.
	tail bool
	// lease: leased before the checkpoint (the snapshot holds the lease,
	// unless the nack came before it too).
	lease bool
	// nack settles the lease with this cause: before the checkpoint, or
	// after it (nackInTail). A lease without a nack is still held at Close.
	nack       error
	nackInTail bool
	// retryAt: the nack's classify.After delay ends here.
	retryAt time.Time
	// review: MarkReviewed's note for a dead letter, after the checkpoint.
	review string
	// cancel: cancelled after the checkpoint; Get must not find it.
	cancel bool

	// What Get (or DeadLetter) finds after the replay.
	state     ringwal.State
	attempts  int
	category  classify.Category // LastCategory, or a dead letter's Category
	lastError string
	nextAt    time.Time
}

// fixturePause is a PauseKey of the fixture.
type fixturePause struct {
	key   string
	until time.Time // zero: until ResumeKey
	tail  bool      // paused after the checkpoint
}

var (
	errRejected = classify.Mark(errors.New("schema mismatch"), classify.Permanent)
	errUpstream = classify.Mark(errors.New("upstream 503"), classify.Transient)
)

// fixtureMessages is what testdata/before-queues holds. The leased ones come
// first: each is leased while it is the only ready message, so the
// generator knows which one Dequeue hands out.
var fixtureMessages = []fixtureMsg{
	{
		id: 1, lease: true, nack: errRejected, review: "checked: producer sent v1 schema",
		msg: ringwal.Message{Key: "billing", Priority: ringwal.High, Payload: []byte(`{"invoice":17}`),
			Headers: map[string]string{"trace": "t-1"}},
		state: ringwal.Dead, attempts: 1, category: classify.Permanent, lastError: "schema mismatch",
	},
	{
		id: 2, lease: true, nack: errUpstream, nackInTail: true,
		msg:   ringwal.Message{Key: "billing", Payload: []byte(`{"invoice":18}`), MaxAttempts: 1},
		state: ringwal.Dead, attempts: 1, category: classify.Transient, lastError: "upstream 503",
	},
	{
		id: 3, lease: true, nack: errUpstream, nackInTail: true, retryAt: farRetry,
		msg:   ringwal.Message{Key: "mail", Priority: ringwal.Low, Payload: []byte("to: a@example.com")},
		state: ringwal.Delayed, attempts: 1, category: classify.Transient, lastError: "upstream 503", nextAt: farRetry,
	},
	{
		// Still leased at Close: Close logs it back as pending, its attempt
		// counted.
		id: 4, lease: true,
		msg:   ringwal.Message{Payload: []byte("leased at close"), Headers: map[string]string{"a": "1", "b": "2"}},
		state: ringwal.Pending, attempts: 1,
	},
	{
		id: 5,
		msg: ringwal.Message{Key: "acct-1", Priority: ringwal.Critical, Payload: []byte("critical, with a deadline"),
			Headers: map[string]string{"tenant": "acme", "content-type": "text/plain"}, Deadline: farDue},
		state: ringwal.Pending,
	},
	{
		id:    6,
		msg:   ringwal.Message{Priority: ringwal.Low, Payload: []byte{0, 1, 2, 0xfe, 0xff}, TTL: 1000 * time.Hour},
		state: ringwal.Pending,
	},
	{
		id:    7,
		msg:   ringwal.Message{Key: "acct-2", Priority: ringwal.Background, Payload: []byte("its key is paused")},
		state: ringwal.Pending,
	},
	{
		id:    8,
		msg:   ringwal.Message{Key: "acct-1", Priority: ringwal.High, Payload: []byte("delayed"), Delay: farDue.Sub(fixtureEnqueuedAt(8))},
		state: ringwal.Delayed, nextAt: farDue,
	},
	{
		id:    9,
		msg:   ringwal.Message{DedupID: "order-42", Payload: []byte("deduplicated")},
		state: ringwal.Pending,
	},
	{
		id: 10, cancel: true,
		msg: ringwal.Message{Payload: []byte("cancelled after the checkpoint")},
	},
	// The log's tail, after the checkpoint.
	{
		id: 11, tail: true,
		msg:   ringwal.Message{Key: "acct-1", Payload: []byte("in the log only")},
		state: ringwal.Pending,
	},
	{
		id: 12, tail: true,
		msg: ringwal.Message{Priority: ringwal.Critical, Payload: []byte("delayed, in the log only"),
			Delay: farDue.Sub(fixtureEnqueuedAt(12)), MaxAttempts: 7},
		state: ringwal.Delayed, nextAt: farDue,
	},
	{
		id: 13, tail: true,
		msg:   ringwal.Message{DedupID: "order-43", Key: "acct-9", Priority: ringwal.High, Payload: []byte("dedup and paused key, in the log only")},
		state: ringwal.Pending,
	},
}

var fixturePauses = []fixturePause{
	{key: "acct-2", until: farPause},
	{key: "acct-9", tail: true},
}

// TestWriteBeforeQueuesFixture writes testdata/before-queues. It is skipped
// unless -update-fixture is given, and must only ever be run by a build from
// before named queues: its point is to keep a directory that today's engine
// wrote.
func TestWriteBeforeQueuesFixture(t *testing.T) {
	if !*updateFixture {
		t.Skip("rewrites testdata/before-queues; run with -update-fixture")
	}
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(fixtureStart)
	e, err := ringwal.Open(dir, fixtureOptions(clk))
	require.NoError(t, err)
	defer func() { _ = e.Close() }()

	leases := map[ringwal.ID]ringwal.Lease{}
	settle := func(m fixtureMsg) {
		err := m.nack
		if !m.retryAt.IsZero() {
			err = classify.After(err, m.retryAt.Sub(clk.Now()))
		}
		require.NoError(t, e.Nack(leases[m.id], err), "message %d", m.id)
	}
	enqueue := func(m fixtureMsg) {
		clk.Set(fixtureEnqueuedAt(m.id))
		id, err := e.Enqueue(ctx, m.msg)
		require.NoError(t, err)
		require.Equal(t, m.id, id, "IDs count from 1 in table order")
		if m.lease {
			d := enginetest.Dequeue(t, e)
			require.Equal(t, m.id, d.ID, "a leased message is leased while it is the only one ready")
			leases[m.id] = d.Lease
			if m.nack != nil && !m.nackInTail {
				settle(m)
			}
		}
	}
	for _, m := range fixtureMessages {
		if !m.tail {
			enqueue(m)
		}
	}
	for _, p := range fixturePauses {
		if !p.tail {
			require.NoError(t, e.PauseKey(p.key, p.until))
		}
	}
	require.NoError(t, e.Checkpoint())

	for _, m := range fixtureMessages {
		if m.tail {
			require.False(t, m.lease, "the table leases before the checkpoint only")
			enqueue(m)
		}
	}
	clk.Set(fixtureTail)
	for _, m := range fixtureMessages {
		switch {
		case m.nack != nil && m.nackInTail:
			settle(m)
		case m.cancel:
			require.NoError(t, e.Cancel(m.id))
		}
		if m.review != "" {
			require.NoError(t, e.MarkReviewed(m.id, m.review))
		}
	}
	for _, p := range fixturePauses {
		if p.tail {
			require.NoError(t, e.PauseKey(p.key, p.until))
		}
	}
	require.NoError(t, e.Pause(time.Time{}))
	require.NoError(t, e.Close())

	require.NoError(t, os.RemoveAll(beforeQueuesDir))
	copyDataDir(t, dir, beforeQueuesDir, 0o755, 0o644)
	// The lock file is no part of the fixture.
	if err := os.Remove(filepath.Join(beforeQueuesDir, "LOCK")); !errors.Is(err, fs.ErrNotExist) {
		require.NoError(t, err)
	}
}

// TestLogFromBeforeQueuesReplaysIntoTheDefaultQueue opens a copy of
// testdata/before-queues, a data directory written by the engine before
// named queues (issue #26) changed the log format, and checks that every
// message, dead letter, pause and DedupID in it comes back as it was
// (fixtureMessages and fixturePauses describe them), and that Dequeue
// hands out the messages once delivery is resumed. The directory holds both
// of replay's sources, and the test checks that it does (as committed; the
// numbers are batch indexes, which a rewrite may shift, since they depend on
// how the log's writer grouped the appends):
//
//	FORMAT                             format version 1
//	HINT                               what Close left for the next Open
//	log/00000000000000000013           the tail after the checkpoint (10 records)
//	snap-00000000000000000012.zst      the checkpoint's snapshot (18 records)
//
// Once named queues exist, this test will also check that every message is
// in the default queue: that Stats.Queues lists only the queue "" and that
// Queues() returns only "".
func TestLogFromBeforeQueuesReplaysIntoTheDefaultQueue(t *testing.T) {
	snaps, err := filepath.Glob(filepath.Join(beforeQueuesDir, "snap-*.zst"))
	require.NoError(t, err)
	require.Len(t, snaps, 1, "the fixture holds a snapshot")
	segs, err := filepath.Glob(filepath.Join(beforeQueuesDir, "log", "[0-9]*"))
	require.NoError(t, err)
	require.NotEmpty(t, segs, "the fixture holds a log segment")

	dir := filepath.Join(t.TempDir(), "data")
	copyDataDir(t, beforeQueuesDir, dir, 0o700, 0o600)
	e := enginetest.Open(t, dir, fixtureOptions(clock.NewFake(fixtureReopen)))

	for i, m := range fixtureMessages {
		require.Equal(t, ringwal.ID(i+1), m.id, "the table lists the messages by ID, from 1")
	}
	pausedKeys := map[string]bool{}
	for _, p := range fixturePauses {
		pausedKeys[p.key] = true
	}
	var (
		live, dead, ready []ringwal.ID
		want              = ringwal.Stats{
			PendingByPriority: map[ringwal.Priority]int{},
			DelayedByPriority: map[ringwal.Priority]int{},
			DeadByCategory:    map[classify.Category]int{},
		}
	)
	for _, m := range fixtureMessages {
		info, err := e.Get(m.id)
		if m.cancel {
			assert.ErrorIs(t, err, ringwal.ErrNotFound, "message %d was cancelled", m.id)
			continue
		}
		if !assert.NoError(t, err, "message %d", m.id) {
			continue
		}
		assert.Equal(t, m.state, info.State, "message %d", m.id)
		assert.Equal(t, m.attempts, info.Attempts, "message %d", m.id)
		assert.Equal(t, inUTC(m.msg), inUTC(info.Message), "message %d", m.id)
		switch m.state {
		case ringwal.Dead:
			dead = append(dead, m.id)
			want.Dead++
			want.DeadByCategory[m.category]++
			checkFixtureDeadLetter(t, e, m)
			continue
		case ringwal.Pending:
			want.Pending++
			want.PendingByPriority[m.msg.Priority]++
			if !pausedKeys[m.msg.Key] {
				ready = append(ready, m.id)
			}
			assert.Equal(t, ringwal.WaitPaused, info.Waiting, "message %d: all delivery is paused", m.id)
		case ringwal.Delayed:
			want.Delayed++
			want.DelayedByPriority[m.msg.Priority]++
			assert.Equal(t, ringwal.NotWaiting, info.Waiting, "message %d", m.id)
		}
		live = append(live, m.id)
		assert.Equal(t, fixtureEnqueuedAt(m.id), info.EnqueuedAt.UTC(), "message %d", m.id)
		assert.Equal(t, m.nextAt, info.NextAt.UTC(), "message %d", m.id)
		assert.Equal(t, m.lastError, info.LastError, "message %d", m.id)
		assert.Equal(t, m.category, info.LastCategory, "message %d", m.id)
	}
	var gotLive []ringwal.ID
	for info := range e.Messages(ringwal.Filter{}) {
		gotLive = append(gotLive, info.ID)
	}
	slices.Sort(gotLive)
	assert.Equal(t, live, gotLive, "the live messages, and no other")
	dls, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	var gotDead []ringwal.ID
	for _, d := range dls {
		gotDead = append(gotDead, d.ID)
	}
	slices.Sort(gotDead)
	assert.Equal(t, dead, gotDead, "the dead letters, and no other")

	for _, p := range fixturePauses {
		paused, until := e.KeyPause(p.key)
		assert.True(t, paused, "key %q", p.key)
		assert.Equal(t, p.until, until.UTC(), "key %q", p.key)
	}
	paused, until := e.KeyPause("")
	assert.True(t, paused, "delivery as a whole is paused")
	assert.Zero(t, until, "until Resume")
	_, ok := e.TryDequeue()
	assert.False(t, ok, "a paused engine hands nothing out")

	// Stats.Waiting is left out: it counts the messages a consumer has set
	// aside, which depends on what was dequeued since Open, not on the log.
	st := e.Stats()
	assert.Equal(t, want.Pending, st.Pending, "Pending")
	assert.Equal(t, want.Delayed, st.Delayed, "Delayed")
	assert.Zero(t, st.Leased, "Leased")
	assert.Zero(t, st.Held, "Held")
	assert.Equal(t, want.Dead, st.Dead, "Dead")
	assert.True(t, st.DeliveryPaused, "DeliveryPaused")
	for _, p := range []ringwal.Priority{ringwal.Background, ringwal.Low, ringwal.Normal, ringwal.High, ringwal.Critical} {
		assert.Equal(t, want.PendingByPriority[p], st.PendingByPriority[p], "pending %s", p)
		assert.Equal(t, want.DelayedByPriority[p], st.DelayedByPriority[p], "delayed %s", p)
	}
	for _, c := range classify.Categories() {
		assert.Equal(t, want.DeadByCategory[c], st.DeadByCategory[c], "dead %s", c)
	}
	assert.Zero(t, st.Recovery.Crashed, "Close gave the lease back: no crash")
	assert.Zero(t, st.Recovery.TornBytes)
	assert.NotZero(t, st.Recovery.Records, "the tail after the snapshot is replayed")

	// The dedup index is rebuilt: a repeat gets the first message's ID.
	for _, m := range fixtureMessages {
		if m.msg.DedupID == "" {
			continue
		}
		id, err := e.TryEnqueue(ringwal.Message{DedupID: m.msg.DedupID, Payload: []byte("again")})
		assert.ErrorIs(t, err, ringwal.ErrDuplicate, "DedupID %q", m.msg.DedupID)
		assert.Equal(t, m.id, id, "DedupID %q", m.msg.DedupID)
	}

	// Resumed, Dequeue hands out every pending message whose key is not
	// paused, and only those; the others wait on their key.
	require.NoError(t, e.Resume())
	var delivered []ringwal.ID
	for range ready {
		d := enginetest.Dequeue(t, e)
		delivered = append(delivered, d.ID)
		if assert.True(t, slices.Contains(ready, d.ID), "delivery of %d", d.ID) {
			assert.Equal(t, inUTC(fixtureMessages[d.ID-1].msg), inUTC(d.Message), "delivery of %d", d.ID)
		}
	}
	slices.Sort(delivered)
	assert.Equal(t, ready, delivered, "the pending messages of keys not paused")
	_, ok = e.TryDequeue()
	assert.False(t, ok, "nothing else is ready")
	for _, m := range fixtureMessages {
		if m.state == ringwal.Pending && pausedKeys[m.msg.Key] {
			info, err := e.Get(m.id)
			require.NoError(t, err)
			assert.Equal(t, ringwal.WaitPaused, info.Waiting, "message %d: its key is paused", m.id)
		}
	}

	last := fixtureMessages[len(fixtureMessages)-1].id
	id, err := e.TryEnqueue(ringwal.Message{Payload: []byte("new")})
	require.NoError(t, err)
	assert.Greater(t, id, last, "IDs go on after the fixture's")
}

// inUTC returns m with its Deadline in UTC, as the table writes it (replay
// gives times in the local zone).
func inUTC(m ringwal.Message) ringwal.Message {
	m.Deadline = m.Deadline.UTC()
	return m
}

// checkFixtureDeadLetter checks the dead letter m became.
func checkFixtureDeadLetter(t *testing.T, e *ringwal.Engine, m fixtureMsg) {
	t.Helper()
	d, err := e.DeadLetter(m.id)
	if !assert.NoError(t, err, "dead letter %d", m.id) {
		return
	}
	assert.Equal(t, m.category, d.Category, "dead letter %d", m.id)
	assert.Equal(t, m.msg.Key, d.Key, "dead letter %d", m.id)
	assert.Equal(t, inUTC(m.msg), inUTC(d.Message), "dead letter %d", m.id)
	assert.Equal(t, m.attempts, d.Attempts, "dead letter %d", m.id)
	deadAt := fixtureEnqueuedAt(m.id)
	if m.nackInTail {
		deadAt = fixtureTail
	}
	assert.Equal(t, deadAt, d.DeadAt.UTC(), "dead letter %d", m.id)
	assert.Equal(t, deadAt, d.FirstFailedAt.UTC(), "dead letter %d", m.id)
	if assert.Len(t, d.Failures, 1, "dead letter %d", m.id) {
		f := d.Failures[0]
		assert.Equal(t, m.category, f.Category, "dead letter %d", m.id)
		assert.Equal(t, m.lastError, f.Error, "dead letter %d", m.id)
		assert.Equal(t, deadAt, f.At.UTC(), "dead letter %d", m.id)
	}
	assert.Equal(t, m.review != "", d.Reviewed, "dead letter %d", m.id)
	assert.Equal(t, m.review, d.Note, "dead letter %d", m.id)
	if m.review != "" {
		assert.Equal(t, fixtureTail, d.ReviewedAt.UTC(), "dead letter %d", m.id)
	} else {
		assert.Zero(t, d.ReviewedAt, "dead letter %d", m.id)
	}
}

// copyDataDir copies the data directory src to dst with the given modes.
// Git keeps no modes but the executable bit, and Open refuses a directory
// that group or others may write, so the replay test sets them itself.
func copyDataDir(t *testing.T, src, dst string, dirMode, fileMode fs.FileMode) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if err := os.MkdirAll(target, dirMode); err != nil {
				return err
			}
			return os.Chmod(target, dirMode) // whatever the umask
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
		return os.Chmod(target, fileMode)
	}))
}
