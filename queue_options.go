package ringwal

import (
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ringwal/ringwal/classify"
)

// QueueOptions configure one named queue (Engine.DeclareQueue,
// Options.Queues). The zero value is a queue that behaves as the default
// queue does: the engine's lease timeout and retry policies, weighted
// tiers, no cap of its own.
type QueueOptions struct {
	// MaxMessages caps this queue's live messages (pending, delayed,
	// leased, held); 0 = only the engine's Options.MaxMessages. A queue at
	// its cap makes Enqueue wait and TryEnqueue fail with an error
	// wrapping ErrFull that names the queue, while other queues go on.
	// The default queue takes no cap of its own (the engine's caps it).
	MaxMessages int
	// Strict serves this queue's tiers in strict priority order instead of
	// by weight (Options.Strict makes every queue strict).
	Strict bool
	// LeaseTimeout is how long a consumer of this queue holds a delivery;
	// 0 = Options.LeaseTimeout.
	LeaseTimeout time.Duration
	// Policies override Options.Policies for this queue's failures, per
	// category; a category not here takes the engine's policy.
	Policies map[classify.Category]classify.RetryPolicy
	// Topics binds the queue to topics: Engine.Publish to one of them puts
	// a copy of the message into this queue.
	Topics []string
}

// QueueInfo describes a declared queue (Engine.Queues).
type QueueInfo struct {
	Name string
	// Options as declared (zero fields stay zero).
	Options QueueOptions
	// Paused: the queue's delivery is paused (Queue.Pause), until
	// PausedUntil (zero: until Queue.Resume).
	Paused      bool
	PausedUntil time.Time
}

// Limits on queue names and options.
const (
	maxQueueName     = 128
	maxQueueTopics   = 64
	defaultMaxQueues = 10_000
	maxMaxQueues     = 60_000
)

// validQueueName reports what is wrong with name as a named queue's name,
// or nil: 1 to 128 bytes of UTF-8 with no space or control character, not
// starting with "_" (names of that form are the engine's).
func validQueueName(name string) error {
	switch {
	case name == "":
		return invalidf("queue name is empty")
	case len(name) > maxQueueName:
		return invalidf("queue name of %d bytes exceeds %d", len(name), maxQueueName)
	case !utf8.ValidString(name):
		return invalidf("queue name %q is not UTF-8", name)
	case name[0] == '_':
		return invalidf("queue name %q starts with _ (reserved)", name)
	}
	for _, c := range name {
		if unicode.IsSpace(c) || unicode.IsControl(c) {
			return invalidf("queue name %q holds a space or control character", name)
		}
	}
	return nil
}

// validateQueueOptions checks o for the queue named name.
func validateQueueOptions(name string, o QueueOptions) error {
	switch {
	case o.MaxMessages < 0:
		return invalidf("queue %q: negative MaxMessages %d", name, o.MaxMessages)
	case name == "" && o.MaxMessages != 0:
		return invalidf("the default queue takes no MaxMessages of its own (Options.MaxMessages caps it)")
	case o.LeaseTimeout < 0:
		return invalidf("queue %q: negative LeaseTimeout %v", name, o.LeaseTimeout)
	case len(o.Topics) > maxQueueTopics:
		return invalidf("queue %q: %d topics exceed %d", name, len(o.Topics), maxQueueTopics)
	}
	for cat, p := range o.Policies {
		if err := p.Validate(); err != nil {
			return invalidf("queue %q: policy for %v: %v", name, cat, err)
		}
	}
	seen := make(map[string]bool, len(o.Topics))
	for _, t := range o.Topics {
		if err := validQueueName(t); err != nil {
			return invalidf("queue %q: topic: %v", name, err)
		}
		if seen[t] {
			return invalidf("queue %q: topic %q listed twice", name, t)
		}
		seen[t] = true
	}
	return nil
}
