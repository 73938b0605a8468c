package ringwal

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/wal"
)

// Durability says when a mutation counts as done, and so what a crash can
// lose. The zero value is Write. A memory-only engine (Open with dir "")
// ignores it: everything is lost with the process.
//
// Two kinds of record never wait, in every mode: leases and extends (a
// message leased at a crash comes back pending), and the acks of Run's
// workers. A Run worker appends its handler's ack without waiting and takes
// the next message. The ack is durable with the next group commit. So a
// crash delivers again exactly the messages whose acks had not yet reached
// the log as the mode promises. Run is at least once, as a broker consumer
// that acks asynchronously is. Ack and AckBatch called directly, Nack (also
// a Run handler's error) and every other mutation wait as the constants say.
type Durability uint8

const (
	// Write (the default): methods return once their record reached
	// write(2) in a group-commit batch. Survives a killed process (kill -9);
	// a power loss or kernel crash may lose what the OS had not yet written
	// back. A Run worker's ack is written with the next batch without the
	// worker waiting: a killed process may deliver again the messages whose
	// acks had not been written yet (the last moments' acks).
	Write Durability = iota
	// Fsync: methods return once their batch was fsynced. Survives power
	// loss. Concurrent callers share each fsync (group commit). A Run
	// worker's ack is fsynced with the next group commit without the worker
	// waiting: a killed process or a power loss may deliver again the
	// messages whose acks had not been written (killed process) or fsynced
	// (power loss) yet.
	Fsync
	// Buffered: methods return at once; the log is written within
	// Options.FlushInterval (default 1ms). A killed process may lose the
	// last interval's mutations; for Run's acks, as for every ack, that
	// means those messages are delivered again.
	Buffered
)

// String returns the lower-case name of d.
func (d Durability) String() string {
	switch d {
	case Write:
		return "write"
	case Fsync:
		return "fsync"
	case Buffered:
		return "buffered"
	}
	return fmt.Sprintf("durability(%d)", uint8(d))
}

// RecoveryMode is what Open does with a damaged write-ahead log, as
// RocksDB's WAL recovery modes. It is the internal wal package's type,
// which owns the rules. Each constant's doc below says what a crash or
// power loss can lose with it. Whatever the mode, what Open cuts is first kept as .broken
// files in the log directory, and logged. It is reported in
// Stats().Recovery, the admin API's recovery view and ringwal inspect. A
// log written by a newer version is never cut (ErrVersion). The zero value
// is PointInTime.
type RecoveryMode = wal.RecoveryMode

// The recovery modes. Each one's doc says what it can lose.
const (
	// PointInTime (the default) cuts the newest segment's tail at its
	// first bad batch when a crash or power loss explains the damage (no
	// fsync covered it); other damage fails Open with an error wrapping
	// ErrCorrupt. After a killed process it loses nothing that
	// returned; after a power loss, nothing that returned in Fsync mode,
	// and in Write and Buffered modes what was written since the last
	// Checkpoint or Close.
	PointInTime = wal.PointInTime
	// AbsoluteConsistency refuses any damage, even a torn tail: it loses
	// nothing by itself, but the engine then does not start after such a
	// crash without an operator (ringwal wal verify --repair).
	AbsoluteConsistency = wal.AbsoluteConsistency
	// SkipToPointInTime cuts at the first bad batch wherever it is and
	// whatever follows, fsynced or acknowledged or not (the .broken copies
	// keep it): for starting from a damaged disk's valid prefix.
	SkipToPointInTime = wal.SkipToPointInTime
)

