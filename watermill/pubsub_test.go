package watermill_test

import (
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/ringwal/ringwal"
	rwm "github.com/ringwal/ringwal/watermill"
	"github.com/stretchr/testify/require"
)

// features is what ringwal truthfully provides to watermill; README.md
// says why each is set and which of the suite's tests the false ones skip.
var features = tests.Features{
	ConsumerGroups:                      true,
	ExactlyOnceDelivery:                 false, // at least once: an ack lost to a crash is delivered again
	GuaranteedOrder:                     false, // a Nack sends a message to the back of its queue
	GuaranteedOrderWithSingleSubscriber: false,
	Persistent:                          true, // messages live in the engine, not in the Publisher or Subscriber
	RequireSingleInstance:               false,
	NewSubscriberReceivesOldMessages:    false, // acked messages are forgotten; a new queue starts empty
	ContextPreserved:                    false, // a context cannot be logged
}

// engines hands every constructor call of one test the same engine, as
// several processes share one broker; it is closed when the test ends.
type engines struct {
	dir     func(t *testing.T) string // "" = memory-only
	opts    ringwal.Options
	pubConf rwm.PublisherConfig
	mu      sync.Mutex
	m       map[*testing.T]*ringwal.Engine
}

func (es *engines) of(t *testing.T) *ringwal.Engine {
	es.mu.Lock()
	defer es.mu.Unlock()
	if e, ok := es.m[t]; ok {
		return e
	}
	e, err := ringwal.Open(es.dir(t), es.opts)
	require.NoError(t, err)
	es.m[t] = e
	t.Cleanup(func() {
		es.mu.Lock()
		delete(es.m, t)
		es.mu.Unlock()
		require.NoError(t, e.Close())
	})
	return e
}

func (es *engines) constructors() (tests.PubSubConstructor, tests.ConsumerGroupPubSubConstructor) {
	group := func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		e := es.of(t)
		pub, err := rwm.NewPublisher(e, es.pubConf)
		require.NoError(t, err)
		sub, err := rwm.NewSubscriber(e, rwm.SubscriberConfig{ConsumerGroup: group})
		require.NoError(t, err)
		return pub, sub
	}
	return func(t *testing.T) (message.Publisher, message.Subscriber) { return group(t, "") }, group
}

func newEngines(dir func(t *testing.T) string) *engines {
	return &engines{dir: dir, m: map[*testing.T]*ringwal.Engine{}}
}

// orderedTopics is the setting under which ringwal keeps watermill's
// order: every message keyed by its topic, every key Ordered. A topic is
// then delivered one message at a time across all its subscribers, and a
// nacked message keeps the head.
func orderedTopics(es *engines) *engines {
	es.opts.KeyPolicy = func(string) ringwal.KeyPolicy { return ringwal.KeyPolicy{Ordered: true} }
	es.pubConf.Key = func(topic string, _ *message.Message) string { return topic }
	return es
}

func memoryDir(*testing.T) string { return "" }

func TestPubSubOnMemoryEngine(t *testing.T) {
	single, grouped := newEngines(memoryDir).constructors()
	tests.TestPubSub(t, features, single, grouped)
}

func TestPubSubOnDurableEngine(t *testing.T) {
	single, grouped := newEngines(func(t *testing.T) string { return t.TempDir() }).constructors()
	tests.TestPubSub(t, features, single, grouped)
}

func TestPubSubOrderedByTopicKey(t *testing.T) {
	ordered := features
	ordered.GuaranteedOrder = true
	// Keys are engine-wide: every group's copy of a topic's message has the
	// same ordered key, and the copy at the key's head holds back the other
	// groups' copies. The suite's consumer-group test leaves one group's
	// queue unread, which then blocks the others for good.
	ordered.ConsumerGroups = false
	single, grouped := orderedTopics(newEngines(memoryDir)).constructors()
	tests.TestPubSub(t, ordered, single, grouped)
}

// The stress variant runs the suite 10 times in parallel (STRESS_TEST_COUNT
// changes the count) on each engine kind; -short skips it.
func TestPubSubStress(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the universal suite runs once per engine kind only")
	}
	for _, kind := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"memory", memoryDir},
		{"durable", func(t *testing.T) string { return t.TempDir() }},
	} {
		t.Run(kind.name, func(t *testing.T) {
			single, grouped := newEngines(kind.dir).constructors()
			tests.TestPubSubStressTest(t, features, single, grouped)
		})
	}
}
