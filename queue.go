package ringwal

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/sched"
	"github.com/ringwal/ringwal/internal/wal"
	"github.com/ringwal/ringwal/ring"
)

// This file owns queues: the registry of named queues, what each queue
// owns, and how a record finds its queue. The engine is a set of queues
// over one log. Each queue owns its tier rings (one per priority) and
// their spill queues. It owns its scheduler: weighted or strict picks
// with aging, and the deadline heap. It owns its sleeping consumers, its
// lease timeout and retry policies, and its cap. The log, the slab, keys
// and breakers, dedup, the dead-letter store and the housekeeper are the
// engine's, shared by every queue. A record names its queue by number
// (rec.queue), fixed from its claim to its free.
//
// The default queue ("", number 0) is embedded in the Engine
// (defaultQueue, defaultDelivery). So its hot path reaches it with no
// load more than before queues existed.

// queue is one declared queue.
type queue struct {
	// What a delivery reads, on one line: its name, number, effective
	// options (the lease), and its pause.
	e    *Engine
	name string
	num  uint16
	eff  atomic.Pointer[effectiveOptions]
	// leaseFor is eff's lease timeout plus its slop, here for the hot path
	// (a lease reads this line for the pause anyway).
	leaseFor atomic.Int64
	// pausedUntil: the queue's delivery is paused until then (unix ns;
	// untilResumed: until Resume; 0: not paused).
	pausedUntil atomic.Int64
	rt          atomic.Pointer[queueDelivery] // nil until first used; the default queue's is defaultDelivery
	decl        QueueOptions                  // as declared, for QueueInfo
	// live counts the queue's messages in the slab, for MaxMessages
	// (named queues only: the engine's own count caps the default one);
	// producers waiting for room under that cap sleep on space.
	live  atomic.Int64
	space sleepers
	state atomic.Uint32 // queueDeclared, queueDeleting, queueDeleted
	// handle is what Engine.Queue returns for it (it names the queue, so
	// it stays good across a deletion and a new declaration).
	handle Queue
	// counts: the queue's messages by state (counts.go), named queues only.
	counts countStripe
	// Lifetime totals of a named queue (the default queue's are the
	// engine's less the named ones').
	enqueued, acked, deadLettered atomic.Uint64
}

// setEff sets q's effective options, and binds it to their topics.
// queues.mu held (or Open, before anyone else sees q).
func (q *queue) setEff(f *effectiveOptions) {
	var was []string
	if old := q.eff.Load(); old != nil {
		was = old.topics
	}
	q.eff.Store(f)
	q.leaseFor.Store(addSat(f.leaseTimeout, f.leaseSlop))
	if !slices.Equal(was, f.topics) {
		q.e.queues.rebind(q, was, f.topics)
	}
}

// rebind moves q from the topics in was to those in now: the topic map is
// copied on write, so that Publish reads it without a lock, and each
// topic's queues stay in name order. queues.mu held.
func (t *queueTable) rebind(q *queue, was, now []string) {
	old := t.topics.Load()
	m := make(map[string][]*queue, len(*old)+len(now))
	for topic, qs := range *old {
		m[topic] = qs
	}
	for _, topic := range was {
		qs := slices.DeleteFunc(slices.Clone(m[topic]), func(x *queue) bool { return x == q })
		if len(qs) == 0 {
			delete(m, topic)
		} else {
			m[topic] = qs
		}
	}
	for _, topic := range now {
		qs := m[topic]
		i, _ := slices.BinarySearchFunc(qs, q.name, func(x *queue, name string) int { return strings.Compare(x.name, name) })
		m[topic] = slices.Insert(slices.Clone(qs), i, q)
	}
	t.topics.Store(&m)
}

// enter counts a message claimed for q; false if q is being deleted or
// was (the claim must be given back and the queue looked up again). The
// count comes first and the state after, DeleteQueue sets the state and
// then reads the count: one of them sees the other.
func (q *queue) enter() bool {
	if q.num == 0 {
		return true
	}
	q.live.Add(1)
	if q.state.Load() != queueDeclared {
		q.live.Add(-1)
		q.space.signal()
		return false
	}
	return true
}

// A named queue's life.
const (
	queueDeclared uint32 = iota
	queueDeleting        // DeleteQueue checks that it is empty
	queueDeleted
)

func (q *queue) leave() {
	if q.num != 0 {
		q.live.Add(-1)
		q.space.signal()
	}
}