// Options configures an Engine. The zero value is sensible everywhere:
// Open fills every zero field with the default its comment states, and
// fails with ErrInvalid when a field is out of range (a negative duration
// or size where the comment gives no meaning to one, a bad retry policy).
type Options struct {
	// Durability: see the constants. Default Write.
	Durability Durability
	// LeaseTimeout: how long a consumer holds a delivery before it counts as
	// a Timeout failure. Default 30s; must not be negative.
	LeaseTimeout time.Duration
	// DedupWindow: how long a DedupID is remembered. Default 2m; negative
	// turns dedup off.
	DedupWindow time.Duration
	// TierCapacity: slots per priority ring, rounded up to a power of two,
	// and so the pending backlog one priority can hold: Enqueue waits (and
	// TryEnqueue returns ErrFull) while the message's ring is full.
	// Messages that must go back in line when their ring is full (a retry,
	// a recovered backlog, a batch) wait in an overflow queue, in order.
	// Default 1<<14; at most 1<<25. A ring never has more slots than
	// MaxMessages (rounded up): it could not fill them. A ring costs 16
	// bytes a slot, allocated when its priority is first used.
	TierCapacity int
	// MaxMessages: live messages (pending, delayed, leased, held) the engine
	// holds before Enqueue waits and TryEnqueue returns ErrFull. Default
	// 1<<16; at most 1<<25. Dead letters do not count. The check and the
	// claim of a slot are separate steps. So enqueues racing each other at
	// the limit can overshoot it by up to their number, never past the
	// record slab, which is a quarter larger. An exact bound would put a
	// reservation counter on every enqueue.
	MaxMessages int
	// MaxPayload in bytes. Default 1 MiB.
	MaxPayload int
	// AgingAfter: a non-empty tier not served for this long goes next.
	// Default 50ms; negative turns aging off.
	AgingAfter time.Duration
	// DeadlineSlack: a message whose Deadline is this close is served
	// first (earliest deadline first). Default 10ms; must not be negative.
	DeadlineSlack time.Duration
	// Weights of the tiers from Critical to Background for weighted
	// round-robin. All zero (the default) = 16, 8, 4, 2, 1. Otherwise a
	// zero weight counts as 1 (the tier is still served) and a weight
	// above 1000 as 1000; a negative one is ErrInvalid.
	Weights [5]int
	// Strict serves tiers in strict priority order: the highest non-empty
	// tier first (aging still applies; AgingAfter -1 turns it off too).
	// Default false: weighted round-robin over Weights, so a starving low
	// tier still moves while a higher one has a backlog. When the order
	// must be strict, the switch is one line: Options{Strict: true}.
	Strict bool
	// Policies overrides classify.DefaultPolicy per category; a category
	// missing from it (or a nil map, the default) keeps its default
	// policy. Open validates each policy (ErrInvalid).
	Policies map[classify.Category]classify.RetryPolicy
	// Classifier maps a Nack's cause to a category. Nil = classify.Default().
	Classifier classify.Classifier
	// Breaker configures the per-Key circuit breakers (its Clock is set to
	// Options.Clock). Its zero fields take the breaker package's defaults
	// (see breaker.Options): by default a key trips after 5 consecutive
	// failures, or a failure rate of 0.5 over 20 calls in 10s.
	Breaker breaker.Options
	// MaxHold bounds how long a message waits behind its key's open
	// circuit breaker (held, spending no attempts) when the key's
	// KeyPolicy.MaxHold is zero: once held this long it is dead-lettered
	// with the category of the failures that opened the breaker. The time
	// counts from when the message was first held and runs on through the
	// breaker's half-open probes (this message's own failed probe
	// included), until the message goes through a closed breaker again.
	// Default 15m; negative holds forever.
	//
	// Why 15 minutes: a held message spends no attempt, unlike a retry. It
	// waits in memory (it counts against MaxMessages), and bounding it is
	// the breaker's job. Breakers stay open for seconds to a minute;
	// Options.Breaker's stay 5s, doubling to 1m. A quarter of an hour rides
	// out a deploy or a failover with a dozen probes or more. It still
	// brings the messages of a target that stays down to the dead-letter
	// queue the same quarter hour, instead of never. There an operator sees
	// and redrives them.
	MaxHold time.Duration
	// CrashLoopLimit: a message leased at this many consecutive crashes is
	// dead-lettered as Poison. Default 3.
	CrashLoopLimit int
	// CheckpointBytes of log after which a checkpoint runs automatically.
	// Default 64 MiB; negative turns automatic checkpoints off.
	CheckpointBytes int64
	// FlushInterval: in Buffered mode, the longest a mutation waits before
	// it is written. Default 1ms; must not be negative.
	FlushInterval time.Duration
	// DeadLetterRetention: reviewed dead letters whose DeadAt is older than
	// this are removed. Default 90 days; negative keeps them forever.
	// Unreviewed dead letters are kept (see UnreviewedRetention).
	DeadLetterRetention time.Duration
	// UnreviewedRetention: if positive, unreviewed dead letters whose
	// DeadAt is older than this are removed as well (logged as a purge).
	// Default 0: unreviewed dead letters stay until an operator has seen
	// them, or MaxDeadLetters evicts them. Must not be negative.
	UnreviewedRetention time.Duration
	// MaxDeadLetters bounds the dead-letter store, which lives in memory.
	// Past it, the oldest dead letters are evicted, reviewed ones before
	// unreviewed ones (by DeadAt). Each is counted in
	// Stats.DeadLettersEvicted, logged and journaled as a purge, so that a
	// restart does not bring them back. Default 1,000,000; must not be
	// negative.
	MaxDeadLetters int
	// MaxPausedKeys bounds how many keys can be paused at once (PauseKey,
	// a Retry-After): a pause of one more key is refused with an error
	// wrapping ErrFull (a Retry-After pause is then skipped and logged).
	// Default 10,000; must not be negative.
	MaxPausedKeys int
	// Queues declares named queues at Open, as DeclareQueue would (a
	// queue the log already knows takes these options).
	Queues map[string]QueueOptions
	// MaxQueues bounds how many named queues can be declared (an
	// unbounded stream of names must not grow memory without limit):
	// one more is refused with an error wrapping ErrFull. Default 10,000;
	// at most 60,000; must not be negative.
	MaxQueues int
	// CloseGrace: how long Close lets Run handlers finish before it ends
	// their contexts; it then waits up to one more CloseGrace for them
	// (see Close), so Close can take twice this. Default 5s; must not be
	// negative.
	CloseGrace time.Duration
	// KeyPolicy returns the per-key controls of a Key (see KeyPolicy): it is
	// called when a key is first seen, and again after a reopen. Nil (the
	// default) gives every key the zero policy; isolation, Retry-After
	// pauses and PauseKey hold for every key either way. A policy with a
	// negative limit or a non-finite Rate is treated as the zero policy.
	KeyPolicy func(key string) KeyPolicy
	// OnDeadLetter is called for every new dead letter, from an engine
	// goroutine (never the caller's); it must not block for long. Default
	// nil: no callback.
	OnDeadLetter func(DeadLetter)
	// OnEnqueue, when set, is called with every message about to be
	// enqueued. That covers Enqueue, TryEnqueue, EnqueueBatch for each
	// message, Publish once for the message its copies share, and each run
	// of a schedule, with a background ctx. It is called on the caller's
	// goroutine, before validation and logging. So headers it sets are
	// validated, logged and survive a restart. Package ringwalotel's hook puts the producer's
	// trace context there. m.Headers is the engine's own copy of the
	// caller's map, so the hook may write to it. It must be safe for
	// concurrent use. Default nil: nothing is called, at no cost.
	OnEnqueue func(ctx context.Context, m *Message)
	// Logger receives recovery summaries, repairs, breaker transitions and
	// dead letters; nothing per message at Info. Nil discards.
	Logger *slog.Logger
	// Clock is the time source; nil is the real clock. Tests pass a
	// clock.Fake.
	Clock clock.Clock
	// Recovery is what Open does with a damaged log tail: see the
	// RecoveryMode constants for what each can lose. Default PointInTime:
	// a torn or never-fsynced tail of the newest segment is cut (and kept
	// as a .broken copy); other damage fails Open.
	Recovery RecoveryMode
	// GroupReadable lets the data directory's group read it (a backup or
	// inspection tool running as another user of the group): files are
	// created 0640 and directories 0750. By default they are 0600 and
	// 0700, since they hold every message and dead letter, payloads
	// included. The modes are exact whatever the umask, and Open sets them
	// on what it finds. Either way Open refuses, with ErrUnsafeDir, a
	// directory that group or others may write or that another user owns.
	GroupReadable bool
	// Fence, if set, is called by the log writer before it writes a batch
	// and again before it acknowledges it; an error refuses the batch, and
	// each call whose record it held fails with an error wrapping
	// ErrNotOwner and the fence's error. A fleet sets it so that a member
	// whose lease may have expired acknowledges nothing more. It is called
	// once or twice per batch on the writer's goroutine, so it must be
	// cheap (an atomic load), must not block, and must not call the
	// engine. Buffered durability acknowledges before the writer sees a
	// batch, so there it only keeps refused batches out of the log.
	// Ignored without a log (dir ""). Nil: no fence, at no cost.
	Fence func() error
}

