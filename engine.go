package ringwal

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/internal/dlqstore"
	"github.com/ringwal/ringwal/internal/pad"
	"github.com/ringwal/ringwal/internal/wal"
	"github.com/ringwal/ringwal/ring"
)

// Engine is a message engine over one data directory (or memory). All
// methods are safe for concurrent use.
type Engine struct {
	opts  Options
	clock clock.Clock
	dir   string
	log   *wal.Log // nil when memory-only

	slab            *slab
	counts          *liveCounts   // by state, kept as records move (counts.go)
	defaultQueue    queue         // the default queue (queue.go)
	defaultDelivery queueDelivery // its delivery machinery
	minLease        atomic.Int64  // the shortest lease timeout of any queue (scanLeases)
	breakers        *breaker.Set
	dead            *dlqstore.Store[Message]
	dedup           dedupIndex
	held            heldSet
	keys            keys
	hk              *housekeeper
	// redriveMu: Redrive holds it shared while a message moves from the
	// dead-letter store to the slab; Get takes it after missing in both.
	redriveMu sync.RWMutex
	// deadLeaveMu: a dead letter's removal (purge, eviction, retention)
	// and its purge record are one step under it, shared; DeleteQueue
	// holds it while it checks that the queue has no dead letters and
	// logs the deletion, so a purge record never follows the deletion of
	// its dead letter's queue in the log.
	deadLeaveMu sync.RWMutex

	_      pad.Line
	nextID atomic.Uint64
	_      [pad.CacheLine - 8]byte
	ctr    counters
	space  sleepers // producers waiting for room (MaxMessages, a tier)

	closing  atomic.Bool   // intake stopped (Close started)
	closed   atomic.Bool   // everything stopped
	done     chan struct{} // closed when Close starts
	closeMu  sync.Mutex
	closeErr error
	runs     sync.WaitGroup // Run calls in progress
	graceEnd chan struct{}  // closed when Close's grace ends

	metrics *metrics
	// history is what Engine.History reads (history.go).
	history history
	// afterBatchForTest, when set, runs after each WAL batch: tests hold
	// the log writer there to see what the engine makes visible before
	// its records are durable. Nil outside tests.
	afterBatchForTest atomic.Pointer[func(wal.BatchInfo)]
	recovered         recoveryReport
	coarse            *coarseClock // nil with an injected clock

	lastSettleWarn atomic.Int64 // unix ns of the last settle-failure warning
	leaseKey       leaseKey     // folded into this engine's leases (leasetag.go)

	// scheds: the schedules (schedule.go); openedAt: when Open finished
	// replaying, which tells ticks missed while closed from late ones.
	scheds   scheduleTable
	openedAt int64

	// The named queues: last, so that their 2 KiB of chunk pointers keep
	// no hot field of the default queue's path apart from the others.
	queues queueTable
}

// Open opens (creating if needed) the engine over dir, replaying its log;
// dir "" runs in memory only. A second Open of a directory in use, in this
// process or another, fails with ErrLocked; invalid Options fail with
// ErrInvalid, and a directory written by a newer format with ErrVersion.
// Open returns once the log is replayed. Safe for concurrent use.
func Open(dir string, o Options) (*Engine, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	start := o.Clock.Now()
	e := &Engine{
		opts:     o,
		clock:    o.Clock,
		dir:      dir,
		done:     make(chan struct{}),
		graceEnd: make(chan struct{}),
		leaseKey: newLeaseKey(),
	}
	e.space.init()
	e.space.idle = &e.ctr.idleWait
	if o.Clock == clock.Real() {
		e.coarse = newCoarseClock()
	}
	// A ring larger than MaxMessages never fills from Enqueue (which waits
	// on MaxMessages first); what else overflows it spills. Do not allocate
	// room that cannot be used.
	var tierCap [ring.NumTiers]int
	for i := range tierCap {
		tierCap[i] = min(o.TierCapacity, o.MaxMessages)
	}
	e.counts = &liveCounts{queues: &e.queues}
	e.queues.topics.Store(&map[string][]*queue{})
	e.defaultQueue = queue{e: e, handle: Queue{e: e}}
	e.defaultQueue.rt.Store(&e.defaultDelivery)
	e.defaultQueue.setEff(e.effective(QueueOptions{}))
	e.minLease.Store(int64(o.LeaseTimeout))
	e.defaultDelivery.init(&e.defaultQueue, tierCap, e.schedulerOptions(false))
	bo := o.Breaker
	bo.Clock = o.Clock
	userHook := bo.OnStateChange
	bo.OnStateChange = func(key string, from, to breaker.State) {
		e.onBreakerChange(key, from, to)
		if userHook != nil {
			userHook(key, from, to)
		}
	}
	e.breakers = breaker.New(bo)
	e.dead = dlqstore.New[Message](dlqstore.Options{Retention: o.DeadLetterRetention, UnreviewedRetention: o.UnreviewedRetention})
	e.dead.SearchMessages(headersContain)
	e.dedup.init()
	e.held.init(o.MaxMessages / 4)
	e.keys.policy = o.KeyPolicy

	// The slab has room for MaxMessages (slabBitsFor); replay rebuilds
	// the log's messages in it, growing it if the log holds more.
	bitsNeeded := slabBitsFor(o.MaxMessages)
	var rs *replayState
	if dir != "" {
		e.log, err = wal.Open(dir, wal.Options{
			Mode:          walMode(o.Durability),
			Recovery:      o.Recovery,
			FlushInterval: o.FlushInterval,
			Logger:        o.Logger,
			OnBatch:       e.onBatch,
			GroupReadable: o.GroupReadable,
			Fence:         o.Fence,
		})
		if err != nil {
			e.log = nil
			e.openFailed()
			return nil, mapWALError(err)
		}
		rs, err = e.replay(bitsNeeded)
		if err != nil {
			e.openFailed()
			return nil, err
		}
		e.slab = rs.slab
	} else {
		e.slab = newSlab(bitsNeeded)
	}
	e.metrics = newMetrics(e)
	e.history.init(o.Clock.Now()) // before the housekeeper samples it
	e.hk = newHousekeeper(e)
	if rs != nil {
		if err := e.restore(rs); err != nil {
			e.openFailed()
			return nil, err
		}
	}
	// A log written under a larger MaxDeadLetters (or before the bound).
	e.evictDeadLetters(e.preciseNow())
	if err := e.declareOptionsQueues(); err != nil {
		e.openFailed()
		return nil, err
	}
	e.openedAt = e.preciseNow()
	e.armSchedules(e.openedAt)
	e.recovered.duration = o.Clock.Now().Sub(start)
	e.hk.start()
	if e.log != nil {
		o.Logger.Info("ringwal: opened", "dir", dir, "durability", o.Durability.String(),
			"live", e.liveCount(), "dead", e.dead.Len(), "records", e.recovered.records,
			"duration", e.recovered.duration, "torn_bytes", e.recovered.tornBytes)
	}
	return e, nil
}

