package ringwal_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// An invalid message is refused as invalid (ErrInvalid), never as full,
// whatever path it takes and however full its engine, queue or topic's
// queues are: a caller retries ErrFull, and would retry it for ever.
func TestInvalidMessageIsRefusedAsInvalidBeforeCapacity(t *testing.T) {
	e := open(t, "", ringwal.Options{MaxMessages: 1})
	require.NoError(t, e.DeclareQueue("q", ringwal.QueueOptions{MaxMessages: 1, Topics: []string{"t"}}))
	_, err := e.Queue("q").TryEnqueue(ringwal.Message{Payload: []byte("fills q and the engine")})
	require.NoError(t, err)
	bad := ringwal.Message{Priority: 9}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a wait for room would end at once
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"TryEnqueue", func() error { _, err := e.TryEnqueue(bad); return err }},
		{"Enqueue", func() error { _, err := e.Enqueue(ctx, bad); return err }},
		{"EnqueueBatch", func() error { _, err := e.EnqueueBatch(ctx, []ringwal.Message{bad}); return err }},
		{"Queue.TryEnqueue", func() error { _, err := e.Queue("q").TryEnqueue(bad); return err }},
		{"Queue.Enqueue", func() error { _, err := e.Queue("q").Enqueue(ctx, bad); return err }},
		{"Publish", func() error { _, err := e.Publish(context.Background(), "t", bad); return err }},
		{"Publish/unbound", func() error { _, err := e.Publish(context.Background(), "nobody", bad); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			assert.ErrorIs(t, err, ringwal.ErrInvalid)
			assert.NotErrorIs(t, err, ringwal.ErrFull)
		})
	}
}
