package ringwal_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

func TestQueuesDeliverOnlyTheirOwnMessages(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	emails, webhooks := e.Queue("emails"), e.Queue("webhooks")

	mustEnqueue(t, e, ringwal.Message{Payload: []byte("default-1")})
	mustEnqueue(t, e, ringwal.Message{Queue: "emails", Payload: []byte("email-1")})
	_, err := emails.Enqueue(ctxBG, ringwal.Message{Payload: []byte("email-2")})
	require.NoError(t, err)
	_, err = webhooks.EnqueueBatch(ctxBG, []ringwal.Message{{Payload: []byte("hook-1")}, {Queue: "webhooks", Payload: []byte("hook-2")}})
	require.NoError(t, err)
	_, err = e.EnqueueBatch(ctxBG, []ringwal.Message{
		{Payload: []byte("default-2")}, {Queue: "emails", Payload: []byte("email-3")}, {Queue: "webhooks", Payload: []byte("hook-3")}})
	require.NoError(t, err)

	d, ok := emails.TryDequeue()
	require.True(t, ok)
	assert.Equal(t, "emails", d.Message.Queue, "a delivery says its queue")
	info, err := e.Get(d.ID)
	require.NoError(t, err)
	assert.Equal(t, "emails", info.Message.Queue, "Get says its queue")
	require.NoError(t, e.Ack(d.Lease))

	assert.Equal(t, []string{"email-2", "email-3"}, drainQueue(t, e, emails.TryDequeue))
	assert.Equal(t, []string{"hook-1", "hook-2", "hook-3"}, drainQueue(t, e, webhooks.TryDequeue))
	assert.Equal(t, []string{"default-1", "default-2"}, drainQueue(t, e, e.TryDequeue),
		"Engine.TryDequeue serves the default queue only")

	names := []string{}
	for _, q := range e.Queues() {
		names = append(names, q.Name)
	}
	assert.Equal(t, []string{"", "emails", "webhooks"}, names, "the default queue first, then by name")
}

func TestQueueHandleRefusesAMessageForAnotherQueue(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	_, err := e.Queue("a").Enqueue(ctxBG, ringwal.Message{Queue: "b"})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	_, err = e.Queue("a").EnqueueBatch(ctxBG, []ringwal.Message{{}, {Queue: "b"}})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	assert.Contains(t, err.Error(), "message 1")
}

func TestQueueNamesAreValidated(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"emails", true},
		{"billing.v2/eu-west", true},
		{"émails", true},
		{strings.Repeat("q", 128), true},
		{strings.Repeat("q", 129), false},
		{"_internal", false},
		{"two words", false},
		{"tab\there", false},
		{"bell\a", false},
		{"bad\xffutf8", false},
	} {
		t.Run(fmt.Sprintf("%.20q", tc.name), func(t *testing.T) {
			err := e.DeclareQueue(tc.name, ringwal.QueueOptions{})
			_, eerr := e.TryEnqueue(ringwal.Message{Queue: tc.name})
			if tc.ok {
				assert.NoError(t, err)
				assert.NoError(t, eerr)
				return
			}
			assert.ErrorIs(t, err, ringwal.ErrInvalid)
			assert.ErrorIs(t, eerr, ringwal.ErrInvalid)
		})
	}
}

func TestQueueOptionsAreValidated(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	for name, o := range map[string]ringwal.QueueOptions{
		"negative cap":    {MaxMessages: -1},
		"negative lease":  {LeaseTimeout: -time.Second},
		"bad policy":      {Policies: map[classify.Category]classify.RetryPolicy{classify.Transient: {MaxAttempts: -1}}},
		"topic twice":     {Topics: []string{"t", "t"}},
		"bad topic":       {Topics: []string{"_t"}},
		"too many topics": {Topics: make([]string, 65)},
	} {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, e.DeclareQueue("q", o), ringwal.ErrInvalid)
		})
	}
	assert.ErrorIs(t, e.DeclareQueue("", ringwal.QueueOptions{MaxMessages: 5}), ringwal.ErrInvalid,
		"the default queue takes no cap of its own")
	_, err := ringwal.Open("", ringwal.Options{Queues: map[string]ringwal.QueueOptions{"_x": {}}})
	assert.ErrorIs(t, err, ringwal.ErrInvalid, "Options.Queues are checked at Open")
}

