package ringwal_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// TestPurgeDeadLetterTakesOneForGood protects the single purge: it deletes
// exactly the dead letter named, leaves its neighbours (same key, same
// category), refuses an ID that is not a dead letter, and the purge is in
// the log, so a reopen does not bring the dead letter back.
func TestPurgeDeadLetterTakesOneForGood(t *testing.T) {
	dir := t.TempDir()
	e := enginetest.Open(t, dir, ringwal.Options{})
	ids := enginetest.DeadLetterN(t, e, "k", 3)

	require.NoError(t, e.PurgeDeadLetter(ids[1]))
	assert.ErrorIs(t, e.PurgeDeadLetter(ids[1]), ringwal.ErrNotFound, "purged already")
	assert.ErrorIs(t, e.PurgeDeadLetter(ids[2]+100), ringwal.ErrNotFound, "never a dead letter")
	_, err := e.Get(ids[1])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	left := func(e *ringwal.Engine) []ringwal.ID {
		ds, err := e.DeadLetters(dlq.Query{})
		require.NoError(t, err)
		var out []ringwal.ID
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	assert.Equal(t, []ringwal.ID{ids[0], ids[2]}, left(e))

	require.NoError(t, e.Redrive(ids[0]))
	assert.ErrorIs(t, e.PurgeDeadLetter(ids[0]), ringwal.ErrNotFound, "redriven: live, not a dead letter")

	require.NoError(t, e.Close())
	assert.ErrorIs(t, e.PurgeDeadLetter(ids[2]), ringwal.ErrClosed)
	e = enginetest.Open(t, dir, ringwal.Options{})
	assert.Equal(t, []ringwal.ID{ids[2]}, left(e), "the purge was logged")
}