// full reports whether n more messages would pass q's cap.
func (q *queue) full(n int) bool {
	if q.num == 0 {
		return false
	}
	c := q.eff.Load().maxMessages
	return c > 0 && q.live.Load()+int64(n) > c
}

// effectiveOptions is a queue's effective options, resolved once per declaration so
// that the hot path and the failure path read fields, not maps.
type effectiveOptions struct {
	leaseTimeout int64 // ns
	// leaseSlop is added to lease expiries, which the hot path computes
	// from the cached clock. That clock can lag by more than a tick when
	// the machine is busy, as its goroutine waits to be scheduled. So a
	// lease also gets a thousandth of its length: 30 ms of the default
	// 30 s, which covers the lags seen in practice. A lease may end that
	// much late, never early.
	leaseSlop   int64 // ns
	maxMessages int64 // 0: no cap of its own
	policies    [numCategories]classify.RetryPolicy
	topics      []string // bound topics (Publish)
	strict      bool     // the queue's scheduler (fixed once it is set up)
}

// queueDelivery is a queue's delivery machinery: what its consumers take from and
// sleep on.
type queueDelivery struct {
	q       *queue
	tiers   *ring.Tiers[ref]
	spill   [ring.NumTiers]spillQueue
	spilled atomic.Uint32 // bit i: spill[i] is not empty
	sched   *sched.Scheduler
	ready   sleepers // consumers waiting for a message of this queue
}

// namedTierCapacity bounds a named queue's rings by default: a ring is
// allocated on the first message of its priority, and many queues must
// not cost many full-size rings. A burst beyond it spills, in order.
const namedTierCapacity = 1024

// init sets up rt with rings of tierCap and a scheduler of so.
func (rt *queueDelivery) init(q *queue, tierCap [ring.NumTiers]int, so sched.SchedulerOptions) {
	rt.q = q
	rt.tiers = ring.NewTiers[ref](tierCap)
	rt.sched = sched.NewScheduler(so)
	rt.ready.init()
}

// schedulerOptions are a queue's scheduler's: the engine's weights, aging
// and slack, and strict order if the engine or the queue asks for it.
func (e *Engine) schedulerOptions(strict bool) sched.SchedulerOptions {
	policy := sched.Weighted
	if e.opts.Strict || strict {
		policy = sched.Strict
	}
	return sched.SchedulerOptions{
		Picker:        sched.PickerOptions{Policy: policy, Weights: e.opts.Weights, AgingAfter: e.opts.AgingAfter},
		DeadlineSlack: e.opts.DeadlineSlack,
	}
}

// effective resolves o over the engine's options.
func (e *Engine) effective(o QueueOptions) *effectiveOptions {
	lt := o.LeaseTimeout
	if lt == 0 {
		lt = e.opts.LeaseTimeout
	}
	f := &effectiveOptions{leaseTimeout: int64(lt), maxMessages: int64(o.MaxMessages), topics: o.Topics, strict: o.Strict}
	if e.coarse != nil {
		f.leaseSlop = int64(coarseTick) + int64(lt)>>10
	}
	for c := range f.policies {
		cat := classify.Category(c)
		if p, ok := o.Policies[cat]; ok {
			f.policies[c] = p
		} else {
			f.policies[c] = e.opts.policy(cat)
		}
	}
	return f
}

// run returns the queue's delivery machinery, setting it up on first use.
func (q *queue) run() *queueDelivery {
	if rt := q.rt.Load(); rt != nil {
		return rt
	}
	var tierCap [ring.NumTiers]int
	for i := range tierCap {
		tierCap[i] = namedTierCapacity
	}
	return q.setUp(tierCap)
}

// setUp sets up q's delivery machinery with rings of tierCap (within the
// engine's TierCapacity and MaxMessages), unless another goroutine did
// first, and returns it.
func (q *queue) setUp(tierCap [ring.NumTiers]int) *queueDelivery {
	for i := range tierCap {
		tierCap[i] = min(tierCap[i], q.e.opts.TierCapacity, q.e.opts.MaxMessages)
	}
	rt := new(queueDelivery)
	rt.init(q, tierCap, q.e.schedulerOptions(q.eff.Load().strict))
	if q.rt.CompareAndSwap(nil, rt) {
		return rt
	}
	return q.rt.Load()
}

