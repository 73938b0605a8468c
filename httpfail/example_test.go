package httpfail_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/httpfail"
)

// A webhook sender: the handler posts the message and hands the response
// to FromResponse, which says what the engine should do. The receiver
// answers the first call with 429 and "Retry-After: 30": the message
// waits exactly 30 seconds, not the category's backoff, and its key is
// paused as long (the 429 counts no breaker failure); the call then goes
// out again; a 400 is Permanent and dead-letters at
// once. (A fake clock makes 30 seconds pass at once; Options.Now reads
// HTTP-date hints off the same clock.)
func Example_webhookSender() {
	calls := 0
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		switch {
		case r.URL.Path == "/bad":
			http.Error(w, "unknown event", http.StatusBadRequest)
		case calls == 1:
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer receiver.Close()

	fake := clock.NewFake(time.Time{})
	e, err := ringwal.Open("", ringwal.Options{Clock: fake})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	hf := httpfail.Options{Now: fake.Now, MaxRetryAfter: time.Hour}

	send := func(ctx context.Context, d ringwal.Delivery) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost,
			receiver.URL+d.Message.Headers["path"], strings.NewReader(string(d.Message.Payload)))
		if err != nil {
			return classify.Mark(err, classify.Permanent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err // connection refused, reset, timeout: classify.Default knows them
		}
		defer resp.Body.Close()
		return hf.FromResponse(resp)
	}
	// deliver hands the next ready message to send, as Run would.
	deliver := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := e.Dequeue(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if err := send(ctx, d); err != nil {
			fmt.Printf("attempt %d: %v (%v)\n", d.Attempt, strings.Replace(err.Error(), receiver.URL, "http://receiver", 1), classify.Default().Classify(err))
			_ = e.Nack(d.Lease, err)
			return
		}
		fmt.Printf("attempt %d: delivered\n", d.Attempt)
		_ = e.Ack(d.Lease)
	}

	id, _ := e.TryEnqueue(ringwal.Message{Key: "receiver", Payload: []byte(`{"event":"paid"}`)})
	deliver()
	info, _ := e.Get(id)
	fmt.Println("then:", info.State, "for", info.NextAt.Sub(fake.Now()))
	fake.Advance(30 * time.Second)
	deliver()

	_, _ = e.TryEnqueue(ringwal.Message{Key: "receiver", Payload: []byte(`{"event":"??"}`), Headers: map[string]string{"path": "/bad"}})
	deliver()
	fmt.Println("dead letters:", e.Stats().Dead)
	// Output:
	// attempt 1: http POST http://receiver: 429 Too Many Requests (retry after 30s) (rate_limited)
	// then: delayed for 30s
	// attempt 2: delivered
	// attempt 1: http POST http://receiver/bad: 400 Bad Request (permanent)
	// dead letters: 1
}