func TestMaxQueuesCapsDeclaredQueues(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{MaxQueues: 3})
	for i := range 3 {
		require.NoError(t, e.DeclareQueue(fmt.Sprintf("q%d", i), ringwal.QueueOptions{}))
	}
	require.NoError(t, e.DeclareQueue("q0", ringwal.QueueOptions{Strict: true}), "an update is no new queue")
	assert.ErrorIs(t, e.DeclareQueue("q3", ringwal.QueueOptions{}), ringwal.ErrFull)
	_, err := e.TryEnqueue(ringwal.Message{Queue: "q4"})
	assert.ErrorIs(t, err, ringwal.ErrFull, "nor is one declared by its first message")
	_, err = ringwal.Open("", ringwal.Options{MaxQueues: 60_001})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
}

func TestOptionsQueuesDeclareAtOpen(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Queues: map[string]ringwal.QueueOptions{
		"b": {MaxMessages: 7}, "a": {Strict: true}, "": {LeaseTimeout: time.Minute}}})
	qs := e.Queues()
	require.Len(t, qs, 3)
	assert.Equal(t, "", qs[0].Name)
	assert.Equal(t, time.Minute, qs[0].Options.LeaseTimeout)
	assert.Equal(t, ringwal.QueueInfo{Name: "a", Options: ringwal.QueueOptions{Strict: true}}, qs[1], "zero fields stay zero")
	assert.Equal(t, 7, qs[2].Options.MaxMessages)
}

func TestQueueAtMaxMessagesFailsFastNamingItWhileOthersEnqueue(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	require.NoError(t, e.DeclareQueue("capped", ringwal.QueueOptions{MaxMessages: 2}))
	capped := e.Queue("capped")
	for range 2 {
		_, err := capped.TryEnqueue(ringwal.Message{})
		require.NoError(t, err)
	}
	_, err := capped.TryEnqueue(ringwal.Message{})
	require.ErrorIs(t, err, ringwal.ErrFull)
	assert.Contains(t, err.Error(), `queue "capped"`)
	_, err = capped.EnqueueBatch(ctxBG, make([]ringwal.Message, 3))
	assert.ErrorIs(t, err, ringwal.ErrInvalid, "a batch larger than the cap can never fit")

	mustEnqueue(t, e, ringwal.Message{})
	_, err = e.Queue("other").TryEnqueue(ringwal.Message{})
	assert.NoError(t, err, "other queues keep the rest of the engine")

	// An Enqueue waits for room, which an ack of that queue makes.
	done := make(chan error, 1)
	go func() {
		_, err := capped.Enqueue(ctxBG, ringwal.Message{Payload: []byte("third")})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Enqueue into a full queue returned %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	d, ok := capped.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d.Lease))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Enqueue never got the room an ack made")
	}
}

func TestQueuePoliciesAndLeaseTimeoutApplyPerQueue(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	require.NoError(t, e.DeclareQueue("once", ringwal.QueueOptions{
		LeaseTimeout: time.Second,
		Policies:     map[classify.Category]classify.RetryPolicy{classify.Transient: fastPolicy(1), classify.Timeout: fastPolicy(1)},
	}))
	once := e.Queue("once")
	fail := classify.Mark(errors.New("downstream said no"), classify.Transient)

	// Transient: the queue's policy allows one attempt, the engine's five.
	mustEnqueue(t, e, ringwal.Message{Queue: "once", Payload: []byte("q")})
	mustEnqueue(t, e, ringwal.Message{Payload: []byte("d")})
	d, ok := once.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, fail))
	info, err := e.Get(d.ID)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Dead, info.State, "the queue's policy dead-letters at once")
	d, ok = e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, fail))
	info, err = e.Get(d.ID)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Delayed, info.State, "the engine's policy retries")

	// Timeout: the queue's lease lasts a second, the engine's 30.
	id := mustEnqueue(t, e, ringwal.Message{Queue: "once"})
	_, ok = once.TryDequeue()
	require.True(t, ok)
	fake.Advance(2 * time.Second)
	require.Eventually(t, func() bool {
		info, err := e.Get(id)
		return err == nil && info.State == ringwal.Dead
	}, waitFor, time.Millisecond, "the lease of the queue's timeout expired and its policy dead-lettered it")
	dl, err := e.DeadLetter(id)
	require.NoError(t, err)
	assert.Equal(t, classify.Timeout, dl.Category)
	assert.Equal(t, "once", dl.Message.Queue, "a dead letter remembers its queue")
}

