package ringwal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
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

// TestDeadLetterIDIsTheEngineID protects the one ID type: a listed dead
// letter's ID goes to Redrive, MarkReviewed, Get and the next page's After
// with no conversion, and code written when DeadLetter.ID and Query.After
// were spelled uint64 (and redrove with ringwal.ID(d.ID)) still compiles.
func TestDeadLetterIDIsTheEngineID(t *testing.T) {
	e, err := ringwal.Open("", ringwal.Options{})
	require.NoError(t, err)
	defer e.Close()
	ctx := context.Background()
	var ids []ringwal.ID
	for range 3 {
		id, err := e.Enqueue(ctx, ringwal.Message{Key: "k"})
		require.NoError(t, err)
		ids = append(ids, id)
		d, err := e.Dequeue(ctx)
		require.NoError(t, err)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("bad"), classify.Permanent)))
	}

	first, err := e.DeadLetters(dlq.Query{Limit: 1})
	require.NoError(t, err)
	require.Len(t, first, 1)
	rest, err := e.DeadLetters(dlq.Query{After: first[0].ID}) // the next page, no conversion
	require.NoError(t, err)
	assert.Len(t, rest, 2)

	d := first[0]
	var id ringwal.ID = d.ID // one type
	assert.Equal(t, ids[0], id)
	require.NoError(t, e.MarkReviewed(d.ID, "seen"))
	info, err := e.Get(d.ID)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Dead, info.State)
	require.NoError(t, e.Redrive(d.ID))

	// The spellings of old code still compile and mean the same.
	var legacy uint64 = rest[0].ID
	require.NoError(t, e.Redrive(ringwal.ID(legacy)))
	_ = dlq.Query{After: uint64(0)}
	info, err = e.Get(rest[0].ID)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Pending, info.State)
}
