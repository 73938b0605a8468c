package ringwal

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
)

// A claim that turns out a repeat takes an ID before it is counted unused;
// a Stats read in between must not count it as enqueued, or the
// high-water mark that keeps Enqueued monotonic would keep the lead.
func TestStatsEnqueuedNeverLeadsOnAClaimInFlight(t *testing.T) {
	e := openEngine(t, "", Options{})
	for range 3 {
		_, err := e.Enqueue(context.Background(), Message{})
		require.NoError(t, err)
	}
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d.Lease))

	e.nextID.Add(1) // a claim in flight, as claim takes its ID
	assert.Equal(t, uint64(3), e.Stats().Enqueued, "read while the claim is in flight")
	e.ctr.unused.Add(1) // it turned out a repeat
	assert.Equal(t, uint64(3), e.Stats().Enqueued, "at rest")
}

// Stats gets its turn while dead-letterings keep overlapping: at every
// instant some message is between the slab and the dead-letter store
// (each mover begins its next move before the other ends its current
// one), yet Stats returns, and counts each message once.
func TestStatsReturnsWhileDeadLetteringsOverlap(t *testing.T) {
	e := openEngine(t, "", Options{MaxMessages: 1 << 13})
	const n = 4000
	leases := make([]Lease, 0, n)
	for i := 0; i < n; i++ {
		_, err := e.TryEnqueue(Message{Payload: []byte("x")})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		leases = append(leases, d.Lease)
	}
	_ = e.Stats() // counting starts

	// Each mover, told to, begins a move (the message enters the
	// dead-letter store's window), says so, and ends it when told.
	var start, finish [2]chan int
	began, ended := make(chan int), make(chan int)
	for m := range start {
		start[m], finish[m] = make(chan int), make(chan int)
		go func() {
			for i := range start[m] {
				rf, _ := e.leaseKey.ref(leases[i])
				r := e.slab.at(rf.slot)
				if !r.own(rf.gen, stLeased) {
					panic("lease not current")
				}
				e.ctr.moves.begin()
				began <- m
				<-finish[m]
				r.fails.Store(r.fails.Load().with(failureAt(e.now())))
				entry := r.fails.Load().deadLetter(r.id.Load(), classify.Permanent, r.message(), 1, e.now())
				if err := e.dead.Add(entry); err != nil {
					panic(err)
				}
				e.release(r)
				e.ctr.moves.end()
				ended <- m
			}
		}()
	}
	defer func() {
		for m := range start {
			close(start[m])
		}
	}()

	statsDone := make(chan Stats, 1)
	cur := 0
	start[cur] <- 0
	<-began
	go func() { statsDone <- e.Stats() }()
	moved := 0
	for i := 1; i < n; i++ {
		other := 1 - cur
		start[other] <- i
		select {
		case <-began: // both in flight: now the older one ends
		case got := <-statsDone:
			t.Fatalf("Stats returned while a move was in flight: %+v", got)
		case <-time.After(50 * time.Millisecond):
			// The other mover waits for Stats (a move cannot begin once
			// Stats asks): the one in flight ends, and Stats must follow.
			finish[cur] <- 1
			<-ended
			got := <-statsDone
			assert.Equal(t, n, got.Leased+got.Dead, "each message counted once: %+v", got)
			<-began
			finish[other] <- 1
			<-ended
			return
		}
		finish[cur] <- 1
		<-ended
		moved++
		cur = other
	}
	finish[cur] <- 1
	<-ended
	select {
	case <-statsDone:
		t.Fatalf("Stats returned only once the moves stopped overlapping (after %d)", moved)
	case <-time.After(10 * time.Second):
		t.Fatalf("Stats never returned")
	}
}
