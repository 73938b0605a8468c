package ringwal_test

// Concurrency review: settling, leases and their expiry, held messages,
// dequeue and Run, under concurrent callers.

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// Run must return soon after its ctx ends even when messages keep being
// ready: a worker must not go on taking deliveries with an ended ctx.
func TestReviewRunReturnsWhenCtxEndsWithBacklog(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	const n = 3000
	for i := 0; i < n; i++ {
		enqueueP(t, e, ringwal.Normal, "x")
	}
	var handled atomic.Int64
	ctx, cancel := context.WithCancel(ctxBG)
	defer cancel()
	runErr := make(chan error, 1)
	go func() {
		runErr <- e.Run(ctx, 2, func(context.Context, ringwal.Delivery) error {
			if handled.Add(1) == 5 {
				cancel()
			}
			time.Sleep(time.Millisecond)
			return nil
		})
	}()
	select {
	case err := <-runErr:
		require.NoError(t, err)
	case <-time.After(300 * time.Millisecond):
		<-runErr
		t.Fatalf("Run kept handling after its ctx ended (%d of %d handled)", handled.Load(), n)
	}
	assert.Less(t, handled.Load(), int64(20), "deliveries taken after ctx ended")
}
