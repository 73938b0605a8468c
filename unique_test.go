package ringwal_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// repeat enqueues a repeat of dedupID under mode and returns its ID and
// whether it was refused as a duplicate (any other error fails the test).
func repeat(t *testing.T, e *ringwal.Engine, dedupID string, mode ringwal.Unique) (ringwal.ID, bool) {
	t.Helper()
	id, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: dedupID, Unique: mode, Payload: []byte("repeat")})
	if errors.Is(err, ringwal.ErrDuplicate) {
		return id, true
	}
	require.NoError(t, err)
	return id, false
}

// refused checks that a repeat is refused with first's ID.
func refused(t *testing.T, e *ringwal.Engine, dedupID string, mode ringwal.Unique, first ringwal.ID, why string) {
	t.Helper()
	id, dup := repeat(t, e, dedupID, mode)
	assert.True(t, dup, "%s: a repeat is refused", why)
	assert.Equal(t, first, id, "%s: the refusal names the first", why)
}

// accepted checks that a repeat is a new message, and returns its ID.
func accepted(t *testing.T, e *ringwal.Engine, dedupID string, mode ringwal.Unique, first ringwal.ID, why string) ringwal.ID {
	t.Helper()
	id, dup := repeat(t, e, dedupID, mode)
	assert.False(t, dup, "%s: a repeat is accepted", why)
	assert.NotEqual(t, first, id, "%s: as a new message", why)
	return id
}

// Under UniqueLive a repeat is refused while the first lives, in every
// state (pending, delayed, leased, waiting for a retry), whether or not
// a DedupWindow is set, and accepted once it is gone.
func TestUniqueLiveRefusesWhileTheFirstLives(t *testing.T) {
	live := ringwal.UniqueLive
	// Dedup off (a negative window): the unique modes are no window.
	e, fake := memEngine(t, ringwal.Options{Policies: fastPolicies(5), DedupWindow: -1})
	first := enqueue(t, e, ringwal.Message{DedupID: "import", Unique: live, Delay: time.Second})
	refused(t, e, "import", live, first, "delayed")
	fake.Advance(time.Second + time.Millisecond)
	waitState(t, e, first, ringwal.Pending)
	refused(t, e, "import", live, first, "pending")
	d := enginetest.Dequeue(t, e)
	require.Equal(t, first, d.ID)
	refused(t, e, "import", live, first, "leased")
	require.NoError(t, e.Nack(d.Lease, errors.New("flaky")))
	waitState(t, e, first, ringwal.Delayed)
	refused(t, e, "import", live, first, "waiting for its retry")
	fake.Advance(20 * time.Millisecond)
	d = enginetest.Dequeue(t, e)
	require.NoError(t, e.Ack(d.Lease))
	next := accepted(t, e, "import", live, first, "acked")
	refused(t, e, "import", live, next, "the next one is live")
}

// Under UniqueQueued a repeat is refused while the first waits to be
// delivered, and accepted once it is leased; the new one then holds the
// DedupID.
func TestUniqueQueuedRefusesUntilTheFirstIsLeased(t *testing.T) {
	queued := ringwal.UniqueQueued
	e, fake := memEngine(t, ringwal.Options{Policies: fastPolicies(5), DedupWindow: -1})
	first := enqueue(t, e, ringwal.Message{DedupID: "sync", Unique: queued, Delay: time.Second})
	refused(t, e, "sync", queued, first, "delayed")
	fake.Advance(time.Second + time.Millisecond)
	waitState(t, e, first, ringwal.Pending)
	refused(t, e, "sync", queued, first, "pending")
	d1 := enginetest.Dequeue(t, e)
	require.Equal(t, first, d1.ID)
	second := accepted(t, e, "sync", queued, first, "the first leased")
	refused(t, e, "sync", queued, second, "the second queued")
	require.NoError(t, e.Ack(d1.Lease))
	refused(t, e, "sync", queued, second, "the first acked, the second still queued")
	d2 := enginetest.Dequeue(t, e)
	require.Equal(t, second, d2.ID)
	third := accepted(t, e, "sync", queued, second, "the second leased")
	require.NoError(t, e.Cancel(third))
	// The second, nacked, waits for its retry: no message holds the
	// DedupID any more (the third was cancelled), so a repeat is new.
	require.NoError(t, e.Nack(d2.Lease, errors.New("flaky")))
	waitState(t, e, second, ringwal.Delayed)
	accepted(t, e, "sync", queued, second, "the holder cancelled")
}