// queueTable holds the named queues: by number (chunks of 256, allocated
// as numbers are used, so that a lookup is two loads) and by name.
type queueTable struct {
	mu     sync.Mutex // declarations; readers take no lock
	chunks [256]atomic.Pointer[[256]atomic.Pointer[queue]]
	byName sync.Map // string -> *queue
	next   uint16   // the last number given
	n      int      // declared named queues
	// retired: numbers of queues deleted since the last checkpoint began,
	// not given again until one completes (queue_delete.go).
	retired []uint16
	// releasing counts the retired numbers a running checkpoint will free.
	releasing int
	// q0Declared: the default queue was declared with options (its
	// declaration is logged and carried by snapshots).
	q0Declared bool
	// topics maps a topic to the queues bound to it, by name (rebind).
	topics atomic.Pointer[map[string][]*queue]
	// gone holds the totals of deleted queues (the default queue's are
	// derived from the engine's less every named queue's).
	gone QueueStats
}

// at returns queue number n (n > 0), nil if none.
func (t *queueTable) at(n uint16) *queue {
	c := t.chunks[n>>8].Load()
	if c == nil {
		return nil
	}
	return c[n&0xff].Load()
}

func (t *queueTable) put(q *queue) {
	c := t.chunks[q.num>>8].Load()
	if c == nil {
		c = new([256]atomic.Pointer[queue])
		t.chunks[q.num>>8].Store(c)
	}
	c[q.num&0xff].Store(q)
	t.byName.Store(q.name, q)
}

// runOf returns the delivery machinery of r's queue. The caller owns r.
func (e *Engine) runOf(r *rec) *queueDelivery {
	if r.queue == 0 {
		return &e.defaultDelivery
	}
	return e.queues.at(r.queue).run()
}

// queueOf returns r's queue. The caller owns r.
func (e *Engine) queueOf(r *rec) *queue {
	if r.queue == 0 {
		return &e.defaultQueue
	}
	return e.queues.at(r.queue)
}

// queueNamed returns the queue called name, declaring it with zero
// options if declare is set and it is not declared yet.
func (e *Engine) queueNamed(name string, declare bool) (*queue, error) {
	if name == "" {
		return &e.defaultQueue, nil
	}
	if v, ok := e.queues.byName.Load(name); ok {
		return v.(*queue), nil
	}
	if !declare {
		return nil, notFoundQueue(name)
	}
	return e.declare(name, QueueOptions{}, false)
}

func notFoundQueue(name string) error {
	return fmt.Errorf("%w: queue %q is not declared", ErrNotFound, name)
}

// DeclareQueue creates the queue called name with o, or updates it. Its
// lease timeout, policies and cap apply to deliveries and failures from
// then on; a queue's Strict is fixed once it is first used. Name "" is
// the default queue, which takes LeaseTimeout, Policies and Topics but no
// MaxMessages. Other names are 1 to 128 bytes of UTF-8 without spaces or
// control characters, not starting with "_". A new name must also not
// hold characters that show as nothing or reorder text, such as U+200B
// and U+202E; names an older version declared stay usable. At most
// Options.MaxQueues are declared (ErrFull beyond). Bad names or options
// are ErrInvalid. Safe for concurrent use.
func (e *Engine) DeclareQueue(name string, o QueueOptions) error {
	if err := e.errIfClosed(); err != nil {
		return err
	}
	_, err := e.declare(name, o, true)
	return err
}

// declare creates or (update) updates the queue called name.
func (e *Engine) declare(name string, o QueueOptions, update bool) (*queue, error) {
	q, err := e.declareOnce(name, o, update)
	// Every number is taken, some by deleted queues: a checkpoint frees
	// those (queue_delete.go). Declarations racing for them may take them
	// first; this one tries again after each checkpoint, up to 64. Rare:
	// it needs 65,535 queues declared.
	for tries := 0; err == errNumbersRetired; tries++ {
		if tries == 64 {
			return nil, fmt.Errorf("%w: queue %q: all %d queue numbers are in use", ErrFull, name, wal.MaxQueue)
		}
		if err := e.Checkpoint(); err != nil {
			return nil, fmt.Errorf("ringwal: queue %q: freeing deleted queues' numbers: %w", name, err)
		}
		q, err = e.declareOnce(name, o, update)
	}
	return q, err
}

