package ringwal_test

// A randomized concurrent history of the engine's public operations,
// checked for linearizability against a sequential model of one message
// (linearizability_model_test.go) with porcupine, and its Stats checked with
// bounds that hold under concurrency and exactly when quiescent.
//
// Workers enqueue (single and batched, with DedupIDs drawn from a small
// shared pool so that repeats race, and batches repeating a unique
// DedupID of their own: linearizability_unique_test.go), publish, dequeue (one,
// or batches of up to 16 that meet messages with Deadlines inside
// Options.DeadlineSlack, leased earliest-deadline-first), ack (one, or a
// batch), nack, extend, cancel, requeue, redrive, get, pause and resume a
// queue, add and remove schedules and declare and delete queues while a
// checkpointer runs (linearizability_model_test.go), and read Stats at random;
// every call and its return are stamped from one counter. A round whose
// calls stop moving fails as stalled (linearizability_check_test.go). The
// engine has named queues besides the default one (historyQueues), two of
// them bound to a topic: each enqueue, dequeue and pause picks a queue
// (linearizability_queues_test.go). Between phases the engine is
// checkpointed (every other time), closed and reopened (leases end: their
// messages are pending), and
// sometimes the fake clock jumps past every delay and backoff; both are
// barriers the model steps every message through. The clock is otherwise
// frozen, so nothing in the verdict depends on timing: leases never
// expire, delays and backoffs end only at the jumps, the dedup window
// never closes.
//
//	RINGWAL_HISTORY=5m            run rounds for that long instead of the short default
//	RINGWAL_HISTORY_SEED=<n>      replay a seed (each worker's operations; not the interleaving)

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

const (
	historyWorkers = 6
	historyPhases  = 4
	// historyJump moves the fake clock past every Delay and backoff the
	// workload makes (at most a minute), well inside the lease timeout
	// and dedup window.
	historyJump = 2 * time.Minute
	// historySettle bounds (in real time) the wait for what the engine
	// does on its own, once, after the clock jumps: long, so that a
	// loaded machine is not taken for a bug.
	historySettle = 30 * time.Second
)

// historyOptions: breakers never trip (a held message is time-dependent);
// leases, backoffs and the dedup window outlast any run on the frozen
// clock.
func historyOptions(mode ringwal.Durability) ringwal.Options {
	slow := func(n int) classify.RetryPolicy {
		return classify.RetryPolicy{MaxAttempts: n, Base: time.Minute, Max: time.Minute, Multiplier: 1,
			Jitter: classify.NoJitter}
	}
	return ringwal.Options{
		Queues:     historyQueueOptions(),
		Durability: mode,
		// A message's Deadline (within 90 s) is inside the slack at once
		// or after a clock jump: a batch leases some by their deadlines
		// and then meets their entries in the tier rings.
		DeadlineSlack:  time.Minute,
		LeaseTimeout:   time.Hour,
		DedupWindow:    100000 * time.Hour,
		CrashLoopLimit: 1000,
		Breaker:        breaker.Options{ConsecutiveFailures: -1, FailureRate: -1},
		Policies: map[classify.Category]classify.RetryPolicy{
			classify.Transient: slow(historyTransientMax),
		},
	}
}

// historySeed is RINGWAL_HISTORY_SEED, else a fresh seed.
func historySeed(t *testing.T) uint64 {
	if v := os.Getenv("RINGWAL_HISTORY_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "RINGWAL_HISTORY_SEED")
		return s
	}
	return rand.Uint64()
}

// The default run's size: rounds (each a fresh engine: Write, Buffered
// and memory-only in turn) of historyPhases phases in which each of
// historyWorkers workers makes historyOpsPerPhase calls.
const historyOpsPerPhase = 250

// historyRounds is how many rounds (each variant) run when
// RINGWAL_HISTORY is unset: 4, or 1 with -short.
func historyRounds(t *testing.T) int {
	if testing.Short() {
		return 1
	}
	return 4
}

// historyBudget is RINGWAL_HISTORY (0 when unset: the short default).
func historyBudget(t *testing.T) time.Duration {
	v := os.Getenv("RINGWAL_HISTORY")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, "RINGWAL_HISTORY")
	return d
}

