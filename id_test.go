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
)

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
