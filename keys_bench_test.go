package ringwal_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
)

// BenchmarkKeyed is the EnqueueDequeueAck loop with a Key on every
// message and no KeyPolicy: the path every keyed user takes, which the key
// controls must not slow.
func BenchmarkKeyed(b *testing.B) {
	e, err := ringwal.Open("", ringwal.Options{TierCapacity: 1 << 16, MaxMessages: 1 << 17})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	runEnqueueDequeueAckKeyed(b, e, 0, benchKeys(64))
}

// BenchmarkOrderedKeys: 1,000 keys, 4 producers, 16 workers (Dequeue,
// Ack). Ordered delivers each key's messages one at a time; Unordered is
// the same traffic without a policy. The bar: Ordered at least
// half of Unordered's msgs/s.
func BenchmarkOrderedKeys(b *testing.B) {
	for _, c := range []struct {
		name    string
		ordered bool
	}{{"Unordered", false}, {"Ordered", true}} {
		b.Run(c.name, func(b *testing.B) {
			o := ringwal.Options{TierCapacity: 1 << 16, MaxMessages: 1 << 17}
			if c.ordered {
				o.KeyPolicy = func(string) ringwal.KeyPolicy { return ringwal.KeyPolicy{Ordered: true} }
			}
			e, err := ringwal.Open("", o)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			keys := benchKeys(1000)
			payload := make([]byte, benchPayloadSize)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var acked atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			for w := 0; w < 16; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for acked.Load() < int64(b.N) {
						d, err := e.Dequeue(ctx)
						if err != nil {
							return
						}
						if err := e.Ack(d.Lease); err != nil {
							b.Error(err)
							return
						}
						if acked.Add(1) == int64(b.N) {
							cancel()
						}
					}
				}()
			}
			var produced atomic.Int64
			for p := 0; p < 4; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := produced.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						if _, err := e.Enqueue(ctx, ringwal.Message{Key: keys[i%int64(len(keys))], Payload: payload}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "target-" + strconv.Itoa(i)
	}
	return keys
}

// BenchmarkDeadKeyIsolation: a healthy key's EnqueueDequeueAck loop, alone
// and beside a dead key whose breaker is open and whose held messages
// fill its isolation cap (a quarter of MaxMessages). The bar: the
// healthy key's rate unchanged.
func BenchmarkDeadKeyIsolation(b *testing.B) {
	for _, c := range []struct {
		name string
		dead bool
	}{{"Alone", false}, {"BesideDeadKeyAtCap", true}} {
		b.Run(c.name, func(b *testing.B) {
			e, err := ringwal.Open("", ringwal.Options{
				MaxMessages: 1 << 12, TierCapacity: 1 << 12,
				Breaker: breaker.Options{OpenTimeout: time.Hour, MaxOpenTimeout: time.Hour},
				Policies: map[classify.Category]classify.RetryPolicy{
					classify.Transient: {MaxAttempts: 1 << 20, Base: time.Hour, Max: time.Hour, Multiplier: 1},
				},
			})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			if c.dead {
				fillDeadKey(b, e)
			}
			runEnqueueDequeueAckKeyed(b, e, 0, []string{"healthy"})
		})
	}
}

// fillDeadKey opens key "dead"'s breaker and holds its messages until its
// enqueues are refused.
func fillDeadKey(b *testing.B, e *ringwal.Engine) {
	for range 5 {
		if _, err := e.TryEnqueue(ringwal.Message{Key: "dead"}); err != nil {
			b.Fatal(err)
		}
		d, ok := e.TryDequeue()
		if !ok {
			b.Fatal("nothing to dequeue")
		}
		if err := e.Nack(d.Lease, errors.New("connection refused")); err != nil {
			b.Fatal(err)
		}
	}
	for {
		if _, err := e.TryEnqueue(ringwal.Message{Key: "dead"}); err != nil {
			if !errors.Is(err, ringwal.ErrFull) {
				b.Fatal(err)
			}
			break
		}
		if _, ok := e.TryDequeue(); ok {
			b.Fatal("the dead key's message was delivered")
		}
	}
	if st := e.Stats(); st.Held < 1<<10 {
		b.Fatalf("held %d, want the cap %d", st.Held, 1<<10)
	}
}
