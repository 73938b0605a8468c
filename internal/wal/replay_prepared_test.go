package wal_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/internal/wal"
)

// TestReplayPreparedHooks: each goroutine that decodes gets a hook of its
// own (the snapshot's reader too), every record is prepared before fn sees
// it, fn sees the records in log order, and a Payload a hook replaced (here
// with a copy, as the engine's does) is the one fn gets and may keep: for
// a snapshot's records, small batches (stored as they are), s2-compressed
// ones and a large one.
func TestReplayPreparedHooks(t *testing.T) {
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{Mode: wal.Write}) // a batch per AppendBatch
	require.NoError(t, err)
	payload := func(id uint64) []byte {
		// Distinct per record, so a reused buffer would show.
		return bytes.Repeat([]byte(fmt.Sprintf("<%d>", id)), int(id%50)+1)
	}
	rec := func(id uint64) wal.Record {
		return wal.Record{Kind: wal.KindEnqueue, ID: id, Time: int64(id), Payload: payload(id)}
	}
	id := uint64(0)
	next := func() wal.Record { id++; return rec(id) }
	// Some records before a snapshot, which the snapshot carries.
	var snap []wal.Record
	for range 300 {
		r := next()
		require.NoError(t, l.AppendBatch([]wal.Record{r}))
		snap = append(snap, r)
	}
	_, err = l.Checkpoint(func(emit func(*wal.Record) error) error {
		for i := range snap {
			if err := emit(&snap[i]); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	// Small batches of one record, large ones (compressed), and one batch
	// of over a MiB.
	for range 200 {
		require.NoError(t, l.AppendBatch([]wal.Record{next()}))
	}
	for range 20 {
		batch := make([]wal.Record, 500)
		for i := range batch {
			batch[i] = next()
		}
		require.NoError(t, l.AppendBatch(batch))
	}
	big := make([]wal.Record, 0, 600)
	for range cap(big) {
		r := next()
		r.Payload = append(bytes.Repeat([]byte{byte(r.ID)}, 3000), payload(r.ID)...)
		big = append(big, r)
	}
	require.NoError(t, l.AppendBatch(big))
	bigPayload := map[uint64][]byte{}
	for _, r := range big {
		bigPayload[r.ID] = r.Payload
	}
	require.NoError(t, l.Close())

	l, err = wal.Open(dir, wal.Options{})
	require.NoError(t, err)
	defer l.Close()
	var mu sync.Mutex
	prepared := map[uint64]bool{}
	hooks := 0
	kept := map[uint64][]byte{}
	var order []uint64
	_, err = l.ReplayPrepared(func() func(*wal.Record) {
		mu.Lock()
		hooks++
		mu.Unlock()
		return func(r *wal.Record) {
			mu.Lock()
			prepared[r.ID] = true
			mu.Unlock()
			r.Payload = bytes.Clone(r.Payload)
			if r.ID == 7 {
				r.Payload = []byte("replaced")
			}
		}
	}, func(r *wal.Record) error {
		mu.Lock()
		assert.True(t, prepared[r.ID], "record %d prepared before fn", r.ID)
		mu.Unlock()
		kept[r.ID] = r.Payload
		order = append(order, r.ID)
		return nil
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, hooks, 2, "one hook for the snapshot, one per decoding goroutine")
	// The snapshot's records, then the log's after the batch it covers
	// (which may repeat the snapshot's last few), each in order.
	require.Greater(t, len(order), len(snap))
	for i := range order[:len(snap)] {
		require.EqualValues(t, i+1, order[i], "the snapshot's records in order")
	}
	tail := order[len(snap):]
	require.LessOrEqual(t, tail[0], uint64(len(snap)+1), "the log resumes where the snapshot ends, or before")
	for i := 1; i < len(tail); i++ {
		require.Equal(t, tail[i-1]+1, tail[i], "the log's records in order")
	}
	require.Equal(t, id, tail[len(tail)-1])
	for rid := uint64(1); rid <= id; rid++ {
		want := payload(rid)
		switch {
		case rid == 7:
			want = []byte("replaced")
		case bigPayload[rid] != nil:
			want = bigPayload[rid]
		}
		require.Equal(t, want, kept[rid], "payload of record %d after Replay returned", rid)
	}
}