// historyStat is one Stats call: the engine's counts and each queue's.
type historyStat struct {
	call, ret int64
	phase     int
	c         stateCounts
	queues    map[string]stateCounts
}

// historyPhase is what a phase started from (exact: read while quiescent),
// for the engine and for each queue.
type historyPhase struct {
	from, to int64
	historyBase
	queues map[string]historyBase
}

// historyBase is a phase's live total and dead letters.
type historyBase struct{ total, dead int }

// historyRun is one engine's life: phases of concurrent work between
// reopenings, on one directory.
type historyRun struct {
	t      *testing.T
	seed   uint64
	dir    string
	fake   *clock.Fake
	opts   ringwal.Options
	e      *ringwal.Engine
	perOp  int // operations per worker per phase
	clock  atomic.Int64
	mu     sync.Mutex
	ops    []porcupine.Operation
	empty  []historyEmpty // dequeues that found nothing
	pauses []historyPause // each queue's Pause and Resume calls
	stats  []historyStat
	phases []historyPhase
	ids    []ringwal.ID // every ID enqueued, once
	known  map[ringwal.ID]bool
	// group is the unique DedupID of each message an hEnqueueUnique
	// answered with (the first, as historyPartition takes it).
	group map[ringwal.ID]string
	// admin is what the acknowledged schedule and queue calls left, by
	// name.
	admin   map[string]historyAdmin
	stalled bool // a wait gave up: the engine is left open
	historyFailing
}

func (h *historyRun) now() int64 { return h.clock.Add(1) }

// record adds one operation per input (an EnqueueBatch or DequeueBatch
// records one per message) with the same call and a return stamped now.
func (h *historyRun) record(client int, call int64, ins []hIn, outs []hOut) {
	ret := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range ins {
		h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: ins[i], Output: outs[i], Call: call, Return: ret})
		in := ins[i]
		if in.kind == hEnqueueUnique && in.id != 0 && (outs[i].err == "" || outs[i].err == "dup") {
			if _, ok := h.group[in.id]; !ok {
				h.group[in.id] = in.dedup
			}
		} else if (in.kind != hEnqueue && in.kind != hEnqueueMaybe) || outs[i].err != "" {
			continue
		}
		if !h.known[in.id] {
			h.known[in.id] = true
			h.ids = append(h.ids, in.id)
		}
	}
}

func (h *historyRun) record1(client int, call int64, in hIn, out hOut) {
	h.record(client, call, []hIn{in}, []hOut{out})
}

// anyID picks a known ID (0, which no message has, when none is known).
func (h *historyRun) anyID(rng *rand.Rand) ringwal.ID {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ids) == 0 {
		return 0
	}
	return h.ids[rng.IntN(len(h.ids))]
}

// message is a fresh message for no queue yet.
func (h *historyRun) message(rng *rand.Rand, w, n int) ringwal.Message {
	m := ringwal.Message{Payload: []byte(fmt.Sprintf("p%d-%d-%d", len(h.phases), w, n)),
		Priority: ringwal.Priority(rng.IntN(5) - 2)}
	if rng.IntN(3) == 0 {
		m.DedupID = fmt.Sprintf("d%d", rng.IntN(60)) // a small pool: repeats race each other
	}
	if rng.IntN(5) == 0 {
		m.Delay = time.Duration(1+rng.IntN(60)) * time.Second
	}
	if rng.IntN(3) == 0 {
		m.Deadline = h.fake.Now().Add(time.Duration(1+rng.IntN(90)) * time.Second)
	}
	return m
}

// enqIn is the input of an enqueue of m into queue.
func enqIn(kind hKind, id ringwal.ID, m ringwal.Message, queue string) hIn {
	return hIn{kind: kind, id: id, queue: queue, payload: string(m.Payload), dedup: m.DedupID, delayed: m.Delay > 0,
		deadline: unixOrZero(m.Deadline)}
}

