package watermill_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
	rwm "github.com/ringwal/ringwal/watermill"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wait is how long these end-to-end tests wait for a message that must come.
const wait = 10 * time.Second

func openEngine(t *testing.T, dir string, o ringwal.Options) *ringwal.Engine {
	t.Helper()
	e, err := ringwal.Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func pubSub(t *testing.T, e *ringwal.Engine, pc rwm.PublisherConfig, sc rwm.SubscriberConfig) (*rwm.Publisher, *rwm.Subscriber) {
	t.Helper()
	pub, err := rwm.NewPublisher(e, pc)
	require.NoError(t, err)
	sub, err := rwm.NewSubscriber(e, sc)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, pub.Close())
		assert.NoError(t, sub.Close())
	})
	return pub, sub
}

func next(t *testing.T, ch <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case m, ok := <-ch:
		require.True(t, ok, "subscription closed")
		return m
	case <-time.After(wait):
		t.Fatal("no message within", wait)
		return nil
	}
}

func TestNackRedeliversAtOnceWithoutSpendingAttempts(t *testing.T) {
	e := openEngine(t, "", ringwal.Options{})
	// Two deliveries at most per category: Nacks must not count as failures.
	policies := map[classify.Category]classify.RetryPolicy{}
	for _, c := range []classify.Category{classify.Unknown, classify.Transient, classify.Timeout} {
		policies[c] = classify.RetryPolicy{MaxAttempts: 2, Base: time.Hour, Max: time.Hour}
	}
	pub, sub := pubSub(t, e, rwm.PublisherConfig{}, rwm.SubscriberConfig{QueueOptions: ringwal.QueueOptions{Policies: policies}})
	msgs, err := sub.Subscribe(context.Background(), "orders")
	require.NoError(t, err)
	require.NoError(t, pub.Publish("orders", message.NewMessage("m-1", []byte("x"))))

	for range 5 {
		m := next(t, msgs)
		require.Equal(t, "m-1", m.UUID)
		m.Nack() // an hour's backoff would keep it away: it comes back now
	}
	m := next(t, msgs)
	assert.Equal(t, "m-1", m.UUID)
	m.Ack()
	require.NoError(t, sub.Close())

	s := e.Stats()
	assert.Equal(t, uint64(1), s.Acked)
	assert.Equal(t, uint64(5), s.Requeued)
	assert.Zero(t, s.Nacked, "a watermill Nack is no ringwal failure")
	assert.Zero(t, s.DeadLettered)
}

func TestLeaseIsRenewedWhileTheHandlerWorks(t *testing.T) {
	e := openEngine(t, "", ringwal.Options{})
	pub, sub := pubSub(t, e, rwm.PublisherConfig{}, rwm.SubscriberConfig{LeaseTimeout: 300 * time.Millisecond})
	msgs, err := sub.Subscribe(context.Background(), "slow")
	require.NoError(t, err)
	require.NoError(t, pub.Publish("slow", message.NewMessage("m-1", []byte("x"))))

	m := next(t, msgs)
	time.Sleep(1200 * time.Millisecond) // four lease lengths: a handler has no deadline
	m.Ack()
	require.NoError(t, sub.Close())

	s := e.Stats()
	assert.Equal(t, uint64(1), s.Acked)
	assert.Zero(t, s.LeaseExpiries)
	assert.Equal(t, uint64(1), s.Dequeued, "delivered once")
}

func TestMetadataAndUUIDRoundTrip(t *testing.T) {
	e := openEngine(t, "", ringwal.Options{})
	pub, sub := pubSub(t, e, rwm.PublisherConfig{}, rwm.SubscriberConfig{})
	msgs, err := sub.Subscribe(context.Background(), "meta")
	require.NoError(t, err)

	in := message.NewMessage("uuid-1", []byte("payload"))
	in.Metadata.Set("traceparent", "00-abc-def-01")
	in.Metadata.Set("kind", "order.created")
	require.NoError(t, pub.Publish("meta", in))
	out := next(t, msgs)
	out.Ack()
	assert.Equal(t, "uuid-1", out.UUID)
	assert.Equal(t, []byte("payload"), []byte(out.Payload))
	assert.Equal(t, message.Metadata{"traceparent": "00-abc-def-01", "kind": "order.created"}, out.Metadata)

	// A message enqueued by plain ringwal code into the topic's queue.
	id, err := e.Queue(rwm.DefaultQueueName("meta", "")).Enqueue(context.Background(),
		ringwal.Message{Payload: []byte("plain"), Headers: map[string]string{"a": "b"}})
	require.NoError(t, err)
	plain := next(t, msgs)
	plain.Ack()
	assert.Equal(t, "ringwal-"+strconv.FormatUint(uint64(id), 10), plain.UUID)
	assert.Equal(t, message.Metadata{"a": "b"}, plain.Metadata)
}