func TestRedriveReturnsTheMessageToItsQueue(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	id := mustEnqueue(t, e, ringwal.Message{Queue: "billing", Payload: []byte("invoice")})
	d, ok := e.Queue("billing").TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("bad"), classify.Permanent)))
	require.NoError(t, e.Redrive(id))
	_, ok = e.TryDequeue()
	assert.False(t, ok, "not into the default queue")
	d, ok = e.Queue("billing").TryDequeue()
	require.True(t, ok)
	assert.Equal(t, id, d.ID)
}

func TestDelayedMessageBecomesReadyInItsQueue(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	id := mustEnqueue(t, e, ringwal.Message{Queue: "later", Delay: time.Minute})
	fake.Advance(2 * time.Minute)
	require.Eventually(t, func() bool {
		info, err := e.Get(id)
		return err == nil && info.State == ringwal.Pending
	}, waitFor, time.Millisecond)
	_, ok := e.TryDequeue()
	assert.False(t, ok)
	d, ok := e.Queue("later").TryDequeue()
	require.True(t, ok)
	assert.Equal(t, id, d.ID)
}

func TestQueueRunHandlesItsQueueOnly(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	const n = 50
	for i := range n {
		mustEnqueue(t, e, ringwal.Message{Queue: "work", Payload: []byte(fmt.Sprint(i))})
	}
	mustEnqueue(t, e, ringwal.Message{Payload: []byte("default")})
	ctx, cancel := context.WithCancel(ctxBG)
	var mu sync.Mutex
	seen := 0
	done := make(chan error, 1)
	go func() {
		done <- e.Queue("work").Run(ctx, 4, func(_ context.Context, d ringwal.Delivery) error {
			mu.Lock()
			defer mu.Unlock()
			if d.Message.Queue != "work" {
				return fmt.Errorf("handled a message of queue %q", d.Message.Queue)
			}
			seen++
			return nil
		})
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return seen == n }, waitFor, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	d, ok := e.TryDequeue()
	require.True(t, ok, "the default queue's message is still there")
	assert.Equal(t, "default", string(d.Message.Payload))
}

func TestStrictQueueServesHighestTierFirst(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	require.NoError(t, e.DeclareQueue("strict", ringwal.QueueOptions{Strict: true}))
	for i := range 10 {
		mustEnqueue(t, e, ringwal.Message{Queue: "strict", Priority: ringwal.Low, Payload: []byte(fmt.Sprint("low", i))})
	}
	for i := range 3 {
		mustEnqueue(t, e, ringwal.Message{Queue: "strict", Priority: ringwal.High, Payload: []byte(fmt.Sprint("high", i))})
	}
	got := drainQueue(t, e, e.Queue("strict").TryDequeue)
	require.Len(t, got, 13)
	assert.Equal(t, []string{"high0", "high1", "high2"}, got[:3])
}