// delivered is a dequeue from queue that returned d.
func delivered(d ringwal.Delivery, queue string) (hIn, hOut) {
	return hIn{kind: hDequeue, id: d.ID, queue: queue}, hOut{lease: d.Lease, attempt: d.Attempt,
		payload: string(d.Message.Payload), dedup: d.Message.DedupID, queue: d.Message.Queue,
		deadline: unixOrZero(d.Message.Deadline), unique: d.Message.Unique}
}

// worker runs perOp random operations. It keeps the leases it holds (it
// dequeues while it holds fewer than 8) and some it has settled, to
// settle them again (stale).
func (h *historyRun) worker(w int, rng *rand.Rand) {
	e := h.e
	var held []ringwal.Delivery
	var spent []ringwal.Delivery
	settle := func(kind hKind, d ringwal.Delivery, call func(ringwal.Lease) error) {
		c := h.now()
		err := call(d.Lease)
		h.recordSettle(w, c, kind, d, err)
		if kind != hExtend {
			spent = append(spent, d)
		}
	}
	pick := func() (ringwal.Delivery, bool) {
		if len(held) == 0 {
			return ringwal.Delivery{}, false
		}
		i := rng.IntN(len(held))
		d := held[i]
		held = append(held[:i], held[i+1:]...)
		return d, true
	}
	paused := "" // the queue this worker paused, if any
	pausing := false
	for n := 0; n < h.perOp; n++ {
		if pausing && rng.IntN(20) == 0 {
			h.pause(w, paused, false)
			pausing = false
		}
		switch r := rng.IntN(112); {
		case r < 16:
			m := h.message(rng, w, n)
			q := historyQueue(rng)
			c := h.now()
			id, err := h.enqueue(rng, q, m)
			h.record1(w, c, enqIn(hEnqueue, id, m, q), hOut{err: errClass(err)})
		case r < 23:
			ms := make([]ringwal.Message, 1+rng.IntN(4))
			for i := range ms {
				ms[i] = h.message(rng, w, n*10+i)
			}
			c := h.now()
			qs, ids, err := h.enqueueBatch(rng, ms)
			class := errClass(err)
			ins, outs := make([]hIn, len(ms)), make([]hOut, len(ms))
			for i, m := range ms {
				var id ringwal.ID
				if i < len(ids) {
					id = ids[i]
				}
				ins[i], outs[i] = enqIn(hEnqueue, id, m, qs[i]), hOut{err: class}
				if class == "dup" {
					// Which entries were repeats the error does not say:
					// one with a DedupID may be either.
					outs[i].err = ""
					if m.DedupID != "" {
						ins[i].kind = hEnqueueMaybe
					}
				}
			}
			h.record(w, c, ins, outs)
		case r < 27:
			h.publish(w, rng, h.message(rng, w, n))
		case r < 45:
			if len(held) < 8 {
				held = append(held, h.dequeueSome(w, rng, 16)...)
			}
		case r < 58:
			if d, ok := pick(); ok {
				settle(hAck, d, e.Ack)
			}
		case r < 63:
			if d, ok := pick(); ok {
				settle(hNackTrans, d, func(l ringwal.Lease) error {
					return e.Nack(l, classify.Mark(fmt.Errorf("flaky"), classify.Transient))
				})
			}
		case r < 67:
			if d, ok := pick(); ok {
				settle(hNackPerm, d, func(l ringwal.Lease) error {
					return e.Nack(l, classify.Mark(fmt.Errorf("broken"), classify.Permanent))
				})
			}
		case r < 69:
			if len(held) > 0 {
				settle(hExtend, held[rng.IntN(len(held))], func(l ringwal.Lease) error { return e.Extend(l, time.Hour) })
			}
		case r < 72:
			if len(spent) > 0 { // a lease settled already: stale
				settle(hAck, spent[rng.IntN(len(spent))], e.Ack)
			}
		case r < 76:
			id := h.anyID(rng)
			c := h.now()
			err := e.Cancel(id)
			h.record1(w, c, hIn{kind: hCancel, id: id}, hOut{err: errClass(err)})
		case r < 81:
			h.requeue(w, h.anyID(rng))
		case r < 85:
			id := h.anyID(rng)
			if dls, err := e.DeadLetters(dlq.Query{Limit: 8}); err == nil && len(dls) > 0 && rng.IntN(4) != 0 {
				id = dls[rng.IntN(len(dls))].ID
			}
			c := h.now()
			err := e.Redrive(id)
			h.record1(w, c, hIn{kind: hRedrive, id: id}, hOut{err: errClass(err)})
		case r < 93:
			h.get(w, h.anyID(rng))
		case r < 97:
			h.readStats()
		case r < 99:
			if !pausing {
				paused, pausing = historyQueue(rng), true
				h.pause(w, paused, true)
			}
		case r < 103:
			h.uniqueBatch(w, rng, n)
		case r < 105:
			h.uniqueEnqueue(w, rng, n)
		case r < 108:
			if len(held) > 0 {
				held, spent = h.ackBatch(w, rng, held, spent)
			}
		case r < 111:
			h.adminOp(w, rng, n)
		default:
			h.checkpoint()
		}
	}
	if pausing { // the phase ends with every queue delivering
		h.pause(w, paused, false)
	}
	if h.dir == "" { // memory-only: no reopening ends the leases, the worker does
		for _, d := range held {
			h.requeue(w, d.ID)
		}
	}
}