const (
	defaultLeaseTimeout    = 30 * time.Second
	defaultDedupWindow     = 2 * time.Minute
	defaultTierCapacity    = 1 << 14
	defaultMaxMessages     = 1 << 16
	defaultMaxPayload      = 1 << 20
	defaultAgingAfter      = 50 * time.Millisecond
	defaultDeadlineSlack   = 10 * time.Millisecond
	defaultCrashLoopLimit  = 3
	defaultCheckpointBytes = 64 << 20
	defaultFlushInterval   = time.Millisecond
	defaultRetention       = 90 * 24 * time.Hour
	defaultCloseGrace      = 5 * time.Second
	defaultMaxDeadLetters  = 1_000_000
	defaultMaxPausedKeys   = 10_000
	defaultMaxHold         = 15 * time.Minute
	// maxBreakerBuckets bounds Options.Breaker.Buckets (allocated per key).
	maxBreakerBuckets = 1 << 16
	// maxSlabBits bounds the slab (and so MaxMessages) at 1<<26 slots.
	maxSlabBits = 26
)

// withDefaults returns o with every zero field filled with its default
// (fill), or an error wrapping ErrInvalid that names the first field out
// of range (validate).
func (o Options) withDefaults() (Options, error) {
	o.fill()
	return o, o.validate()
}