func TestPausedQueueDeliversNothingWhileOthersDeliver(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	mustEnqueue(t, e, ringwal.Message{Queue: "paused", Payload: []byte("p")})
	mustEnqueue(t, e, ringwal.Message{Queue: "other", Payload: []byte("o")})
	mustEnqueue(t, e, ringwal.Message{Payload: []byte("d")})
	paused := e.Queue("paused")
	require.NoError(t, paused.Pause(fake.Now().Add(time.Minute)))
	require.NoError(t, paused.Pause(fake.Now().Add(time.Second)), "a pause never shortens one in force")
	info := e.Queues()[2]
	require.Equal(t, "paused", info.Name)
	assert.True(t, info.Paused)
	assert.True(t, fake.Now().Add(time.Minute).Equal(info.PausedUntil), "until %v", info.PausedUntil)

	_, ok := paused.TryDequeue()
	assert.False(t, ok, "a paused queue delivers nothing")
	assert.Equal(t, []string{"o"}, drainQueue(t, e, e.Queue("other").TryDequeue), "other queues deliver")
	assert.Equal(t, []string{"d"}, drainQueue(t, e, e.TryDequeue))

	// A consumer waiting on the paused queue gets its message once the
	// pause ends.
	got := make(chan string, 1)
	go func() {
		d, err := paused.Dequeue(ctxBG)
		if err == nil {
			got <- string(d.Message.Payload)
		}
	}()
	fake.Advance(2 * time.Minute)
	select {
	case p := <-got:
		assert.Equal(t, "p", p)
	case <-time.After(waitFor):
		t.Fatal("the pause's end did not wake the queue's consumer")
	}
	assert.False(t, e.Queues()[2].Paused)

	require.NoError(t, paused.Pause(time.Time{}))
	mustEnqueue(t, e, ringwal.Message{Queue: "paused", Payload: []byte("q")})
	_, ok = paused.TryDequeue()
	assert.False(t, ok, "paused until Resume")
	require.NoError(t, paused.Resume())
	assert.Equal(t, []string{"q"}, drainQueue(t, e, paused.TryDequeue))
	assert.ErrorIs(t, paused.Pause(fake.Now().Add(-time.Second)), ringwal.ErrInvalid)
}

func TestPublishPutsOneCopyInEveryBoundQueue(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Queues: map[string]ringwal.QueueOptions{
		"audit":   {Topics: []string{"orders"}},
		"billing": {Topics: []string{"orders", "refunds"}},
		"mail":    {Topics: []string{"signups"}},
	}})
	ids, err := e.Publish(ctxBG, "orders", ringwal.Message{Payload: []byte("order-1"), Key: "shop"})
	require.NoError(t, err)
	require.Len(t, ids, 2)
	assert.NotEqual(t, ids[0], ids[1], "each copy has its own ID")
	for i, q := range []string{"audit", "billing"} {
		d, ok := e.Queue(q).TryDequeue()
		require.True(t, ok, q)
		assert.Equal(t, ids[i], d.ID, "IDs in the order of the queues' names")
		assert.Equal(t, "order-1", string(d.Message.Payload))
		assert.Equal(t, q, d.Message.Queue)
		if q == "audit" {
			require.NoError(t, e.Ack(d.Lease))
		} else {
			require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("no"), classify.Permanent)))
		}
	}
	info, err := e.Get(ids[1])
	require.NoError(t, err)
	assert.Equal(t, ringwal.Dead, info.State, "copies have their own fates")
	_, err = e.Get(ids[0])
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	_, ok := e.Queue("mail").TryDequeue()
	assert.False(t, ok, "an unbound queue gets no copy")

	ids, err = e.Publish(ctxBG, "nobody", ringwal.Message{})
	assert.NoError(t, err)
	assert.Empty(t, ids)
	s := e.Stats()
	assert.EqualValues(t, 1, s.Published)
	assert.EqualValues(t, 1, s.UnroutedPublishes)

	_, err = e.Publish(ctxBG, "orders", ringwal.Message{Queue: "audit"})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
}

func TestPublishIsAllOrNoneWhenAQueueIsFull(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Queues: map[string]ringwal.QueueOptions{
		"roomy": {Topics: []string{"t"}},
		"small": {Topics: []string{"t"}, MaxMessages: 1},
	}})
	_, err := e.Publish(ctxBG, "t", ringwal.Message{})
	require.NoError(t, err)
	_, err = e.Publish(ctxBG, "t", ringwal.Message{})
	require.ErrorIs(t, err, ringwal.ErrFull)
	assert.Contains(t, err.Error(), `queue "small"`)
	assert.Len(t, drainQueue(t, e, e.Queue("roomy").TryDequeue), 1, "the refused publish added no copy anywhere")
}