// requeue records a Requeue of id.
func (h *historyRun) requeue(w int, id ringwal.ID) {
	c := h.now()
	err := h.e.Requeue(id)
	h.record1(w, c, hIn{kind: hRequeue, id: id}, hOut{err: errClass(err)})
}

// readStats records a Stats read, with the phase it fell in.
func (h *historyRun) readStats() {
	c := h.now()
	s := h.e.Stats()
	ret := h.now()
	h.mu.Lock()
	h.stats = append(h.stats, historyStat{call: c, ret: ret, phase: len(h.phases) - 1, c: counts(s), queues: queueCounts(s)})
	h.mu.Unlock()
}

// get records a Get of id.
func (h *historyRun) get(client int, id ringwal.ID) ringwal.Info {
	c := h.now()
	info, err := h.e.Get(id)
	out := hOut{err: errClass(err)}
	if err == nil {
		out.state, out.attempt, out.payload = info.State, info.Attempts, string(info.Message.Payload)
		out.dedup, out.category, out.queue = info.Message.DedupID, info.LastCategory, info.Message.Queue
		out.deadline, out.unique = unixOrZero(info.Message.Deadline), info.Message.Unique
	}
	h.record1(client, c, hIn{kind: hGet, id: id}, out)
	return info
}

// barrier steps every known message through kind at one instant: one
// operation per message, one per group of a unique DedupID.
func (h *historyRun) barrier(kind hKind) {
	c := h.now()
	var ins []hIn
	groups := map[string]bool{}
	for _, id := range h.ids {
		if d, ok := h.group[id]; ok {
			if !groups[d] {
				groups[d] = true
				ins = append(ins, hIn{kind: kind, id: id, all: true})
			}
			continue
		}
		ins = append(ins, hIn{kind: kind, id: id})
	}
	h.record(historyWorkers, c, ins, make([]hOut, len(ins)))
}

// quiescent gets every known message and compares Stats with what the
// Gets found, exactly (nothing moves: no caller, a frozen clock): the
// engine's counts, each queue's (Stats.Queues and Queue.Stats, by the
// queue Get names) and their sum. It starts a phase: the counts are that
// phase's bounds' base.
func (h *historyRun) quiescent(when string) {
	// A move the housekeeper started before (a clock jump's) may still be
	// ending: look again for a while before calling a difference wrong.
	deadline := time.Now().Add(historySettle)
	for {
		want, wantQ := stateCounts{}, map[string]stateCounts{}
		for _, id := range h.ids {
			if info := h.get(historyWorkers, id); info.ID != 0 {
				c := wantQ[info.Message.Queue]
				c.add(info.State)
				wantQ[info.Message.Queue] = c
				want.add(info.State)
			}
		}
		s := h.e.Stats()
		got, gotQ := counts(s), queueCounts(s)
		bad := h.queuesDiffer(s, gotQ, wantQ)
		if (got != want || bad != "") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if got != want {
			h.t.Errorf("seed %d, %s: quiescent Stats counts %+v, but Get of every message finds %+v", h.seed, when, got, want)
		}
		if bad != "" {
			h.t.Errorf("seed %d, %s: quiescent queue counts: %s", h.seed, when, bad)
		}
		h.checkAdmin(when)
		ph := historyPhase{from: h.now(), historyBase: want.base(), queues: map[string]historyBase{}}
		for _, q := range historyQueues {
			ph.queues[q] = wantQ[q].base()
		}
		h.phases = append(h.phases, ph)
		return
	}
}

