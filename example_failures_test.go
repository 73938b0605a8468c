package ringwal_test

import (
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/httpfail"
)

// A webhook sender with three receivers, each a Key: "healthy" takes
// every call; "flaky" answers 503 to every one (it is down); "limited"
// answers the first burst with 429 and a Retry-After of 1s. The sender
// sends whatever is ready at once (those calls are in flight together),
// then a second passes; a fake clock makes a quarter of an hour take a
// moment. httpfail turns each answer into the error the engine reads: 503
// is Transient, 429 RateLimited with its Retry-After as the hint.
//
// The 429s pause "limited" for a second and do not count against its
// breaker, so it never opens and every message goes through. The 503s
// open "flaky"'s breaker after five failures; its messages are then held,
// spending no attempts, while half-open probes find it still down, and
// once held for Options.MaxHold (15 minutes by default) they are
// dead-lettered as transient, the category of the failures that opened
// the breaker. "healthy" never notices.
func Example_failingDownstreams() {
	fake := clock.NewFake(time.Time{})
	e, err := ringwal.Open("", ringwal.Options{
		Clock: fake,
		// Retry a 503 up to 25 times, as asynq and River do by default,
		// so that here the hold ends the messages, not their attempts.
		Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: {MaxAttempts: 25, Base: time.Second, Max: time.Minute, Multiplier: 2, Jitter: classify.EqualJitter},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	keys := []string{"healthy", "flaky", "limited"}
	for i := range 5 {
		for _, key := range keys {
			if _, err := e.TryEnqueue(ringwal.Message{Key: key, Payload: fmt.Appendf(nil, "event %d", i)}); err != nil {
				log.Fatal(err)
			}
		}
	}

	tooMany := 0 // 429s "limited" answered
	send := func(m ringwal.Message) error {
		switch m.Key {
		case "flaky":
			return httpfail.FromStatus(http.StatusServiceUnavailable, nil)
		case "limited":
			if tooMany < 5 {
				tooMany++
				return httpfail.FromStatus(http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}})
			}
		}
		return nil
	}

	start := fake.Now()
	acked := map[string]int{}
	for s := e.Stats(); s.Acked+uint64(s.Dead) < 15 && fake.Since(start) < 2*time.Hour; s = e.Stats() {
		var inFlight []ringwal.Delivery
		for {
			d, ok := e.TryDequeue()
			if !ok {
				break
			}
			inFlight = append(inFlight, d)
		}
		for _, d := range inFlight {
			if err := send(d.Message); err != nil {
				err = e.Nack(d.Lease, err)
			} else {
				acked[d.Message.Key]++
				err = e.Ack(d.Lease)
			}
			if err != nil {
				log.Fatal(err)
			}
		}
		fake.Advance(time.Second)
		// The engine's timer goroutine arms its one timer again once it
		// has done what came due: wait for it, so that the engine keeps
		// pace with the fake clock.
		fake.BlockUntil(1)
	}

	trips := map[string]uint64{}
	for _, b := range e.Stats().Breakers {
		trips[b.Key] = b.Trips
	}
	fmt.Printf("healthy: %d acked, breaker opened %d times\n", acked["healthy"], trips["healthy"])
	fmt.Printf("limited: %d answers of 429, %d acked, breaker opened %d times\n", tooMany, acked["limited"], trips["limited"])
	dead, err := e.DeadLetters(dlq.Query{Key: "flaky"})
	if err != nil {
		log.Fatal(err)
	}
	reasons := map[string]int{}
	for _, d := range dead {
		last := d.Failures[len(d.Failures)-1]
		reasons[fmt.Sprintf("%v after %v: %s", d.Category, d.DeadAt.Sub(start).Truncate(time.Minute), last.Error)]++
	}
	fmt.Printf("flaky: %d acked, %d dead-lettered\n", acked["flaky"], len(dead))
	for r, n := range reasons {
		fmt.Printf("  %d %s\n", n, r)
	}
	// Output:
	// healthy: 5 acked, breaker opened 0 times
	// limited: 5 answers of 429, 5 acked, breaker opened 0 times
	// flaky: 0 acked, 5 dead-lettered
	//   5 transient after 15m0s: held longer than MaxHold 15m0s behind the open breaker of key "flaky"
}
