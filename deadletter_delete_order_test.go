package ringwal

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/wal"
)

// A DeleteQueue that runs while a dead letter of its queue is being
// purged comes after the purge record in the log: a crash between the
// two then leaves a log whose every record names a declared queue. (The
// other order, deletion first, leaves the dead letter naming a deleted
// queue, and every checkpoint after the next Open fails.)
func TestDeleteQueueFollowsThePurgeOfItsLastDeadLetter(t *testing.T) {
	dir := t.TempDir()
	e := openCore(t, dir, Options{})
	q := e.Queue("q")
	ctx := context.Background()
	id, err := q.Enqueue(ctx, Message{Payload: []byte("x")})
	require.NoError(t, err)
	d, err := q.Dequeue(ctx)
	require.NoError(t, err)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("no"), classify.Permanent)))

	deleted := make(chan error, 1)
	hook := func() {
		go func() { deleted <- e.DeleteQueue("q") }()
		// A DeleteQueue that does not wait for the purge returns now.
		select {
		case err := <-deleted:
			deleted <- err
		case <-time.After(200 * time.Millisecond):
		}
	}
	deadLetterRemoved.Store(&hook)
	t.Cleanup(func() { deadLetterRemoved.Store(nil) })
	require.NoError(t, e.PurgeDeadLetter(id))
	deadLetterRemoved.Store(nil)
	require.NoError(t, <-deleted)
	require.NoError(t, e.Close())

	var order []wal.Kind
	require.NoError(t, wal.Dump(dir, func(_ uint64, r *wal.Record) error {
		if r.Kind == wal.KindPurge || r.Kind == wal.KindQueueDelete {
			order = append(order, r.Kind)
		}
		return nil
	}))
	assert.Equal(t, []wal.Kind{wal.KindPurge, wal.KindQueueDelete}, order)
}
