package ringwal_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

func TestEnqueueBatch(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	ms := make([]ringwal.Message, 10)
	for i := range ms {
		ms[i] = ringwal.Message{Payload: []byte(fmt.Sprint(i))}
	}
	got, err := e.EnqueueBatch(ctxBG, ms)
	require.NoError(t, err)
	require.Len(t, got, len(ms))
	for i, id := range got {
		d := dequeue(t, e)
		assert.Equal(t, id, d.ID, "batch order is FIFO order")
		assert.Equal(t, fmt.Sprint(i), string(d.Message.Payload))
	}
	assert.Equal(t, uint64(10), e.Stats().Enqueued)
}

// A batch bigger than its tier's ring goes partly to the spill queue;
// single enqueues made meanwhile (waiting for the tier) come out after it,
// and everything comes out once, in ID order.
func TestBatchSpillThenSinglesKeepFIFO(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{TierCapacity: 4, MaxMessages: 256})
	batch := make([]ringwal.Message, 100)
	ids, err := e.EnqueueBatch(ctxBG, batch)
	require.NoError(t, err)
	require.Len(t, ids, 100)
	singles := make(chan ringwal.ID, 50)
	go func() {
		defer close(singles)
		for i := 0; i < 50; i++ {
			id, err := e.Enqueue(ctxBG, ringwal.Message{})
			if err != nil {
				t.Error(err)
				return
			}
			singles <- id
		}
	}()
	var got []ringwal.ID
	for len(got) < 150 {
		d := dequeue(t, e)
		got = append(got, d.ID)
		require.NoError(t, e.Ack(d.Lease))
	}
	for i := 1; i < len(got); i++ {
		require.Less(t, got[i-1], got[i], "FIFO within the tier at %d: %v", i, got)
	}
	assert.Equal(t, ids, got[:100])
	var single []ringwal.ID
	for id := range singles {
		single = append(single, id)
	}
	assert.Equal(t, single, got[100:])
	_, ok := e.TryDequeue()
	assert.False(t, ok)
}
