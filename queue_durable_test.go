package ringwal_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

// queuesState is what a reopened engine must show of the queues test's
// work: each message by ID, in its queue and state.
type queuedMessage struct {
	queue   string
	state   ringwal.State
	payload string
}

func TestQueuesAndTheirMessagesSurviveReopen(t *testing.T) {
	for _, checkpoint := range []bool{false, true} {
		name := "log only"
		if checkpoint {
			name = "checkpoint then log"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			e, err := ringwal.Open(dir, ringwal.Options{})
			require.NoError(t, err)
			require.NoError(t, e.DeclareQueue("emails", ringwal.QueueOptions{MaxMessages: 10, LeaseTimeout: time.Minute,
				Policies: map[classify.Category]classify.RetryPolicy{classify.Permanent: {MaxAttempts: 1}}}))
			require.NoError(t, e.DeclareQueue("", ringwal.QueueOptions{LeaseTimeout: 2 * time.Minute}))
			want := map[ringwal.ID]queuedMessage{}
			put := func(m ringwal.Message, st ringwal.State) ringwal.ID {
				id, err := e.Enqueue(ctxBG, m)
				require.NoError(t, err)
				want[id] = queuedMessage{m.Queue, st, string(m.Payload)}
				return id
			}
			put(ringwal.Message{Queue: "emails", Payload: []byte("e1")}, ringwal.Pending)
			put(ringwal.Message{Queue: "emails", Payload: []byte("e2"), Delay: time.Hour}, ringwal.Delayed)
			put(ringwal.Message{Payload: []byte("d1")}, ringwal.Pending)
			dead := put(ringwal.Message{Queue: "billing", Payload: []byte("b1")}, ringwal.Dead)
			d, ok := e.Queue("billing").TryDequeue()
			require.True(t, ok)
			require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("no"), classify.Permanent)))
			if checkpoint {
				require.NoError(t, e.Checkpoint())
			}
			put(ringwal.Message{Queue: "webhooks", Payload: []byte("w1")}, ringwal.Pending)
			require.NoError(t, e.Close())

			e = open(t, dir, ringwal.Options{})
			names := []string{}
			for _, q := range e.Queues() {
				names = append(names, q.Name)
			}
			assert.Equal(t, []string{"", "billing", "emails", "webhooks"}, names)
			qs := e.Queues()
			assert.Equal(t, 2*time.Minute, qs[0].Options.LeaseTimeout, "the default queue's declaration")
			assert.Equal(t, 10, qs[2].Options.MaxMessages)
			assert.Equal(t, time.Minute, qs[2].Options.LeaseTimeout)
			assert.Equal(t, 1, qs[2].Options.Policies[classify.Permanent].MaxAttempts)
			for id, w := range want {
				info, err := e.Get(id)
				require.NoError(t, err)
				assert.Equal(t, w.state, info.State, "message %d", id)
				assert.Equal(t, w.queue, info.Message.Queue, "message %d keeps its queue", id)
				assert.Equal(t, w.payload, string(info.Message.Payload))
			}
			dl, err := e.DeadLetter(dead)
			require.NoError(t, err)
			assert.Equal(t, "billing", dl.Message.Queue, "a dead letter keeps its queue")

			// Each queue delivers its own after the reopen.
			assert.Equal(t, []string{"e1"}, drainQueue(t, e, e.Queue("emails").TryDequeue))
			assert.Equal(t, []string{"w1"}, drainQueue(t, e, e.Queue("webhooks").TryDequeue))
			assert.Equal(t, []string{"d1"}, drainQueue(t, e, e.TryDequeue))
			require.NoError(t, e.Redrive(dead))
			assert.Equal(t, []string{"b1"}, drainQueue(t, e, e.Queue("billing").TryDequeue))
			// The cap came back with the queue: room is counted for it.
			for range 9 {
				_, err := e.Queue("emails").TryEnqueue(ringwal.Message{})
				require.NoError(t, err)
			}
			_, err = e.Queue("emails").TryEnqueue(ringwal.Message{})
			assert.ErrorIs(t, err, ringwal.ErrFull, "1 delayed + 9 = its MaxMessages 10")
		})
	}
}

