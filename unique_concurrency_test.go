package ringwal_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// liveCount is how many messages are live, by Stats.
func liveCount(e *ringwal.Engine) int {
	s := e.Stats()
	return s.Pending + s.Delayed + s.Leased + s.Held
}

// 16 goroutines enqueue one DedupID under UniqueLive at once, on a logged
// engine and a memory-only one: exactly one message is added, and every
// caller gets its ID (15 of them with ErrDuplicate). Then, while a
// consumer acks each delivery, they go on: never two live at once.
func TestUniqueLiveConcurrentEnqueuesAddOne(t *testing.T) {
	for _, disk := range []bool{true, false} {
		t.Run(fmt.Sprintf("disk=%v", disk), func(t *testing.T) {
			dir := ""
			if disk {
				dir = t.TempDir()
			}
			e := open(t, dir, ringwal.Options{})
			const n = 16
			ids := make([]ringwal.ID, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					ids[i], errs[i] = e.Enqueue(ctxBG, ringwal.Message{DedupID: "import-7", Unique: ringwal.UniqueLive,
						Payload: fmt.Appendf(nil, "from %d", i)})
				}()
			}
			close(start)
			wg.Wait()
			added := 0
			for i := range n {
				if errs[i] == nil {
					added++
				} else {
					require.ErrorIs(t, errs[i], ringwal.ErrDuplicate)
				}
				assert.Equal(t, ids[0], ids[i], "every caller gets the one message's ID")
			}
			assert.Equal(t, 1, added)
			assert.Equal(t, 1, liveCount(e))

			// Producers and a consumer racing: at every ack exactly one
			// message was live, and each enqueue that was not refused
			// added the one live message.
			var pw sync.WaitGroup
			stop := make(chan struct{})
			for range 4 {
				pw.Add(1)
				go func() {
					defer pw.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						_, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "import-7", Unique: ringwal.UniqueLive})
						if err != nil && !errors.Is(err, ringwal.ErrDuplicate) {
							t.Error(err)
							return
						}
					}
				}()
			}
			for range 20 {
				d := enginetest.Dequeue(t, e)
				assert.Equal(t, 1, liveCount(e), "the leased one alone")
				require.NoError(t, e.Ack(d.Lease))
			}
			close(stop)
			pw.Wait()
			assert.LessOrEqual(t, liveCount(e), 1)
		})
	}
}

// 16 goroutines replace one queued message at once: one message stays,
// with the payload of whichever replace came last, and a reopen finds
// that payload (each replace logged its full state while it owned the
// message, so the log's order is theirs).
func TestUniqueReplaceConcurrentLastWins(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, ringwal.Options{})
	first := enqueue(t, e, ringwal.Message{DedupID: "cfg", Unique: ringwal.UniqueQueued, Payload: []byte("v0"), Delay: time.Hour})
	const n = 16
	var wg sync.WaitGroup
	sent := map[string]bool{}
	for i := range n {
		p := fmt.Sprintf("v%d", i+1)
		sent[p] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				id, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "cfg", Unique: ringwal.UniqueQueued, Replace: true,
					Payload: []byte(p), Delay: time.Hour + time.Duration(j)})
				assert.NoError(t, err)
				assert.Equal(t, first, id)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, liveCount(e))
	info, err := e.Get(first)
	require.NoError(t, err)
	assert.True(t, sent[string(info.Message.Payload)], "a payload sent: %q", info.Message.Payload)
	// The last replace, serially, wins.
	_, err = e.Enqueue(ctxBG, ringwal.Message{DedupID: "cfg", Unique: ringwal.UniqueQueued, Replace: true, Payload: []byte("last"), Delay: time.Hour})
	require.NoError(t, err)
	require.NoError(t, e.Close())

	e = open(t, dir, ringwal.Options{})
	info, err = e.Get(first)
	require.NoError(t, err)
	assert.Equal(t, "last", string(info.Message.Payload))
	assert.Equal(t, ringwal.Delayed, info.State)
	assert.Equal(t, 1, liveCount(e))
}