// Every way a message's life ends lets a repeat in, under both modes; a
// Redrive makes a dead letter live again, and its DedupID refuses again.
func TestUniqueEndsWithTheFirstsLife(t *testing.T) {
	for _, mode := range []ringwal.Unique{ringwal.UniqueQueued, ringwal.UniqueLive} {
		for _, end := range []struct {
			name string
			end  func(t *testing.T, e *ringwal.Engine, fake interface{ Advance(time.Duration) }, id ringwal.ID)
		}{
			{"acked", func(t *testing.T, e *ringwal.Engine, _ interface{ Advance(time.Duration) }, id ringwal.ID) {
				d := enginetest.Dequeue(t, e)
				require.NoError(t, e.Ack(d.Lease))
			}},
			{"cancelled", func(t *testing.T, e *ringwal.Engine, _ interface{ Advance(time.Duration) }, id ringwal.ID) {
				require.NoError(t, e.Cancel(id))
			}},
			{"dead-lettered", func(t *testing.T, e *ringwal.Engine, _ interface{ Advance(time.Duration) }, id ringwal.ID) {
				d := enginetest.Dequeue(t, e)
				require.NoError(t, e.Nack(d.Lease, permanent("bad input")))
				waitState(t, e, id, ringwal.Dead)
			}},
			{"expired", func(t *testing.T, e *ringwal.Engine, fake interface{ Advance(time.Duration) }, id ringwal.ID) {
				fake.Advance(time.Minute + time.Millisecond)
				waitState(t, e, id, ringwal.Dead)
			}},
		} {
			t.Run(fmt.Sprintf("%v/%s", mode, end.name), func(t *testing.T) {
				// The default window (2m) outlives the first: a unique mode
				// ignores it.
				e, fake := memEngine(t, ringwal.Options{})
				first := enqueue(t, e, ringwal.Message{DedupID: "job", Unique: mode, TTL: time.Minute})
				refused(t, e, "job", mode, first, "before")
				end.end(t, e, fake, first)
				next := accepted(t, e, "job", mode, first, end.name)
				if end.name != "dead-lettered" {
					return
				}
				require.NoError(t, e.Cancel(next))
				require.NoError(t, e.Redrive(first))
				refused(t, e, "job", mode, first, "redriven")
			})
		}
	}
}

// Unique and Replace are checked: a mode needs a DedupID, Replace needs
// a unique mode, an unknown mode is refused; each says what was wrong.
func TestUniqueInvalid(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{DedupWindow: time.Minute})
	for _, tt := range []struct {
		m    ringwal.Message
		want string
	}{
		{ringwal.Message{Unique: ringwal.UniqueLive}, "without a DedupID"},
		{ringwal.Message{Unique: ringwal.UniqueQueued, Replace: true}, "without a DedupID"},
		{ringwal.Message{DedupID: "x", Replace: true}, "Replace needs Unique"},
		{ringwal.Message{Replace: true}, "Replace needs Unique"},
		{ringwal.Message{DedupID: "x", Unique: 3}, "unknown Unique mode 3"},
	} {
		_, err := e.Enqueue(ctxBG, tt.m)
		require.ErrorIs(t, err, ringwal.ErrInvalid, "%+v", tt.m)
		assert.Contains(t, err.Error(), tt.want)
		_, err = e.EnqueueBatch(ctxBG, []ringwal.Message{{Payload: []byte("ok")}, tt.m})
		require.ErrorIs(t, err, ringwal.ErrInvalid, "batch: %+v", tt.m)
	}
	assert.Equal(t, uint64(0), e.Stats().Enqueued, "nothing was added")
}