func (h *historyRun) checkpoint() {
	if err := h.e.Checkpoint(); err != nil {
		h.t.Errorf("seed %d: Checkpoint: %v", h.seed, err)
	}
}

// reopen closes and opens the engine (a memory-only one stays open: its
// workers ended their leases).
func (h *historyRun) reopen() {
	if h.dir == "" {
		return
	}
	var err error
	h.run("Close", func() { err = h.e.Close() })
	require.NoError(h.t, err)
	e, err := ringwal.Open(h.dir, h.opts)
	require.NoError(h.t, err, "seed %d: reopen", h.seed)
	h.e = e
	h.barrier(hReopen)
}

// jump moves the clock past every delay and backoff (no lease exists:
// it follows a reopening) and waits until the engine has made them due.
func (h *historyRun) jump() {
	h.fake.Advance(historyJump)
	deadline := time.Now().Add(historySettle)
	for h.e.Stats().Delayed != 0 {
		require.False(h.t, time.Now().After(deadline), "seed %d: Delayed messages not due after the clock jumped", h.seed)
		time.Sleep(time.Millisecond)
	}
	h.barrier(hAdvance)
}

// historyRound runs one engine's life and checks its history.
func historyRound(t *testing.T, seed uint64, v historyVariant, perOp int) {
	dir := ""
	if !v.memory {
		dir = t.TempDir()
	}
	h := newHistoryRun(t, dir, seed, v.mode, perOp)
	defer h.close()
	h.quiescent("at the start")
	for p := 0; p < historyPhases; p++ {
		h.phase(p, h.worker)
		h.phases[len(h.phases)-1].to = h.now()
		h.quiescent(fmt.Sprintf("after phase %d", p))
		if p%2 == 0 {
			h.checkpoint() // the next Open starts from a snapshot
		}
		h.reopen()
		if p%2 == 1 {
			h.jump()
		}
		h.quiescent(fmt.Sprintf("after reopening %d", p))
	}
	h.drain()
	h.checkStats()
	h.checkPauses()
	h.checkDedup()
	h.checkLinearizable()
}

// drain leases and acks whatever is ready in every queue (a quiescent
// TryDequeue finds a ready message), then checks that nothing stayed
// Pending: a message the model says is pending but no Dequeue of its queue
// hands out would be lost.
func (h *historyRun) drain() {
	deadline := time.Now().Add(historySettle)
	for {
		found := false
		for _, q := range historyQueues {
			c := h.now()
			d, ok := h.tryDequeue(q)
			if !ok {
				continue
			}
			found = true
			in, out := delivered(d, q)
			h.record1(historyWorkers, c, in, out)
			c = h.now()
			err := h.e.Ack(d.Lease)
			h.record1(historyWorkers, c, hIn{kind: hAck, id: d.ID, lease: d.Lease}, hOut{err: errClass(err)})
		}
		if found {
			continue
		}
		s := h.e.Stats()
		if s.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			h.t.Errorf("seed %d: %d messages Pending (by queue %v), but TryDequeue of each queue finds nothing ready", h.seed, s.Pending, queueCounts(s))
			break
		}
		time.Sleep(time.Millisecond)
	}
	h.quiescent("after draining")
}

func TestHistoryLinearizable(t *testing.T) {
	historyRuns(t, func(t *testing.T, seed uint64, round int) {
		v := historyVariants[round%len(historyVariants)]
		t.Run(fmt.Sprintf("seed%d-%s", seed, v), func(t *testing.T) { historyRound(t, seed, v, historyOpsPerPhase) })
	})
}