// fill sets every zero field of o to its default. It is the one place
// defaults live; a negative value stays for validate to refuse.
func (o *Options) fill() {
	if o.LeaseTimeout == 0 {
		o.LeaseTimeout = defaultLeaseTimeout
	}
	if o.DedupWindow == 0 {
		o.DedupWindow = defaultDedupWindow
	}
	if o.TierCapacity == 0 {
		o.TierCapacity = defaultTierCapacity
	}
	if o.MaxMessages == 0 {
		o.MaxMessages = defaultMaxMessages
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = defaultMaxPayload
	}
	if o.AgingAfter == 0 {
		o.AgingAfter = defaultAgingAfter
	}
	if o.DeadlineSlack == 0 {
		o.DeadlineSlack = defaultDeadlineSlack
	}
	if o.Weights == [5]int{} {
		o.Weights = [5]int{16, 8, 4, 2, 1}
	}
	if o.Classifier == nil {
		o.Classifier = classify.Default()
	}
	if o.MaxHold == 0 {
		o.MaxHold = defaultMaxHold
	}
	if o.CrashLoopLimit == 0 {
		o.CrashLoopLimit = defaultCrashLoopLimit
	}
	if o.CheckpointBytes == 0 {
		o.CheckpointBytes = defaultCheckpointBytes
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = defaultFlushInterval
	}
	if o.DeadLetterRetention == 0 {
		o.DeadLetterRetention = defaultRetention
	}
	if o.CloseGrace == 0 {
		o.CloseGrace = defaultCloseGrace
	}
	if o.MaxDeadLetters == 0 {
		o.MaxDeadLetters = defaultMaxDeadLetters
	}
	if o.MaxPausedKeys == 0 {
		o.MaxPausedKeys = defaultMaxPausedKeys
	}
	if o.MaxQueues == 0 {
		o.MaxQueues = defaultMaxQueues
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// validate refuses an Options that fill left out of range.
func (o *Options) validate() error {
	if o.Durability > Buffered {
		return invalidf("unknown durability %d", o.Durability)
	}
	if o.Recovery > SkipToPointInTime {
		return invalidf("unknown recovery mode %d", o.Recovery)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"LeaseTimeout", o.LeaseTimeout}, {"DeadlineSlack", o.DeadlineSlack}, {"FlushInterval", o.FlushInterval}, {"CloseGrace", o.CloseGrace}} {
		if f.d < 0 {
			return invalidf("negative %s %v", f.name, f.d)
		}
	}
	if o.TierCapacity < 0 || o.MaxMessages < 0 || o.MaxPayload < 0 || o.CrashLoopLimit < 0 {
		return invalidf("negative TierCapacity, MaxMessages, MaxPayload or CrashLoopLimit")
	}
	if o.MaxDeadLetters < 0 || o.MaxPausedKeys < 0 || o.UnreviewedRetention < 0 {
		return invalidf("negative MaxDeadLetters %d, MaxPausedKeys %d or UnreviewedRetention %v",
			o.MaxDeadLetters, o.MaxPausedKeys, o.UnreviewedRetention)
	}
	for i, w := range o.Weights {
		if w < 0 {
			return invalidf("negative weight %d for tier %d", w, i)
		}
	}
	// The breaker takes what it is given; a rate above 1 (a percentage,
	// say) would silently never trip, and each key allocates its buckets.
	if r := o.Breaker.FailureRate; r > 1 || math.IsNaN(r) {
		return invalidf("Breaker.FailureRate %v is not a share in [0, 1] (negative turns the rule off)", r)
	}
	if o.Breaker.Buckets > maxBreakerBuckets {
		return invalidf("Breaker.Buckets %d above %d", o.Breaker.Buckets, maxBreakerBuckets)
	}
	for cat, p := range o.Policies {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("%w: policy for %v: %v", ErrInvalid, cat, err)
		}
	}
	if o.MaxMessages > 1<<(maxSlabBits-1) {
		return invalidf("MaxMessages %d above %d", o.MaxMessages, 1<<(maxSlabBits-1))
	}
	// The rings are allocated up front: a TierCapacity beyond any
	// MaxMessages is a mistake, not a wish for terabytes of rings.
	if o.TierCapacity > 1<<(maxSlabBits-1) {
		return invalidf("TierCapacity %d above %d", o.TierCapacity, 1<<(maxSlabBits-1))
	}
	if o.MaxQueues < 0 || o.MaxQueues > maxMaxQueues {
		return invalidf("MaxQueues %d outside [0, %d]", o.MaxQueues, maxMaxQueues)
	}
	if len(o.Queues) > o.MaxQueues {
		return invalidf("%d Queues exceed MaxQueues %d", len(o.Queues), o.MaxQueues)
	}
	for name, q := range o.Queues {
		if name != "" {
			if err := validQueueName(name); err != nil {
				return err
			}
		}
		if err := validateQueueOptions(name, q); err != nil {
			return err
		}
	}
	return nil
}

// policy returns the retry policy for a category.
func (o *Options) policy(c classify.Category) classify.RetryPolicy {
	if p, ok := o.Policies[c]; ok {
		return p
	}
	return classify.DefaultPolicy(c)
}