// Replace: a repeat that finds the first queued replaces its payload,
// headers, priority and delay, keeps its ID, and answers without an
// error; the last repeat wins.
func TestUniqueReplaceKeepsTheFirst(t *testing.T) {
	for _, mode := range []ringwal.Unique{ringwal.UniqueQueued, ringwal.UniqueLive} {
		t.Run(mode.String(), func(t *testing.T) {
			e, _ := memEngine(t, ringwal.Options{})
			first := enqueue(t, e, ringwal.Message{DedupID: "cfg", Unique: mode, Payload: []byte("v1"), Key: "k", MaxAttempts: 3})
			id, err := e.Enqueue(ctxBG, ringwal.Message{DedupID: "cfg", Unique: mode, Replace: true, Payload: []byte("v2"),
				Priority: ringwal.High, Headers: map[string]string{"rev": "2"}})
			require.NoError(t, err)
			assert.Equal(t, first, id)
			id, err = e.Enqueue(ctxBG, ringwal.Message{DedupID: "cfg", Unique: mode, Replace: true, Payload: []byte("v3"),
				Priority: ringwal.High, Headers: map[string]string{"rev": "3"}})
			require.NoError(t, err)
			assert.Equal(t, first, id)
			info, err := e.Get(first)
			require.NoError(t, err)
			assert.Equal(t, "v3", string(info.Message.Payload))
			assert.Equal(t, ringwal.High, info.Message.Priority)
			assert.Equal(t, map[string]string{"rev": "3"}, info.Message.Headers)
			assert.Equal(t, "k", info.Message.Key, "what Replace does not replace stays")
			assert.Equal(t, 3, info.Message.MaxAttempts)
			assert.Equal(t, 1, e.Stats().Pending)
			d := enginetest.Dequeue(t, e)
			assert.Equal(t, first, d.ID)
			assert.Equal(t, "v3", string(d.Message.Payload))
			assertNothingReady(t, e, "one message")

			// Leased: Replace does not touch it.
			id, err = e.Enqueue(ctxBG, ringwal.Message{DedupID: "cfg", Unique: mode, Replace: true, Payload: []byte("v4")})
			if mode == ringwal.UniqueLive {
				require.ErrorIs(t, err, ringwal.ErrDuplicate)
				assert.Equal(t, first, id)
			} else {
				require.NoError(t, err)
				assert.NotEqual(t, first, id, "a new message once the first is leased")
			}
			require.NoError(t, e.Ack(d.Lease))
		})
	}
}

// Replace with a Delay debounces: the delay counts from the repeat, so a
// burst of repeats runs once, after the last one's delay, with its payload.
func TestUniqueReplaceDebounces(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	m := ringwal.Message{DedupID: "reindex-42", Unique: ringwal.UniqueQueued, Replace: true, Delay: 10 * time.Second}
	m.Payload = []byte("a")
	first := enqueue(t, e, m)
	fake.Advance(6 * time.Second)
	m.Payload = []byte("b")
	require.Equal(t, first, enqueue(t, e, m))
	fake.Advance(6 * time.Second) // 12s after the first, 6s after the repeat
	stays(t, e, first, ringwal.Delayed, "the repeat's delay runs")
	fake.Advance(4*time.Second + time.Millisecond)
	waitState(t, e, first, ringwal.Pending)
	d := enginetest.Dequeue(t, e)
	assert.Equal(t, "b", string(d.Message.Payload))
	assertNothingReady(t, e, "one message")

	// A delayed first replaced with no Delay is ready at once.
	m.Payload = []byte("c")
	id := enqueue(t, e, m)
	m.Payload, m.Delay = []byte("d"), 0
	require.Equal(t, id, enqueue(t, e, m))
	waitState(t, e, id, ringwal.Pending)
}

// A first set aside by its key (here behind MaxInFlight) keeps its place
// in the key's line when replaced: payload and priority change, and it
// goes out, once, when the key lets it.
func TestUniqueReplaceOfAMessageWaitingOnItsKey(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{KeyPolicy: func(string) ringwal.KeyPolicy { return ringwal.KeyPolicy{MaxInFlight: 1} }})
	enqueue(t, e, ringwal.Message{Key: "api", Payload: []byte("busy")})
	busy := enginetest.Dequeue(t, e)
	m := ringwal.Message{Key: "api", DedupID: "sync", Unique: ringwal.UniqueQueued, Replace: true, Payload: []byte("v1")}
	first := enqueue(t, e, m)
	_, ok := e.TryDequeue() // set aside: the key has one in flight
	require.False(t, ok)
	info := waitState(t, e, first, ringwal.Pending)
	require.Equal(t, ringwal.WaitInFlight, info.Waiting)

	m.Payload, m.Priority, m.Delay = []byte("v2"), ringwal.High, time.Hour
	require.Equal(t, first, enqueue(t, e, m))
	info, err := e.Get(first)
	require.NoError(t, err)
	assert.Equal(t, "v2", string(info.Message.Payload))
	assert.Equal(t, ringwal.WaitInFlight, info.Waiting, "still in the key's line")

	require.NoError(t, e.Ack(busy.Lease))
	d := enginetest.Dequeue(t, e)
	assert.Equal(t, first, d.ID)
	assert.Equal(t, "v2", string(d.Message.Payload))
	assert.Equal(t, ringwal.High, d.Message.Priority)
	assertNothingReady(t, e, "one message")
}
