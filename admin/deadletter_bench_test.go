package admin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// BenchmarkNackDeadLetterWhileConsolePolls measures what an operator's
// console costs the engine: the latency of a Nack that dead-letters, with
// 300k dead letters stored, with no client and with two clients polling
// the keys page and a dead letter by ID (GET /api/messages/{id}) over
// HTTP, every millisecond (a console refreshes every few seconds), and
// in a tight loop. It reports the Nack's p50, p99, p99.9 and max (ns);
// compare clients=0 with clients=2. The tight loop measures the worst
// case, where on a small machine the clients and the server take the
// cores the Nacks need (CPU, not a lock: its p50 stays).
//
// Each case collects the garbage of its set-up (and of the case before
// it) before the clock starts: 300k dead letters make a collection cycle
// tens of milliseconds long, the timed Nacks take about as long, and a
// cycle that happened to fall inside one case's Nacks and not another's
// doubled or tripled its p99 whatever the clients did (with GOGC=off the
// cases were within 1x of each other). gc-cycles reports the cycles that
// still ran during the Nacks (the Nacks' own garbage, the clients').
//
//	go test -run '^$' -bench NackDeadLetterWhileConsolePolls -benchtime 20000x ./admin
func BenchmarkNackDeadLetterWhileConsolePolls(b *testing.B) {
	for _, bc := range []struct {
		clients int
		every   time.Duration // between a client's requests; 0: a tight loop
		name    string
	}{{0, 0, "clients=0"}, {2, time.Millisecond, "clients=2"}, {2, 0, "clients=2-tight"}} {
		clients := bc.clients
		b.Run(bc.name, func(b *testing.B) {
			e, err := ringwal.Open("", ringwal.Options{MaxMessages: 1 << 12})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ids := enginetest.DeadLetterN(b, e, "k", 300_000)
			srv := httptest.NewServer(admin.NewHandler(e, admin.Options{}))
			defer srv.Close()

			stop := make(chan struct{})
			var wg sync.WaitGroup
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					paths := []string{"/keys", fmt.Sprintf("/api/messages/%d", ids[len(ids)/2])}
					for i := c; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						resp, err := http.Get(srv.URL + paths[i%2])
						if err != nil {
							b.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if bc.every > 0 {
							time.Sleep(bc.every)
						}
					}
				}()
			}

			ctx := context.Background()
			cause := classify.Mark(errors.New("rejected"), classify.Permanent)
			lat := make([]time.Duration, 0, b.N)
			msg := ringwal.Message{Key: "k", Payload: []byte("x")}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for range b.N {
				if _, err := e.Enqueue(ctx, msg); err != nil {
					b.Fatal(err)
				}
				d, err := e.Dequeue(ctx)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := e.Nack(d.Lease, cause); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
			b.ReportMetric(float64(lat[len(lat)*999/1000]), "p99.9-ns")
			b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
			b.ReportMetric(float64(after.NumGC-before.NumGC), "gc-cycles")
		})
	}
}
