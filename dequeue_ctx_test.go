package ringwal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// A Dequeue whose ctx has already ended returns the ctx's error and takes
// nothing, even with a message ready: a consumer's loop that stops on an
// error must not go on receiving deliveries. Engine and Queue, one and a
// batch, a cancelled ctx and one past its deadline.
func TestDequeueWithEndedCtxTakesNothing(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, stop := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer stop()
	type dequeuer func(e *ringwal.Engine, ctx context.Context) (int, error)
	for _, tt := range []struct {
		name  string
		queue string
		deq   dequeuer
	}{
		{"Engine.Dequeue", "", func(e *ringwal.Engine, ctx context.Context) (int, error) {
			_, err := e.Dequeue(ctx)
			return count(err, 1)
		}},
		{"Engine.DequeueBatch", "", func(e *ringwal.Engine, ctx context.Context) (int, error) {
			ds, err := e.DequeueBatch(ctx, 10)
			return len(ds), err
		}},
		{"Queue.Dequeue", "jobs", func(e *ringwal.Engine, ctx context.Context) (int, error) {
			_, err := e.Queue("jobs").Dequeue(ctx)
			return count(err, 1)
		}},
		{"Queue.DequeueBatch", "jobs", func(e *ringwal.Engine, ctx context.Context) (int, error) {
			ds, err := e.Queue("jobs").DequeueBatch(ctx, 10)
			return len(ds), err
		}},
	} {
		for _, c := range []struct {
			name string
			ctx  context.Context
		}{{"cancelled", cancelled}, {"deadline passed", expired}} {
			t.Run(tt.name+"/"+c.name, func(t *testing.T) {
				e, _ := memEngine(t, ringwal.Options{})
				_, err := e.Queue(tt.queue).TryEnqueue(ringwal.Message{Payload: []byte("ready")})
				require.NoError(t, err)
				n, err := tt.deq(e, c.ctx)
				assert.ErrorIs(t, err, c.ctx.Err())
				assert.Zero(t, n, "nothing handed out")
				assert.Equal(t, 1, e.Stats().Pending, "the message is still pending")
				live, done := context.WithTimeout(context.Background(), waitFor)
				defer done()
				n, err = tt.deq(e, live)
				require.NoError(t, err)
				assert.Equal(t, 1, n, "a live ctx gets it")
			})
		}
	}
}

// count is n deliveries when err is nil, none otherwise.
func count(err error, n int) (int, error) {
	if err != nil {
		return 0, err
	}
	return n, nil
}
