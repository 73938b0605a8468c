package bench

// W3: retry storm, in memory. P producers, P workers; 10 % of handlings
// fail transiently (each worker draws from its own generator) and are
// retried after an exponential backoff of 1ms, 2ms, 4ms, ... capped at
// 10ms, without jitter, until they succeed. b.N counts messages handled
// successfully; retries are extra work within the same time.
//
//	BenchmarkW3/ringwal/{1P1C,4P4C,16P16C}    memory-only engine, Nack with a classify.Transient error,
//	                                         Options.Policies[Transient] = {Base 1ms, Max 10ms, Multiplier 2, NoJitter}
//	BenchmarkW3/workqueue/...                client-go typed rate-limiting workqueue, AddRateLimited on failure,
//	                                         Forget on success, ItemExponentialFailureRateLimiter(1ms, 10ms)

import (
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

const (
	w3Base = time.Millisecond
	w3Max  = 10 * time.Millisecond
)

func BenchmarkW3(b *testing.B) {
	peers := []struct {
		name string
		fn   func(*testing.B, shape)
	}{
		{"ringwal", w3Ringwal},
		{"workqueue", w3Workqueue},
	}
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			for _, s := range handoffShapes {
				b.Run(s.String(), func(b *testing.B) { p.fn(b, s) })
			}
		})
	}
}

var errTransient = classify.Mark(errors.New("downstream hiccup"), classify.Transient)

func w3Ringwal(b *testing.B, s shape) {
	e, err := ringwal.Open("", ringwal.Options{
		Policies: map[classify.Category]classify.RetryPolicy{
			// MaxAttempts high enough that nothing is dead-lettered.
			classify.Transient: {MaxAttempts: 1 << 20, Base: w3Base, Max: w3Max, Multiplier: 2, Jitter: classify.NoJitter},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	runRingwal(b, s, e, Small, true)
	if st := e.Stats(); st.Dead != 0 {
		b.Errorf("%d messages dead-lettered", st.Dead)
	}
}

func w3Workqueue(b *testing.B, s shape) {
	q := workqueue.NewTypedRateLimitingQueue(
		workqueue.NewTypedItemExponentialFailureRateLimiter[uint64](w3Base, w3Max))
	cd := newCountdown(b.N)
	go func() { <-cd.done; q.ShutDown() }()
	run(b, s, cd,
		func(i, n int) error {
			base := uint64(i) << 40
			for k := range n {
				q.Add(base | uint64(k))
			}
			return nil
		},
		func(i int) error {
			r := newRNG(i + 1)
			for {
				k, shutdown := q.Get()
				if shutdown {
					return nil
				}
				if r.failOneIn10() {
					q.AddRateLimited(k)
					q.Done(k)
					continue
				}
				q.Forget(k)
				q.Done(k)
				cd.take()
			}
		})
}