func walMode(d Durability) wal.Mode {
	switch d {
	case Fsync:
		return wal.Fsync
	case Buffered:
		return wal.Buffered
	}
	return wal.Write
}

func mapWALError(err error) error {
	switch {
	case errors.Is(err, wal.ErrFenced):
		return fmt.Errorf("%w: %w", ErrNotOwner, err)
	case errors.Is(err, wal.ErrLocked):
		return fmt.Errorf("%w: %w", ErrLocked, err)
	case errors.Is(err, wal.ErrVersion):
		return fmt.Errorf("%w: %w", ErrVersion, err)
	case errors.Is(err, wal.ErrUnsafeDir):
		return fmt.Errorf("%w: %w", ErrUnsafeDir, err)
	case errors.Is(err, wal.ErrClosed):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}

// Close stops intake, lets Run handlers finish within Options.CloseGrace,
// stops the engine's goroutines, flushes and syncs the log and releases the
// directory lock. Once the grace has passed, handlers' contexts end, and
// Close waits up to one more CloseGrace for them to return. A handler
// still running after that no longer holds Close up, and its settle
// reports ErrClosed; such a handler ignores its ctx or called Close
// itself. Messages still leased come back pending, with that attempt
// counted, when the directory is reopened. Close is idempotent: a second
// call returns nil. Safe for concurrent use: a call made while another is
// in progress waits for it to finish, then returns nil.
func (e *Engine) Close() error {
	e.closeMu.Lock()
	defer e.closeMu.Unlock()
	if e.closing.Load() {
		return nil
	}
	e.closing.Store(true)
	close(e.done)

	// Let Run's handlers finish; after the grace their contexts end.
	finished := make(chan struct{})
	go func() { e.runs.Wait(); close(finished) }()
	grace := time.NewTimer(e.opts.CloseGrace)
	select {
	case <-finished:
	case <-grace.C:
		close(e.graceEnd)
		grace.Reset(e.opts.CloseGrace)
		select {
		case <-finished:
		case <-grace.C:
			e.opts.Logger.Warn("ringwal: closing with Run handlers still running after their context ended")
		}
	}
	grace.Stop()

	e.closed.Store(true)
	e.hk.stop()
	e.stopSchedules()
	if e.coarse != nil {
		e.coarse.close()
	}
	var err error
	if e.log != nil {
		err = e.closeLog()
	}
	e.closeErr = err
	e.opts.Logger.Info("ringwal: closed", "dir", e.dir, "err", err)
	return err
}

// errIfClosing reports ErrClosed once Close has started.
func (e *Engine) errIfClosing() error {
	if e.closing.Load() {
		return ErrClosed
	}
	return nil
}

// errIfClosed reports ErrClosed once Close has finished its grace.
func (e *Engine) errIfClosed() error {
	if e.closed.Load() {
		return ErrClosed
	}
	return nil
}

// now is the engine's time in unix ns: the cached coarse clock with the
// real clock, the injected clock (a test's fake) otherwise.
func (e *Engine) now() int64 {
	if e.coarse != nil {
		return e.coarse.now()
	}
	return e.clock.Now().UnixNano()
}

// preciseNow reads the clock itself, for the sampled latency histograms.
func (e *Engine) preciseNow() int64 { return e.clock.Now().UnixNano() }

// categoryPolicy returns the effective policy for a message that failed
// with category c, the message's MaxAttempts replacing the policy's.
func (e *Engine) categoryPolicy(q *queue, c classify.Category, maxAttempts int) classify.RetryPolicy {
	p := q.eff.Load().policies[categoryIndex(c)]
	// A message's MaxAttempts changes how often a retryable failure is
	// retried; it does not make retryable what its category's policy
	// never retries (Permanent, Poison, Expired by default).
	if maxAttempts > 0 && p.Normalize().MaxAttempts > 1 {
		p.MaxAttempts = maxAttempts
	}
	return p
}

// openFailed undoes what Open started before it failed.
func (e *Engine) openFailed() {
	if e.hk != nil {
		e.hk.stop()
	}
	if e.coarse != nil {
		e.coarse.close()
	}
	if e.log != nil {
		_ = e.log.Close()
	}
}

// liveCount is the number of messages in the slab, derived from counters
// the hot path keeps anyway (see counters.freed).
func (e *Engine) liveCount() int64 {
	taken := e.nextID.Load() - e.ctr.enqueuedBase - e.ctr.unused.Load()
	return int64(taken) + e.ctr.added.Load() - int64(e.ctr.freed.Load())
}