func TestPublishWithADedupIDAddsNoCopyTwice(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{DedupWindow: time.Hour, Queues: map[string]ringwal.QueueOptions{
		"a": {Topics: []string{"t"}}, "b": {Topics: []string{"t"}}}})
	first, err := e.Publish(ctxBG, "t", ringwal.Message{DedupID: "evt-1"})
	require.NoError(t, err)
	again, err := e.Publish(ctxBG, "t", ringwal.Message{DedupID: "evt-1"})
	assert.ErrorIs(t, err, ringwal.ErrDuplicate)
	assert.Equal(t, first, again)
	assert.Len(t, drainQueue(t, e, e.Queue("a").TryDequeue), 1)
	assert.Len(t, drainQueue(t, e, e.Queue("b").TryDequeue), 1)
}

func TestMessagesFilterByQueue(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	a := mustEnqueue(t, e, ringwal.Message{Queue: "a"})
	mustEnqueue(t, e, ringwal.Message{Queue: "b"})
	d := mustEnqueue(t, e, ringwal.Message{})
	var got []ringwal.ID
	for info := range e.Messages(ringwal.Filter{Queue: "a"}) {
		got = append(got, info.ID)
	}
	assert.Equal(t, []ringwal.ID{a}, got)
	n := 0
	for info := range e.Messages(ringwal.Filter{}) {
		n++
		if info.ID == d {
			assert.Equal(t, "", info.Message.Queue)
		}
	}
	assert.Equal(t, 3, n, `Queue "" walks every queue`)
}

func TestDeleteQueueRefusedWhileItHoldsMessagesThenAllowed(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	id := mustEnqueue(t, e, ringwal.Message{Queue: "q"})
	err := e.DeleteQueue("q")
	require.ErrorIs(t, err, ringwal.ErrInvalid)
	assert.Contains(t, err.Error(), "1 live messages and 0 dead letters")

	d, ok := e.Queue("q").TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("no"), classify.Permanent)))
	err = e.DeleteQueue("q")
	require.ErrorIs(t, err, ringwal.ErrInvalid)
	assert.Contains(t, err.Error(), "0 live messages and 1 dead letters")

	_, err = e.PurgeDeadLetters(dlqQueue("q"))
	require.NoError(t, err)
	require.NoError(t, e.DeleteQueue("q"))
	_, err = e.Get(id)
	assert.ErrorIs(t, err, ringwal.ErrNotFound)
	for _, q := range e.Queues() {
		assert.NotEqual(t, "q", q.Name)
	}
	assert.ErrorIs(t, e.DeleteQueue("q"), ringwal.ErrNotFound)
	assert.ErrorIs(t, e.DeleteQueue(""), ringwal.ErrInvalid)

	// The name declares afresh.
	mustEnqueue(t, e, ringwal.Message{Queue: "q", Payload: []byte("again")})
	assert.Equal(t, []string{"again"}, drainQueue(t, e, e.Queue("q").TryDequeue))
}

func TestDequeueOnADeletedQueueReturnsNotFound(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	require.NoError(t, e.DeclareQueue("q", ringwal.QueueOptions{}))
	q := e.Queue("q")
	errc := make(chan error, 1)
	go func() {
		_, err := q.Dequeue(ctxBG)
		errc <- err
	}()
	// Parked first: a Dequeue that comes to the handle after the deletion
	// declares the queue again (a handle's first use declares) and waits.
	require.Eventually(t, func() bool { return anyGoroutine("(*Queue).Dequeue(", "ringwal.sleep(") }, waitFor, tick)
	require.NoError(t, e.DeleteQueue("q"))
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, ringwal.ErrNotFound)
	case <-time.After(waitFor):
		t.Fatal("a consumer of a deleted queue kept waiting")
	}
}

func TestDeleteRacingEnqueueNeverStrandsAMessage(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	const rounds = 200
	for i := range rounds {
		require.NoError(t, e.DeclareQueue("q", ringwal.QueueOptions{}))
		idc := make(chan ringwal.ID, 1)
		go func() {
			id, err := e.TryEnqueue(ringwal.Message{Queue: "q", Payload: []byte(fmt.Sprint(i))})
			if err != nil {
				panic(err)
			}
			idc <- id
		}()
		_ = e.DeleteQueue("q") // refused if the message got there first
		id := <-idc
		info, err := e.Get(id)
		require.NoError(t, err)
		assert.Equal(t, "q", info.Message.Queue)
		var found bool
		for _, q := range e.Queues() {
			found = found || q.Name == "q"
		}
		require.True(t, found, "round %d: the message's queue exists", i)
		d, ok := e.Queue("q").TryDequeue()
		require.True(t, ok, "round %d: the message is deliverable in its queue", i)
		require.NoError(t, e.Ack(d.Lease))
		require.NoError(t, e.DeleteQueue("q"))
	}
}