func TestConsumerGroupsEachGetEveryMessageAndShareItInside(t *testing.T) {
	e := openEngine(t, "", ringwal.Options{})
	pub, billing := pubSub(t, e, rwm.PublisherConfig{}, rwm.SubscriberConfig{ConsumerGroup: "billing"})
	_, audit := pubSub(t, e, rwm.PublisherConfig{}, rwm.SubscriberConfig{ConsumerGroup: "audit"})
	bills, err := billing.Subscribe(context.Background(), "orders")
	require.NoError(t, err)
	audits, err := audit.Subscribe(context.Background(), "orders")
	require.NoError(t, err)

	require.NoError(t, pub.Publish("orders", message.NewMessage("o-1", nil)))
	for _, ch := range []<-chan *message.Message{bills, audits} {
		m := next(t, ch)
		assert.Equal(t, "o-1", m.UUID)
		m.Ack()
	}
	names := []string{}
	for _, q := range e.Queues() {
		names = append(names, q.Name)
	}
	assert.ElementsMatch(t, []string{"", "orders@billing", "orders@audit"}, names)
}

func TestMessagesOutliveTheEngineWhenDurable(t *testing.T) {
	dir := t.TempDir()
	e, err := ringwal.Open(dir, ringwal.Options{})
	require.NoError(t, err)
	sub, err := rwm.NewSubscriber(e, rwm.SubscriberConfig{ConsumerGroup: "g"})
	require.NoError(t, err)
	require.NoError(t, sub.SubscribeInitialize("events"))
	pub, err := rwm.NewPublisher(e, rwm.PublisherConfig{})
	require.NoError(t, err)
	require.NoError(t, pub.Publish("events", message.NewMessage("kept", []byte("x"))))
	require.NoError(t, e.Close())

	e = openEngine(t, dir, ringwal.Options{})
	_, sub2 := pubSub(t, e, rwm.PublisherConfig{}, rwm.SubscriberConfig{ConsumerGroup: "g"})
	msgs, err := sub2.Subscribe(context.Background(), "events")
	require.NoError(t, err)
	m := next(t, msgs)
	assert.Equal(t, "kept", m.UUID)
	m.Ack()
}

func TestNackUnderAnOrderedKeyKeepsItsPlace(t *testing.T) {
	e := openEngine(t, "", ringwal.Options{KeyPolicy: func(string) ringwal.KeyPolicy { return ringwal.KeyPolicy{Ordered: true} }})
	pub, sub := pubSub(t, e, rwm.PublisherConfig{Key: rwm.KeyFromMetadata("partition")}, rwm.SubscriberConfig{})
	msgs, err := sub.Subscribe(context.Background(), "p")
	require.NoError(t, err)
	for _, id := range []string{"1", "2", "3"} {
		m := message.NewMessage(id, nil)
		m.Metadata.Set("partition", "customer-7")
		require.NoError(t, pub.Publish("p", m))
	}
	got := []string{}
	for len(got) < 3 {
		m := next(t, msgs)
		if m.UUID == "2" && !slices.Contains(got, "2-nacked") {
			got = append(got, "2-nacked")
			m.Nack()
			continue
		}
		got = append(got, m.UUID)
		m.Ack()
	}
	assert.Equal(t, []string{"1", "2-nacked", "2"}, got[:3])
	assert.Equal(t, "3", next(t, msgs).UUID)
}

func TestClosedPublisherAndSubscriberRefuse(t *testing.T) {
	e := openEngine(t, "", ringwal.Options{})
	pub, sub := pubSub(t, e, rwm.PublisherConfig{}, rwm.SubscriberConfig{})
	require.NoError(t, pub.Close())
	require.NoError(t, sub.Close())
	assert.ErrorIs(t, pub.Publish("t", message.NewMessage("x", nil)), rwm.ErrPublisherClosed)
	_, err := sub.Subscribe(context.Background(), "t")
	assert.ErrorIs(t, err, rwm.ErrSubscriberClosed)
	assert.NoError(t, pub.Close(), "a second Close")
	assert.NoError(t, sub.Close(), "a second Close")
	_, err = e.Queue("q").TryEnqueue(ringwal.Message{})
	assert.NoError(t, err, "the engine stays open")
}

func TestBadInputIsErrInvalid(t *testing.T) {
	_, err := rwm.NewPublisher(nil, rwm.PublisherConfig{})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	_, err = rwm.NewSubscriber(nil, rwm.SubscriberConfig{})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	e := openEngine(t, "", ringwal.Options{})
	_, err = rwm.NewSubscriber(e, rwm.SubscriberConfig{LeaseTimeout: -time.Second})
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
	pub, sub := pubSub(t, e, rwm.PublisherConfig{}, rwm.SubscriberConfig{})
	assert.ErrorIs(t, pub.Publish("_reserved", message.NewMessage("x", nil)), ringwal.ErrInvalid)
	_, err = sub.Subscribe(context.Background(), "_reserved")
	assert.ErrorIs(t, err, ringwal.ErrInvalid)
}

// A QueueOptions that already lists the topic declares the queue with the
// topic once, not twice (which the engine refuses).
func TestQueueOptionsThatListTheTopicDeclareTheQueue(t *testing.T) {
	e := openEngine(t, "", ringwal.Options{})
	_, sub := pubSub(t, e, rwm.PublisherConfig{}, rwm.SubscriberConfig{
		QueueOptions: ringwal.QueueOptions{Topics: []string{"audit", "orders"}},
	})
	require.NoError(t, sub.SubscribeInitialize("orders"))
	qs := e.Queues()
	i := slices.IndexFunc(qs, func(q ringwal.QueueInfo) bool { return q.Name == "orders" })
	require.GreaterOrEqual(t, i, 0, "the queue is declared")
	assert.ElementsMatch(t, []string{"audit", "orders"}, qs[i].Options.Topics)
}
