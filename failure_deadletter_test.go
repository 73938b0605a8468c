package ringwal_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/enginetest"
)

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