func (e *Engine) declareOnce(name string, o QueueOptions, update bool) (*queue, error) {
	if name != "" {
		if err := e.validNewQueueName(name); err != nil {
			return nil, err
		}
	}
	if err := validateQueueOptions(name, o); err != nil {
		return nil, err
	}
	o = cloneQueueOptions(o)
	t := &e.queues
	t.mu.Lock()
	defer t.mu.Unlock()
	var q *queue
	if name == "" {
		q = &e.defaultQueue
	} else if v, ok := t.byName.Load(name); ok {
		q = v.(*queue)
	}
	if q != nil && (!update || reflect.DeepEqual(q.decl, o)) {
		return q, nil
	}
	num := uint16(0)
	if q != nil {
		num = q.num
	} else {
		if t.n >= e.opts.MaxQueues {
			return nil, fmt.Errorf("%w: queue %q: MaxQueues %d declared", ErrFull, name, e.opts.MaxQueues)
		}
		var ok bool
		if num, ok = t.number(); !ok {
			if len(t.retired) > 0 || t.releasing > 0 {
				return nil, errNumbersRetired
			}
			return nil, fmt.Errorf("%w: queue %q: all %d queue numbers are in use", ErrFull, name, wal.MaxQueue)
		}
	}
	// Durable before visible: once a message can name the number, the
	// log must hold the declaration before that message's record, or
	// replay would meet a message of a queue it does not know. A
	// declaration is rare; declarations wait for each other (t.mu).
	if err := e.logQueue(num, name, o); err != nil {
		return nil, err
	}
	q = e.applyDeclaration(num, name, o)
	e.noteLeaseTimeout(q)
	return q, nil
}

// applyDeclaration makes a declaration (logged, or found in the log)
// visible: a new queue, or new options for one; t.mu held.
func (e *Engine) applyDeclaration(num uint16, name string, o QueueOptions) *queue {
	t := &e.queues
	q := t.at(num)
	if num == 0 {
		q = &e.defaultQueue
		t.q0Declared = true
	}
	if q == nil || q.state.Load() == queueDeleted {
		// A number given again after its queue's deletion (replaying a
		// log that holds both): a new queue.
		q = e.newQueue(num, name, o)
		t.next, t.n = max(t.next, num), t.n+1
		return q
	}
	q.decl = o
	q.setEff(e.effective(o))
	return q
}

// newQueue registers a named queue; t.mu held.
func (e *Engine) newQueue(num uint16, name string, o QueueOptions) *queue {
	q := &queue{e: e, name: name, num: num, decl: o, handle: Queue{e: e, name: name}}
	q.space.init()
	q.setEff(e.effective(o))
	e.queues.put(q)
	return q
}

// logQueue appends a declaration record and waits until it is as durable
// as the mode promises (a memory-only engine logs nothing).
func (e *Engine) logQueue(num uint16, name string, o QueueOptions) error {
	if e.log == nil {
		return nil
	}
	if err := e.log.RequireFormat(2); err != nil {
		return fmt.Errorf("ringwal: declaring queue %q: %w", name, mapWALError(err))
	}
	rec, err := queueRecord(num, name, o, e.preciseNow())
	if err != nil {
		return err
	}
	if err := e.log.Append(&rec); err != nil {
		return fmt.Errorf("ringwal: declaring queue %q: %w", name, mapWALError(err))
	}
	return nil
}

// declareReplayed applies a declaration found in the log (replay runs
// before the engine is used: nothing is logged).
func (e *Engine) declareReplayed(num uint16, name string, o QueueOptions) {
	e.queues.mu.Lock()
	defer e.queues.mu.Unlock()
	e.applyDeclaration(num, name, o)
}

// declarations returns the declaration record of every declared queue,
// the default queue's if it was declared with options, then the pause
// record of every paused queue: what a snapshot starts with.
//
// It lists them holding the queue table's lock. Every queue verb
// (DeclareQueue, DeleteQueue, a queue's Pause and Resume) both logs its
// record and makes its change under that lock. So the listing is from
// before or after each such verb, never between its record and its
// change. A checkpoint whose cut covers a record must find the change in
// its snapshot, or the log truncated below the cut loses it. Deleted
// queues are not listed.
func (e *Engine) declarations(now int64) ([]wal.Record, error) {
	t := &e.queues
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []wal.Record
	var err error
	e.eachQueue(func(q *queue) {
		if err != nil || q.state.Load() == queueDeleted || (q.num == 0 && !t.q0Declared) {
			return
		}
		var rec wal.Record
		rec, err = queueRecord(q.num, q.name, q.decl, now)
		out = append(out, rec)
	})
	if err != nil {
		return nil, err
	}
	e.eachQueue(func(q *queue) {
		if until := q.pausedUntil.Load(); q.state.Load() != queueDeleted && until != 0 && (until == untilResumed || now < until) {
			out = append(out, wal.Record{Kind: wal.KindQueuePause, Queue: uint32(q.num), Key: q.name, Time: now, Until: until})
		}
	})
	return out, nil
}