func TestStatsQueuesCountEachQueue(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	mustEnqueue(t, e, ringwal.Message{Queue: "a"})
	mustEnqueue(t, e, ringwal.Message{Queue: "a", Delay: time.Hour})
	mustEnqueue(t, e, ringwal.Message{Queue: "b"})
	mustEnqueue(t, e, ringwal.Message{})
	d, ok := e.Queue("b").TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("no"), classify.Permanent)))
	d, ok = e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d.Lease))
	mustEnqueue(t, e, ringwal.Message{})
	d, ok = e.TryDequeue()
	require.True(t, ok)
	fake.Advance(time.Second)

	s := e.Stats()
	require.Len(t, s.Queues, 3)
	def, a, b := s.Queues[0], s.Queues[1], s.Queues[2]
	assert.Equal(t, ringwal.QueueStats{Name: "", Leased: 1, Enqueued: 2, Acked: 1}, def)
	assert.Equal(t, "a", a.Name)
	assert.Equal(t, 1, a.Pending)
	assert.Equal(t, 1, a.Delayed)
	assert.EqualValues(t, 2, a.Enqueued)
	assert.Positive(t, a.OldestPending)
	assert.Equal(t, ringwal.QueueStats{Name: "b", Dead: 1, Enqueued: 1, DeadLettered: 1}, b)
	assert.Equal(t, a, e.Queue("a").Stats())
	assert.Equal(t, def, e.Queue("").Stats())
	assert.Equal(t, ringwal.QueueStats{Name: "nope"}, e.Queue("nope").Stats(), "Stats declares nothing")
	assert.Equal(t, s.Pending, def.Pending+a.Pending+b.Pending)
	assert.Equal(t, s.Dead, def.Dead+a.Dead+b.Dead)
}

func dlqQueue(name string) dlq.Query { return dlq.Query{Queue: name} }

func TestQueueVerbsAllocateNothing(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	require.NoError(t, e.DeclareQueue("q", ringwal.QueueOptions{}))
	payload := []byte("x")
	// Warm up: the queue's machinery and rings.
	for range 100 {
		_, _ = e.Queue("q").TryEnqueue(ringwal.Message{Payload: payload})
		d, _ := e.Queue("q").TryDequeue()
		_ = e.Ack(d.Lease)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		q := e.Queue("q")
		if _, err := q.TryEnqueue(ringwal.Message{Payload: payload}); err != nil {
			t.Fatal(err)
		}
		d, ok := q.TryDequeue()
		if !ok {
			t.Fatal("nothing to dequeue")
		}
		if err := e.Ack(d.Lease); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "a named queue's enqueue, dequeue and ack")
}

func TestTopicBindingsFollowDeclarationsAndDeletions(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{})
	require.NoError(t, e.DeclareQueue("", ringwal.QueueOptions{Topics: []string{"t"}}))
	require.NoError(t, e.DeclareQueue("b", ringwal.QueueOptions{Topics: []string{"t"}}))
	ids, err := e.Publish(ctxBG, "t", ringwal.Message{})
	require.NoError(t, err)
	assert.Len(t, ids, 2, "the default queue binds topics too")
	assert.Len(t, drainQueue(t, e, e.TryDequeue), 1)
	assert.Len(t, drainQueue(t, e, e.Queue("b").TryDequeue), 1)

	require.NoError(t, e.DeclareQueue("b", ringwal.QueueOptions{Topics: []string{"u"}}))
	require.NoError(t, e.DeclareQueue("", ringwal.QueueOptions{}))
	ids, err = e.Publish(ctxBG, "t", ringwal.Message{})
	require.NoError(t, err)
	assert.Empty(t, ids, "an update unbinds")
	require.NoError(t, e.DeleteQueue("b"))
	ids, err = e.Publish(ctxBG, "u", ringwal.Message{})
	require.NoError(t, err)
	assert.Empty(t, ids, "a deletion unbinds")
}
