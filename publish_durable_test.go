package ringwal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// logKinds counts the records of each kind in the log in dir.
func logKinds(t *testing.T, dir string) map[wal.Kind]int {
	t.Helper()
	l, err := wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	kinds := map[wal.Kind]int{}
	_, err = l.Replay(func(r *wal.Record) error {
		kinds[r.Kind]++
		return nil
	})
	require.NoError(t, err)
	return kinds
}

func TestPublishIsOneLogRecordThatReplaysEveryCopy(t *testing.T) {
	dir := t.TempDir()
	o := Options{DedupWindow: time.Hour, Queues: map[string]QueueOptions{
		"audit": {Topics: []string{"orders"}}, "billing": {Topics: []string{"orders"}}, "mail": {Topics: []string{"orders"}},
	}}
	e, err := Open(dir, o)
	require.NoError(t, err)
	m := Message{Key: "shop", Priority: High, Payload: []byte("order-1"), DedupID: "evt-1",
		Headers: map[string]string{"trace": "abc"}, TTL: time.Hour, MaxAttempts: 3}
	ids, err := e.Publish(ctxBG, "orders", m)
	require.NoError(t, err)
	require.Len(t, ids, 3)
	delayed, err := e.Publish(ctxBG, "orders", Message{Payload: []byte("later"), Delay: time.Hour})
	require.NoError(t, err)
	at := func(e *Engine, id ID) Info {
		info, err := e.Get(id)
		require.NoError(t, err)
		return info
	}
	first := at(e, delayed[0])
	for _, id := range delayed[1:] {
		info := at(e, id)
		assert.Equal(t, first.EnqueuedAt, info.EnqueuedAt, "copies share their enqueue time")
		assert.Equal(t, first.NextAt, info.NextAt, "and count their Delay from it")
	}
	require.NoError(t, e.Close())

	kinds := logKinds(t, dir)
	assert.Equal(t, 2, kinds[wal.KindPublish], "one record per Publish")
	assert.Zero(t, kinds[wal.KindEnqueue], "no record per copy")

	e = openEngine(t, dir, o)
	for i, q := range []string{"audit", "billing", "mail"} {
		d, ok := e.Queue(q).TryDequeue()
		require.True(t, ok, q)
		assert.Equal(t, ids[i], d.ID, "each copy keeps its ID")
		want := m
		want.Queue, want.DedupID, want.TTL = q, "evt-1/"+q, 0
		got := d.Message
		got.TTL = 0 // counts down from the enqueue time
		assert.Equal(t, want, got, "every field of the copy in %s", q)
		assert.Equal(t, first.EnqueuedAt, at(e, delayed[i]).EnqueuedAt)
		assert.Equal(t, first.NextAt, at(e, delayed[i]).NextAt, "the delayed copy in %s is due when it was", q)
	}
	again, err := e.Publish(ctxBG, "orders", m)
	assert.ErrorIs(t, err, ErrDuplicate, "each copy's DedupID was restored")
	assert.Equal(t, ids, again)
}