func TestDirectoryWithoutNamedQueuesKeepsFormatOne(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, ringwal.Options{})
	mustEnqueue(t, e, ringwal.Message{Payload: []byte("x")})
	require.NoError(t, e.Checkpoint())
	require.NoError(t, e.Close())
	b, err := os.ReadFile(filepath.Join(dir, "FORMAT"))
	require.NoError(t, err)
	assert.Equal(t, "ringwal-wal 1", strings.TrimSpace(string(b)), "an older build can still open it")

	e = open(t, dir, ringwal.Options{})
	require.NoError(t, e.DeclareQueue("q", ringwal.QueueOptions{}))
	require.NoError(t, e.Close())
	b, err = os.ReadFile(filepath.Join(dir, "FORMAT"))
	require.NoError(t, err)
	assert.Equal(t, "ringwal-wal 2", strings.TrimSpace(string(b)), "queues need a build that knows them")
}

func TestQueuePauseSurvivesReopen(t *testing.T) {
	for _, checkpoint := range []bool{false, true} {
		t.Run(map[bool]string{false: "log", true: "checkpoint"}[checkpoint], func(t *testing.T) {
			dir := t.TempDir()
			e, err := ringwal.Open(dir, ringwal.Options{})
			require.NoError(t, err)
			mustEnqueue(t, e, ringwal.Message{Queue: "held", Payload: []byte("h")})
			mustEnqueue(t, e, ringwal.Message{Queue: "timed", Payload: []byte("t")})
			require.NoError(t, e.Queue("held").Pause(time.Time{}))
			require.NoError(t, e.Queue("timed").Pause(time.Now().Add(time.Hour)))
			require.NoError(t, e.Queue("gone").Pause(time.Time{}))
			require.NoError(t, e.Queue("gone").Resume())
			if checkpoint {
				require.NoError(t, e.Checkpoint())
			}
			require.NoError(t, e.Close())

			e = open(t, dir, ringwal.Options{})
			byName := map[string]ringwal.QueueInfo{}
			for _, q := range e.Queues() {
				byName[q.Name] = q
			}
			assert.True(t, byName["held"].Paused)
			assert.True(t, byName["held"].PausedUntil.IsZero(), "until Resume")
			assert.True(t, byName["timed"].Paused)
			assert.WithinDuration(t, time.Now().Add(time.Hour), byName["timed"].PausedUntil, time.Minute)
			assert.False(t, byName["gone"].Paused)
			_, ok := e.Queue("held").TryDequeue()
			assert.False(t, ok)
			require.NoError(t, e.Queue("held").Resume())
			assert.Equal(t, []string{"h"}, drainQueue(t, e, e.Queue("held").TryDequeue))
		})
	}
}

// A backlog larger than a named queue's default rings, interleaved over
// queues, comes back in each queue in its order.
func TestQueueBacklogsRestoreInOrder(t *testing.T) {
	dir := t.TempDir()
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	const n = 3 * 2500
	names := []string{"", "a", "b"}
	batch := make([]ringwal.Message, 0, n)
	for i := range n {
		batch = append(batch, ringwal.Message{Queue: names[i%3], Payload: []byte(strconv.Itoa(i))})
	}
	_, err = e.EnqueueBatch(ctxBG, batch)
	require.NoError(t, err)
	require.NoError(t, e.Close())

	e = open(t, dir, ringwal.Options{})
	for qi, q := range names {
		got := drainQueue(t, e, e.Queue(q).TryDequeue)
		require.Len(t, got, n/3, "queue %q", q)
		for j, p := range got {
			require.Equal(t, strconv.Itoa(qi+3*j), p, "queue %q keeps its order", q)
		}
	}
}
