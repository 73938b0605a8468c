package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// A handler whose work outlasts Options.LeaseTimeout extends its lease as
// it goes, a heartbeat: each Extend makes the lease end 30s from now, so
// the message is not handed to another consumer while this one still
// works on it. Without it the lease ends, the handler's ctx ends with it,
// its ack is refused and the message comes back as a Timeout failure.
// A fake clock stands in for the minutes of work.
func ExampleEngine_Extend() {
	fake := clock.NewFake(time.Time{})
	e, err := ringwal.Open("", ringwal.Options{Clock: fake, LeaseTimeout: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	// work stands in for 20s of the handler's work: the fake clock moves
	// instead, and BlockUntil waits for the engine's timer goroutine to act
	// on the time that passed (it arms its timer again once it is done).
	start := fake.Now()
	work := func() {
		fake.Advance(20 * time.Second)
		fake.BlockUntil(1)
	}

	if _, err := e.Enqueue(ctx, ringwal.Message{Payload: []byte("reindex customer 42")}); err != nil {
		log.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, 1, func(ctx context.Context, d ringwal.Delivery) error {
			for part := 1; part <= 3; part++ {
				work()
				if err := ctx.Err(); err != nil {
					return err // the lease ended: another delivery will take over
				}
				if err := e.Extend(d.Lease, 30*time.Second); err != nil {
					return err
				}
				fmt.Printf("%s: part %d done at %v, lease extended\n", d.Message.Payload, part, fake.Since(start))
			}
			return nil // ack, at 60s: twice the lease timeout
		})
	}()
	if err := e.WaitIdle(ctx); err != nil {
		log.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	s := e.Stats()
	fmt.Println("acked:", s.Acked, "lease expiries:", s.LeaseExpiries)

	// The same work without Extend, by hand: the lease ends at 30s.
	id, err := e.Enqueue(context.Background(), ringwal.Message{Payload: []byte("reindex customer 43")})
	if err != nil {
		log.Fatal(err)
	}
	d, err := e.Dequeue(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	work()
	work()
	err = e.Ack(d.Lease)
	fmt.Println("ack after 40s without Extend:", errors.Is(err, ringwal.ErrStaleLease))
	info, err := e.Get(id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s, %s: %s\n", info.Message.Payload, info.State, info.LastCategory, info.LastError)
	// Output:
	// reindex customer 42: part 1 done at 20s, lease extended
	// reindex customer 42: part 2 done at 40s, lease extended
	// reindex customer 42: part 3 done at 1m0s, lease extended
	// acked: 1 lease expiries: 0
	// ack after 40s without Extend: true
	// reindex customer 43: delayed, timeout: lease expired (LeaseTimeout 30s)
}
