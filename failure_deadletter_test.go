package ringwal_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/enginetest"
)

func deadIDs(t testing.TB, e *ringwal.Engine) []ringwal.ID {
	t.Helper()
	ds, err := e.DeadLetters(dlq.Query{})
	require.NoError(t, err)
	out := make([]ringwal.ID, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func TestDeadLettersPastTheBoundAreEvictedOldestReviewedFirst(t *testing.T) {
	forLogAndCheckpoint(t, func(t *testing.T, checkpoint bool) {
		dir := t.TempDir()
		fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		o := ringwal.Options{Clock: fake, MaxDeadLetters: 3}
		e, err := ringwal.Open(dir, o)
		require.NoError(t, err)
		var ids []ringwal.ID
		for range 3 {
			ids = append(ids, enginetest.DeadLetterN(t, e, "k", 1)...)
			fake.Advance(time.Second)
		}
		require.NoError(t, e.MarkReviewed(ids[1], "seen"))

		ids = append(ids, enginetest.DeadLetterN(t, e, "k", 1)...) // evicts the reviewed one
		fake.Advance(time.Second)
		ids = append(ids, enginetest.DeadLetterN(t, e, "k", 1)...) // then the oldest unreviewed
		assert.Equal(t, []ringwal.ID{ids[2], ids[3], ids[4]}, deadIDs(t, e))
		s := e.Stats()
		assert.Equal(t, 3, s.Dead)
		assert.Equal(t, 3, s.MaxDeadLetters)
		assert.Equal(t, uint64(2), s.DeadLettersEvicted)
		assert.Equal(t, uint64(5), s.DeadLettered, "an eviction is no new dead-lettering")
		_, err = e.DeadLetter(ids[1])
		assert.ErrorIs(t, err, ringwal.ErrNotFound)
		if checkpoint {
			require.NoError(t, e.Checkpoint())
		}
		require.NoError(t, e.Close())

		// The evictions are in the log: nothing comes back.
		e = open(t, dir, o)
		assert.Equal(t, []ringwal.ID{ids[2], ids[3], ids[4]}, deadIDs(t, e))
		assert.Zero(t, e.Stats().DeadLettersEvicted)
		require.NoError(t, e.Close())

		// A smaller bound at Open evicts there, and logs it too.
		o.MaxDeadLetters = 1
		e = open(t, dir, o)
		assert.Equal(t, []ringwal.ID{ids[4]}, deadIDs(t, e))
		assert.Equal(t, uint64(2), e.Stats().DeadLettersEvicted)
		require.NoError(t, e.Close())
		o.MaxDeadLetters = 0 // the default, far above
		e = open(t, dir, o)
		assert.Equal(t, []ringwal.ID{ids[4]}, deadIDs(t, e))
	})
}

func TestUnreviewedRetentionRemovesOldUnreviewedDeadLetters(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{UnreviewedRetention: time.Hour})
	ids := enginetest.DeadLetterN(t, e, "", 1)
	fake.Advance(2 * time.Hour) // the maintenance pass runs on the fake clock
	require.Eventually(t, func() bool {
		_, err := e.DeadLetter(ids[0])
		return errors.Is(err, ringwal.ErrNotFound)
	}, waitFor, tick)
}

func TestNegativeBoundsAreInvalid(t *testing.T) {
	for _, o := range []ringwal.Options{{MaxDeadLetters: -1}, {MaxPausedKeys: -1}, {UnreviewedRetention: -time.Hour}} {
		_, err := ringwal.Open("", o)
		assert.ErrorIs(t, err, ringwal.ErrInvalid)
	}
}

func TestPauseKeyPastMaxPausedKeysIsErrFull(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{MaxPausedKeys: 2})
	until := fake.Now().Add(time.Hour)
	require.NoError(t, e.PauseKey("a", until))
	require.NoError(t, e.PauseKey("b", time.Time{}))
	err := e.PauseKey("c", until)
	assert.ErrorIs(t, err, ringwal.ErrFull)
	assert.ErrorContains(t, err, "MaxPausedKeys")
	assert.NoError(t, e.PauseKey("a", until.Add(time.Hour)), "extending a pause in force takes no new place")

	paused, end := e.KeyPause("a")
	assert.True(t, paused)
	assert.True(t, end.Equal(until.Add(time.Hour)))
	paused, end = e.KeyPause("b")
	assert.True(t, paused)
	assert.True(t, end.IsZero(), "until resumed")
	paused, _ = e.KeyPause("c")
	assert.False(t, paused)

	require.NoError(t, e.ResumeKey("a"))
	assert.NoError(t, e.PauseKey("c", until), "a resume frees a place")
	paused, _ = e.KeyPause("")
	assert.False(t, paused)
	require.NoError(t, e.Pause(time.Time{}))
	paused, end = e.KeyPause("")
	assert.True(t, paused)
	assert.True(t, end.IsZero())
}

// The reads an operator's console makes cost what they return, not the
// size of the store: with 100k dead letters (a scan would allocate per entry), finding one by ID, counting
// a key's and counting what a purge would take allocate a constant.
func TestDeadLetterReadsDoNotGrowWithTheStore(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 100k dead letters")
	}
	const dead = 100_000
	e, _ := memEngine(t, ringwal.Options{MaxMessages: 1 << 12})
	ids := enginetest.DeadLetterN(t, e, "k", dead)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := e.DeadLetter(ids[dead/2]); err != nil {
			t.Fatal(err)
		}
	})
	assert.LessOrEqual(t, allocs, 4.0, "DeadLetter by ID")
	bytes := enginetest.BytesPerRun(20, func() { _, _ = e.DeadLetter(ids[dead/2]) })
	assert.Less(t, bytes, uint64(4<<10), "DeadLetter by ID: bytes allocated")
	allocs = testing.AllocsPerRun(20, func() {
		if n, _, err := e.CountDeadLetters(dlq.Query{Key: "k"}); err != nil || n != dead {
			t.Fatal(n, err)
		}
		if m, err := e.DeadLetterKeys(); err != nil || m["k"] != dead {
			t.Fatal(m, err)
		}
	})
	assert.LessOrEqual(t, allocs, 4.0, "counts")
}

// Peek(n) reads the queues' fronts: with 200k pending, Peek(1) allocates
// a constant, and what it shows is what Dequeue hands out.
func TestPeekCostsWhatItReturns(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 200k pending")
	}
	const n = 200_000
	e, _ := memEngine(t, ringwal.Options{MaxMessages: 1 << 18, TierCapacity: 1 << 16})
	batch := make([]ringwal.Message, 1000)
	for i := range batch {
		batch[i] = ringwal.Message{Payload: []byte("p")}
	}
	for range n / len(batch) {
		_, err := e.EnqueueBatch(ctxBG, batch)
		require.NoError(t, err)
	}
	allocs := testing.AllocsPerRun(10, func() {
		if got := e.Peek(1); len(got) != 1 {
			t.Fatal(len(got))
		}
	})
	assert.LessOrEqual(t, allocs, 10.0, "Peek(1) with %d pending", n)
	bytes := enginetest.BytesPerRun(10, func() { e.Peek(1) })
	assert.Less(t, bytes, uint64(64<<10), "Peek(1) with %d pending: bytes allocated", n)

	peeked := e.Peek(3)
	require.Len(t, peeked, 3)
	for _, p := range peeked {
		assert.Equal(t, p.ID, dequeue(t, e).ID)
	}
}
