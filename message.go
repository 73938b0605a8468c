package ringwal

import (
	"fmt"
	"time"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
	"github.com/ringwal/ringwal/ring"
)

// Priority orders messages between tiers. The zero value is Normal.
type Priority int8

// The five priorities, from least to most urgent.
const (
	Background Priority = -2
	Low        Priority = -1
	Normal     Priority = 0
	High       Priority = 1
	Critical   Priority = 2
)

// NumPriorities is the number of priorities, one ring tier each;
// Stats.TierUtilization has one entry a priority, Critical first.
const NumPriorities = ring.NumTiers

// Each priority has its tier: the constants above span exactly the rings.
var _ [NumPriorities - int(Critical-Background) - 1]struct{}
var _ [int(Critical-Background) + 1 - NumPriorities]struct{}

// tier maps a priority to its ring index: 0 = Critical ... 4 = Background.
func (p Priority) tier() int { return int(Critical - p) }

func priorityOfTier(tier int) Priority { return Critical - Priority(tier) }

// String returns the lower-case name of p.
func (p Priority) String() string {
	switch p {
	case Background:
		return "background"
	case Low:
		return "low"
	case Normal:
		return "normal"
	case High:
		return "high"
	case Critical:
		return "critical"
	}
	return fmt.Sprintf("priority(%d)", int8(p))
}

// ID identifies a message for the life of its data directory, across
// restarts. IDs are assigned by the engine and increase with enqueue order.
//
// It is dlq.ID, an alias of uint64. A DeadLetter's ID, a dlq.Query's After
// and an ID the engine returned are one type. So a listed dead letter
// passes to Redrive, MarkReviewed or Get without a conversion. Code that
// wrote ringwal.ID(d.ID) or uint64(id) still compiles; the conversion is
// now a no-op. The log encodes it as the same 8 bytes as before.
type ID = dlq.ID

// Message is what producers enqueue. The engine keeps Payload and Headers by
// reference (as a channel send would): do not modify them after Enqueue.
type Message struct {
	// DedupID, if set, makes a repeat within Options.DedupWindow return the
	// first message's ID and ErrDuplicate (Unique says otherwise). The
	// DedupID is engine-wide: a repeat is judged against the first
	// whatever their queues.
	DedupID string
	// Key names the downstream target; the circuit breaker is per Key.
	// "" means no breaker.
	Key string
	// Priority picks the message's tier; the zero value is Normal.
	Priority Priority
	// Unique says how long a DedupID refuses repeats: UniqueWindow (the
	// zero value) within Options.DedupWindow of the first; UniqueQueued
	// while the first waits to be delivered; UniqueLive while the first
	// is live. A mode other than UniqueWindow needs a DedupID
	// (ErrInvalid without one) and works whatever Options.DedupWindow
	// says (a negative one, dedup off, included). A repeat is judged by its own mode against the last message of
	// its DedupID that was accepted.
	Unique Unique
	// Replace, with UniqueQueued or UniqueLive (ErrInvalid otherwise),
	// makes a repeat that finds the first still Pending or Delayed replace
	// the first's Payload, Headers, Priority and Delay (debounce: the
	// Delay counts from the repeat) and return the first's ID without
	// ErrDuplicate. The first keeps its ID, Key, TTL (counted from its own
	// enqueue), Deadline, MaxAttempts, attempts and queue. A first waiting
	// on its key (KeyPolicy) keeps its place in the key's line: its
	// Delay is not applied. A first already leased (or held behind its
	// key's open breaker) is not replaced:
	// UniqueQueued accepts the repeat as a new message, UniqueLive refuses
	// it (ErrDuplicate).
	Replace bool
	// Payload is opaque to the engine; at most Options.MaxPayload bytes.
	// The engine keeps the bytes, not the slice's spare capacity: a
	// delivery's Payload is the same bytes with cap == len (appending to it
	// copies).
	Payload []byte
	// Headers travel with the message and are logged with it. At most
	// 256 entries, each name at most 1 KiB, and 64 KiB of names and
	// values in all (those an Options.OnEnqueue hook adds included);
	// more is ErrInvalid.
	Headers map[string]string
	// Delay: not deliverable before enqueue time + Delay. A Delay that
	// ends after 2262-04-11 (the last instant int64 Unix nanoseconds
	// hold) is ErrInvalid.
	Delay time.Duration
	// Deadline: soft; earliest-deadline-first once within
	// Options.DeadlineSlack. Zero means none. A Deadline outside
	// 1677-09-21 to 2262-04-11 (int64 Unix nanoseconds), or at the Unix
	// epoch itself, is ErrInvalid.
	Deadline time.Time
	// TTL: undelivered past enqueue+TTL, the message is dead-lettered as
	// classify.Expired. 0 means none. A Redrive counts it afresh. A TTL
	// that ends after 2262-04-11 is ErrInvalid.
	TTL time.Duration
	// MaxAttempts bounds deliveries; 0 means the category policy's limit.
	// It replaces the limit of categories whose policy retries, not of
	// those it never retries (Permanent, Poison, Expired by default).
	MaxAttempts int
	// Queue names the queue the message goes to; "" is the default queue
	// (Engine.Dequeue and Run serve it). A name not declared yet is
	// declared with zero QueueOptions (see Engine.DeclareQueue for the
	// names allowed). A delivery's Message says its queue.
	Queue string
}