// declaration is q's declaration record as of now.
func (q *queue) declaration(now int64) (wal.Record, error) {
	q.e.queues.mu.Lock()
	o := q.decl
	q.e.queues.mu.Unlock()
	return queueRecord(q.num, q.name, o, now)
}

// noteLeaseTimeout lowers the lease scan's period if q's leases are
// shorter than any before (scanLeases): the scan must not wait longer
// than a lease lasts.
func (e *Engine) noteLeaseTimeout(q *queue) {
	lt := q.eff.Load().leaseTimeout
	for {
		old := e.minLease.Load()
		if old != 0 && old <= lt {
			return
		}
		if e.minLease.CompareAndSwap(old, lt) {
			break
		}
	}
	if e.hk != nil {
		e.hk.schedule(e.now()+lt, sched.Entry{Kind: timerLeaseScan})
	}
}

func cloneQueueOptions(o QueueOptions) QueueOptions {
	if o.Policies != nil {
		p := make(map[classify.Category]classify.RetryPolicy, len(o.Policies))
		for k, v := range o.Policies {
			p[k] = v
		}
		o.Policies = p
	}
	o.Topics = append([]string(nil), o.Topics...)
	return o
}

// Queues lists the declared queues, the default queue ("") first, then
// by name. Safe for concurrent use.
func (e *Engine) Queues() []QueueInfo {
	var out []QueueInfo
	e.eachQueue(func(q *queue) { out = append(out, q.info()) })
	return out
}

func (q *queue) info() QueueInfo {
	q.e.queues.mu.Lock()
	o := cloneQueueOptions(q.decl)
	q.e.queues.mu.Unlock()
	paused, until := q.pausedUntilTime(q.e.preciseNow())
	return QueueInfo{Name: q.name, Options: o, Paused: paused, PausedUntil: until}
}

// queueList returns every declared queue, the default first, then by
// name.
func (e *Engine) queueList() []*queue {
	var out []*queue
	e.eachQueue(func(q *queue) { out = append(out, q) })
	return out
}

// eachQueue calls fn with every declared queue, the default first, then
// by name.
func (e *Engine) eachQueue(fn func(*queue)) {
	var named []*queue
	e.queues.byName.Range(func(_, v any) bool {
		named = append(named, v.(*queue))
		return true
	})
	sort.Slice(named, func(i, j int) bool { return named[i].name < named[j].name })
	fn(&e.defaultQueue)
	for _, q := range named {
		fn(q)
	}
}

// each calls fn with every named queue, in no order.
func (t *queueTable) each(fn func(*queue)) {
	t.byName.Range(func(_, v any) bool {
		fn(v.(*queue))
		return true
	})
}

// eachRun calls fn with every queue's delivery machinery that is set up.
func (e *Engine) eachRun(fn func(*queueDelivery)) {
	fn(&e.defaultDelivery)
	e.queues.byName.Range(func(_, v any) bool {
		if rt := v.(*queue).rt.Load(); rt != nil {
			fn(rt)
		}
		return true
	})
}

// signalAllReady wakes a sleeping consumer of every queue (a pause of all
// delivery ended, restore placed a backlog).
func (e *Engine) signalAllReady() { e.eachRun(func(rt *queueDelivery) { rt.ready.signal() }) }

// declareOptionsQueues declares Options.Queues at Open, in name order.
func (e *Engine) declareOptionsQueues() error {
	names := make([]string, 0, len(e.opts.Queues))
	for name := range e.opts.Queues {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := e.declare(name, e.opts.Queues[name], true); err != nil {
			return err
		}
	}
	return nil
}

// queueAgain looks up the queue called name after a claim found it being
// deleted: it waits out the deletion (a moment: DeleteQueue logs one
// record) and returns the queue declared afresh if it is gone.
func (e *Engine) queueAgain(ctx context.Context, name string) (*queue, error) {
	for {
		q, err := e.queueNamed(name, true)
		if err != nil {
			return nil, err
		}
		if q.state.Load() == queueDeclared {
			q.run()
			return q, nil
		}
		if err := e.pause(ctx); err != nil {
			return nil, err
		}
	}
}