// Uniqueness survives a restart: by log replay, and by a checkpoint's
// snapshot (plus the log after it). Its mode, a replaced payload and what
// ended a first's life are all as they were.
func TestUniqueSurvivesReopen(t *testing.T) {
	for _, ck := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", ck), func(t *testing.T) {
			dir := t.TempDir()
			e := open(t, dir, ringwal.Options{})
			live := enqueue(t, e, ringwal.Message{DedupID: "live", Unique: ringwal.UniqueLive, Payload: []byte("a")})
			queued := enqueue(t, e, ringwal.Message{DedupID: "queued", Unique: ringwal.UniqueQueued, Payload: []byte("q"), Delay: time.Hour})
			_, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "queued", Unique: ringwal.UniqueQueued, Replace: true, Payload: []byte("q2"), Delay: time.Hour})
			require.NoError(t, err)
			gone := enqueue(t, e, ringwal.Message{DedupID: "gone", Unique: ringwal.UniqueLive})
			require.NoError(t, e.Cancel(gone))
			if ck {
				require.NoError(t, e.Checkpoint())
				// After the cut: in the log only.
				enqueue(t, e, ringwal.Message{DedupID: "after", Unique: ringwal.UniqueLive})
			}
			require.NoError(t, e.Close())

			e = open(t, dir, ringwal.Options{})
			refused(t, e, "live", ringwal.UniqueLive, live, "live across the reopen")
			refused(t, e, "queued", ringwal.UniqueQueued, queued, "queued across the reopen")
			info, err := e.Get(queued)
			require.NoError(t, err)
			assert.Equal(t, "q2", string(info.Message.Payload))
			assert.Equal(t, ringwal.UniqueQueued, info.Message.Unique)
			accepted(t, e, "gone", ringwal.UniqueLive, gone, "cancelled before the reopen")
			if ck {
				_, dup := repeat(t, e, "after", ringwal.UniqueLive)
				assert.True(t, dup, "enqueued after the checkpoint")
			}
			// The live one's life ends after the reopen: its entry goes.
			for {
				d, ok := e.TryDequeue()
				require.True(t, ok)
				require.NoError(t, e.Ack(d.Lease))
				if d.ID == live {
					break
				}
			}
			accepted(t, e, "live", ringwal.UniqueLive, live, "acked after the reopen")
		})
	}
}

// EnqueueBatch and the Queue handles honour Unique and Replace: a repeat
// inside a batch is judged against the batch's own first, one from
// before the batch against that first.
func TestUniqueBatchAndQueues(t *testing.T) {
	e := open(t, t.TempDir(), ringwal.Options{})
	before := enqueue(t, e, ringwal.Message{DedupID: "b", Unique: ringwal.UniqueLive, Payload: []byte("b0")})
	ids, err := e.EnqueueBatch(ctxBG, []ringwal.Message{
		{DedupID: "a", Unique: ringwal.UniqueLive, Payload: []byte("a1")},
		{DedupID: "a", Unique: ringwal.UniqueLive, Payload: []byte("a2")},                // refused: the batch's first
		{DedupID: "a", Unique: ringwal.UniqueLive, Replace: true, Payload: []byte("a3")}, // replaces the batch's first
		{DedupID: "b", Unique: ringwal.UniqueLive, Payload: []byte("b1")},                // refused: from before
		{DedupID: "b", Unique: ringwal.UniqueLive, Replace: true, Payload: []byte("b2")}, // replaces the one from before
		{Payload: []byte("plain")},
	})
	require.ErrorIs(t, err, ringwal.ErrDuplicate)
	assert.Contains(t, err.Error(), "2 of 6 messages")
	require.Len(t, ids, 6)
	assert.Equal(t, []ringwal.ID{ids[0], ids[0], ids[0], before, before}, ids[:5])
	assert.Equal(t, 3, liveCount(e), "a, b and the plain one")
	for id, want := range map[ringwal.ID]string{ids[0]: "a3", before: "b2"} {
		info, err := e.Get(id)
		require.NoError(t, err)
		assert.Equal(t, want, string(info.Message.Payload))
	}

	q := e.Queue("imports")
	first, err := q.Enqueue(ctxBG, ringwal.Message{DedupID: "file-9", Unique: ringwal.UniqueLive})
	require.NoError(t, err)
	id, err := q.TryEnqueue(ringwal.Message{DedupID: "file-9", Unique: ringwal.UniqueLive})
	require.ErrorIs(t, err, ringwal.ErrDuplicate)
	assert.Equal(t, first, id)
	ids, err = q.EnqueueBatch(ctxBG, []ringwal.Message{{DedupID: "file-9", Unique: ringwal.UniqueLive}})
	require.ErrorIs(t, err, ringwal.ErrDuplicate)
	assert.Equal(t, []ringwal.ID{first}, ids)
	d, ok := q.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d.Lease))
	_, err = q.Enqueue(ctxBG, ringwal.Message{DedupID: "file-9", Unique: ringwal.UniqueLive})
	require.NoError(t, err, "acked: a new one")
}

// Publish honours Unique: each copy's DedupID (the message's plus its
// queue's name) is unique in its queue, so a repeat adds no copy while
// the first copies live.
func TestUniquePublish(t *testing.T) {
	e := open(t, t.TempDir(), ringwal.Options{})
	for _, q := range []string{"audit", "mail"} {
		require.NoError(t, e.DeclareQueue(q, ringwal.QueueOptions{Topics: []string{"signup"}}))
	}
	m := ringwal.Message{DedupID: "user-42", Unique: ringwal.UniqueLive, Payload: []byte("welcome")}
	first, err := e.Publish(ctxBG, "signup", m)
	require.NoError(t, err)
	require.Len(t, first, 2)
	again, err := e.Publish(ctxBG, "signup", m)
	require.ErrorIs(t, err, ringwal.ErrDuplicate)
	assert.Equal(t, first, again)
	d, ok := e.Queue("mail").TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d.Lease))
	ids, err := e.Publish(ctxBG, "signup", m)
	require.ErrorIs(t, err, ringwal.ErrDuplicate, "the audit copy still lives")
	assert.Equal(t, first[0], ids[0])
	assert.NotEqual(t, first[1], ids[1], "a new mail copy")
}