// Lease identifies one delivery of a message. It is an opaque, comparable
// value; once the delivery is acked, nacked, expired or requeued, it is
// stale and methods given it return ErrStaleLease (ErrClosed once the
// engine has closed). A lease belongs to the engine that handed it out:
// another engine refuses it with ErrStaleLease (without fail for engines
// opened fewer than 63 apart in the process, otherwise bar odds of about
// one in 2^32).
type Lease struct {
	slot uint32
	gen  uint32
}

// Delivery is a leased message handed to a consumer.
type Delivery struct {
	ID ID
	// Lease settles this delivery (Ack, Nack, Extend).
	Lease   Lease
	Message Message
	// Attempt is 1 on the first delivery.
	Attempt int
	// EnqueuedAt is when the message was enqueued (or last redriven).
	EnqueuedAt time.Time
}

// State is where a message is in its life.
type State uint8

// Message states. Acked and purged messages no longer exist.
const (
	// Pending: ready, waiting in its tier.
	Pending State = iota
	// Delayed: waiting for its Delay or retry backoff.
	Delayed
	// Leased: handed to a consumer.
	Leased
	// Held: its key's breaker is open; it spends no attempts while held.
	Held
	// Dead: in a dead-letter queue.
	Dead
)

// String returns the lower-case name of s.
func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Delayed:
		return "delayed"
	case Leased:
		return "leased"
	case Held:
		return "held"
	case Dead:
		return "dead"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Info describes a message for Get and Peek.
type Info struct {
	ID      ID
	State   State
	Message Message
	// Attempts is how many deliveries the message has had (a leased
	// message's current one included).
	Attempts int
	// EnqueuedAt is when the message was enqueued, or last redriven
	// (Redrive restarts it). Zero for a dead letter (State Dead): see its
	// DeadLetter's FirstFailedAt and DeadAt instead.
	EnqueuedAt time.Time
	// NextAt is when a Delayed message becomes due (zero otherwise).
	NextAt time.Time
	// Waiting says why a Pending message is kept aside by its key (ordered
	// behind its key's head, at its key's MaxInFlight, out of tokens,
	// paused); NotWaiting when it waits in its tier.
	Waiting WaitReason
	// LastError is the last failure's cause text, LastCategory its
	// category; "" and Unknown before any failure.
	LastError    string
	LastCategory classify.Category
}

// DeadLetter is a dead-lettered message with its failure history.
type DeadLetter = dlq.Entry[Message]

// Unique is how long a message's DedupID refuses repeats (Message.Unique).
// A refused repeat gets the first message's ID and an error wrapping
// ErrDuplicate, once the first's enqueue is as durable as the mode
// promises.
type Unique uint8

// The uniqueness modes.
const (
	// UniqueWindow (the zero value): a repeat within Options.DedupWindow
	// of the first is refused, whatever became of the first; with a negative
	// DedupWindow, DedupIDs are not checked.
	UniqueWindow Unique = iota
	// UniqueQueued: a repeat is refused while the first is Pending or
	// Delayed (a retry waiting its backoff counts); once it is leased (or
	// held, acked, cancelled, dead-lettered) a new one is accepted.
	UniqueQueued
	// UniqueLive: a repeat is refused while the first is live in any
	// state, until it is acked, cancelled or dead-lettered (a Redrive
	// makes it live again).
	UniqueLive
)

// String returns the lower-case name of u.
func (u Unique) String() string {
	switch u {
	case UniqueWindow:
		return "window"
	case UniqueQueued:
		return "queued"
	case UniqueLive:
		return "live"
	}
	return fmt.Sprintf("unique(%d)", uint8(u))
}
