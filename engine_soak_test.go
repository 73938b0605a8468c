package ringwal_test

// The soak: mixed load with restarts for as long as RINGWAL_SOAK says,
// outside CI (skipped when it is unset). See README.md, "Soak".
//
//	RINGWAL_SOAK=10m go test -race -run TestSoak -timeout 0 .

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// Soak bounds: after the first restarts (the warm-up), the heap in use
// and the goroutine count measured after each Close may not grow past
// these over the warm-up figures.
const (
	soakHeapSlack       = 32 << 20
	soakGoroutineSlack  = 8
	soakWarmupRestarts  = 2
	soakDefaultInterval = 20 * time.Second
)

func TestSoak(t *testing.T) {
	spec := os.Getenv("RINGWAL_SOAK")
	if spec == "" {
		t.Skip("set RINGWAL_SOAK (e.g. 10m) to run the soak")
	}
	total, err := time.ParseDuration(spec)
	require.NoError(t, err, "RINGWAL_SOAK")
	interval := soakDefaultInterval
	if v := os.Getenv("RINGWAL_SOAK_RESTART"); v != "" {
		interval, err = time.ParseDuration(v)
		require.NoError(t, err, "RINGWAL_SOAK_RESTART")
	}
	dir := t.TempDir()
	o := ringwal.Options{
		Durability:      ringwal.Write,
		MaxMessages:     1 << 14,
		LeaseTimeout:    300 * time.Millisecond,
		DedupWindow:     2 * time.Second,
		CheckpointBytes: 8 << 20,
		CloseGrace:      time.Second,
		Breaker:         breaker.Options{ConsecutiveFailures: 20, OpenTimeout: 200 * time.Millisecond},
		Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: {MaxAttempts: 4, Base: 5 * time.Millisecond, Max: 100 * time.Millisecond, Multiplier: 2, Jitter: classify.FullJitter},
			classify.Unknown:   {MaxAttempts: 3, Base: 5 * time.Millisecond, Max: 50 * time.Millisecond, Multiplier: 2},
			classify.Timeout:   {MaxAttempts: 3, Base: 5 * time.Millisecond, Max: 50 * time.Millisecond, Multiplier: 2},
		},
	}
	end := time.Now().Add(total)
	var baseHeap uint64
	var baseG int
	var totals soakTotals
	for round := 1; time.Now().Before(end); round++ {
		phase := min(interval, time.Until(end))
		e, err := ringwal.Open(dir, o)
		require.NoError(t, err, "Open, round %d", round)
		soakRound(t, e, phase, &totals)
		s := e.Stats()
		require.NoError(t, e.Close(), "Close, round %d", round)

		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		g := runtime.NumGoroutine()
		fmt.Printf("soak round %3d: heap in use %6.1f MiB, goroutines %3d; live %d, dead %d; totals %s\n",
			round, float64(ms.HeapInuse)/(1<<20), g, s.Pending+s.Delayed+s.Leased+s.Held, s.Dead, totals.String())
		switch {
		case round == soakWarmupRestarts:
			baseHeap, baseG = ms.HeapInuse, g
		case round > soakWarmupRestarts:
			require.LessOrEqual(t, ms.HeapInuse, baseHeap+soakHeapSlack, "heap in use grows: round %d", round)
			require.LessOrEqual(t, g, baseG+soakGoroutineSlack, "goroutines grow: round %d", round)
		}
	}
}

type soakTotals struct {
	enqueued, duplicates, handled, failed, panics, redriven, purged, checkpoints atomic.Uint64
}

func (s *soakTotals) String() string {
	return fmt.Sprintf("enqueued %d (dup %d), handled %d (failed %d, panics %d), redriven %d, purged %d, checkpoints %d",
		s.enqueued.Load(), s.duplicates.Load(), s.handled.Load(), s.failed.Load(), s.panics.Load(),
		s.redriven.Load(), s.purged.Load(), s.checkpoints.Load())
}

// soakRound runs producers, a Run with random outcomes and an operator
// against e for d.
func soakRound(t *testing.T, e *ringwal.Engine, d time.Duration, tot *soakTotals) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
			for ctx.Err() == nil {
				m := ringwal.Message{
					Key:      fmt.Sprintf("k%d", rng.IntN(8)),
					Priority: ringwal.Priority(rng.IntN(5) - 2),
					Payload:  make([]byte, 16+rng.IntN(512)),
				}
				if rng.IntN(4) == 0 {
					m.Delay = time.Duration(rng.IntN(50)) * time.Millisecond
				}
				if rng.IntN(4) == 0 {
					m.TTL = time.Duration(100+rng.IntN(2000)) * time.Millisecond
				}
				if rng.IntN(3) == 0 {
					m.DedupID = fmt.Sprintf("d%d", rng.IntN(2000))
				}
				_, err := e.Enqueue(ctx, m)
				// Paced, so that consumers keep up and the backlog stays
				// a working set rather than MaxMessages.
				time.Sleep(100 * time.Microsecond)
				switch {
				case err == nil:
					tot.enqueued.Add(1)
				case errors.Is(err, ringwal.ErrDuplicate):
					tot.duplicates.Add(1)
				case ctx.Err() != nil:
					return
				default:
					report(fmt.Errorf("Enqueue: %w", err))
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := e.Run(ctx, 4, func(hctx context.Context, dv ringwal.Delivery) error {
			tot.handled.Add(1)
			switch n := rand.IntN(100); {
			case n < 70:
				return nil
			case n < 88:
				tot.failed.Add(1)
				return classify.Mark(errors.New("downstream busy"), classify.Transient)
			case n < 93:
				tot.failed.Add(1)
				return classify.Mark(errors.New("rejected"), classify.Permanent)
			case n < 96:
				tot.panics.Add(1)
				panic("handler bug")
			case n < 99:
				tot.failed.Add(1)
				return errors.New("unclassified")
			default: // one in 200 outlives its lease, unless told to stop
				if rand.IntN(2) == 0 {
					return nil
				}
				select {
				case <-hctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
				return hctx.Err()
			}
		})
		if err != nil {
			report(fmt.Errorf("Run: %w", err))
		}
	}()
	wg.Add(1)
	go func() { // the operator
		defer wg.Done()
		rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			dls, err := e.DeadLetters(dlq.Query{Limit: 16})
			if err != nil {
				report(fmt.Errorf("DeadLetters: %w", err))
				return
			}
			for _, dl := range dls {
				switch rng.IntN(3) {
				case 0:
					if e.Redrive(dl.ID) == nil {
						tot.redriven.Add(1)
					}
				case 1:
					_ = e.MarkReviewed(dl.ID, "seen")
				}
			}
			if n%10 == 0 {
				// Reviewed ones, and the oldest others: the store stays bounded.
				got, err := e.PurgeDeadLetters(dlq.Query{Reviewed: dlq.OnlyReviewed})
				if err == nil {
					var more int
					more, err = e.PurgeDeadLetters(dlq.Query{Limit: 256})
					got += more
				}
				if err != nil {
					report(fmt.Errorf("PurgeDeadLetters: %w", err))
					return
				}
				tot.purged.Add(uint64(got))
			}
			if n%50 == 0 {
				if err := e.Checkpoint(); err != nil {
					report(fmt.Errorf("Checkpoint: %w", err))
					return
				}
				tot.checkpoints.Add(1)
			}
			_ = e.Stats()
			_ = e.Peek(8)
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}
