package ringwal_test

// The history test's queues: the engine runs named queues besides the
// default one, two of them bound to a topic. Each enqueue picks a queue
// (by Message.Queue or through the queue's handle), each dequeue asks one
// queue (Engine.TryDequeue and DequeueBatch for the default queue, the
// handle's otherwise), a Publish records one enqueue per copy in its
// copy's queue, and workers pause and resume queues now and then. The
// model (linearizability_model_test.go) keeps each message's queue; what spans
// messages is checked here and in linearizability_check_test.go: a dequeue made
// while its queue was surely paused returned nothing, and each queue's
// Stats.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/ringwal/ringwal"
)

// historyQueues are the history tests' queues, the default one first;
// historyTopic is bound by beta and gamma (declared by Options.Queues at
// every Open), so that a Publish makes two copies, IDs in that order.
var historyQueues = []string{"", "alpha", "beta", "gamma"}

const historyTopic = "events"

var historyTopicQueues = []string{"beta", "gamma"}

func historyQueueOptions() map[string]ringwal.QueueOptions {
	return map[string]ringwal.QueueOptions{
		"alpha": {},
		"beta":  {Topics: []string{historyTopic}},
		"gamma": {Topics: []string{historyTopic, "other"}},
	}
}

// historyQueue picks a queue.
func historyQueue(rng *rand.Rand) string { return historyQueues[rng.IntN(len(historyQueues))] }

// historyEmpty is a dequeue of queue that found nothing.
type historyEmpty struct {
	queue     string
	call, ret int64
}

// historyPause is a Pause (until Resume) or a Resume of queue.
type historyPause struct {
	queue     string
	call, ret int64
	resume    bool
}

// enqueue enqueues m into queue q, by Message.Queue or through q's handle
// (Enqueue or TryEnqueue: no queue has a cap).
func (h *historyRun) enqueue(rng *rand.Rand, q string, m ringwal.Message) (ringwal.ID, error) {
	if q == "" || rng.IntN(2) == 0 {
		m.Queue = q
		return h.e.Enqueue(ctxBG, m)
	}
	if rng.IntN(2) == 0 {
		m.Queue = q // allowed: it names the handle's queue
	}
	if rng.IntN(2) == 0 {
		return h.e.Queue(q).TryEnqueue(m)
	}
	return h.e.Queue(q).Enqueue(ctxBG, m)
}

// enqueueBatch enqueues ms, each into a queue of its own by Message.Queue,
// or all into one through its handle; it returns each message's queue.
func (h *historyRun) enqueueBatch(rng *rand.Rand, ms []ringwal.Message) ([]string, []ringwal.ID, error) {
	qs := make([]string, len(ms))
	if q := historyQueue(rng); q != "" && rng.IntN(2) == 0 {
		for i := range qs {
			qs[i] = q
		}
		ids, err := h.e.Queue(q).EnqueueBatch(ctxBG, ms)
		return qs, ids, err
	}
	routed := make([]ringwal.Message, len(ms))
	for i := range ms {
		qs[i] = historyQueue(rng)
		routed[i] = ms[i]
		routed[i].Queue = qs[i]
	}
	ids, err := h.e.EnqueueBatch(ctxBG, routed)
	return qs, ids, err
}

// publish publishes m to historyTopic and records one enqueue per copy,
// each in its copy's queue (and so its ID's partition) with the publish's
// interval. A copy's DedupID is m's plus "/queue". An ErrDuplicate leaves
// every copy new or a repeat; any other error records no copy (and fails:
// no queue has a cap).
func (h *historyRun) publish(w int, rng *rand.Rand, m ringwal.Message) {
	if rng.IntN(2) == 0 {
		m.DedupID = "" // most repeats are the plain enqueues'
	} else if m.DedupID != "" {
		m.DedupID = "t" + m.DedupID[1:] // a pool of its own: a repeat is another Publish
	}
	c := h.now()
	ids, err := h.e.Publish(ctxBG, historyTopic, m)
	class := errClass(err)
	if class != "" && class != "dup" {
		h.t.Errorf("seed %d: Publish: %v", h.seed, err)
		return
	}
	if len(ids) != len(historyTopicQueues) || ids[0] == ids[1] {
		h.t.Errorf("seed %d: Publish to a topic two queues bind: IDs %v, %v", h.seed, ids, err)
		return
	}
	ins, outs := make([]hIn, len(ids)), make([]hOut, len(ids))
	for i, q := range historyTopicQueues {
		cp := m
		if m.DedupID != "" {
			cp.DedupID = m.DedupID + "/" + q
		}
		ins[i] = enqIn(hEnqueue, ids[i], cp, q)
		ins[i].publish = true
		if class == "dup" {
			ins[i].kind = hEnqueueMaybe
		}
	}
	h.record(w, c, ins, outs)
}

// tryDequeue is TryDequeue of queue q: the engine's for the default queue,
// the handle's otherwise.
func (h *historyRun) tryDequeue(q string) (ringwal.Delivery, bool) {
	if q == "" {
		return h.e.TryDequeue()
	}
	return h.e.Queue(q).TryDequeue()
}

// dequeueBatch is DequeueBatch of queue q (an error, ctx's end, is none).
func (h *historyRun) dequeueBatch(ctx context.Context, q string, max int) []ringwal.Delivery {
	var ds []ringwal.Delivery
	if q == "" {
		ds, _ = h.e.DequeueBatch(ctx, max)
	} else {
		ds, _ = h.e.Queue(q).DequeueBatch(ctx, max)
	}
	return ds
}

// dequeueSome dequeues from a random queue one message (TryDequeue) or a
// batch of up to most (DequeueBatch, waiting briefly), records the
// deliveries as one operation each, saying which came in a batch (or the
// queue found empty), and returns them.
func (h *historyRun) dequeueSome(w int, rng *rand.Rand, most int) []ringwal.Delivery {
	q := historyQueue(rng)
	c := h.now()
	var ds []ringwal.Delivery
	batch := rng.IntN(2) != 0
	if !batch {
		if d, ok := h.tryDequeue(q); ok {
			ds = append(ds, d)
		}
	} else {
		ctx, cancel := context.WithTimeout(ctxBG, 2*time.Millisecond)
		ds = h.dequeueBatch(ctx, q, 1+rng.IntN(most))
		cancel()
	}
	if len(ds) == 0 {
		ret := h.now()
		h.mu.Lock()
		h.empty = append(h.empty, historyEmpty{queue: q, call: c, ret: ret})
		h.mu.Unlock()
		return nil
	}
	ins, outs := make([]hIn, len(ds)), make([]hOut, len(ds))
	for i, d := range ds {
		ins[i], outs[i] = delivered(d, q)
		ins[i].batch = batch
	}
	h.record(w, c, ins, outs)
	return ds
}

// pause pauses queue q until Resume, or resumes it, and records the call.
func (h *historyRun) pause(w int, q string, pause bool) {
	c := h.now()
	var err error
	if pause {
		err = h.e.Queue(q).Pause(time.Time{})
	} else {
		err = h.e.Queue(q).Resume()
	}
	ret := h.now()
	if err != nil {
		h.t.Errorf("seed %d: worker %d: Pause(%v) of queue %q: %v", h.seed, w, pause, q, err)
	}
	h.mu.Lock()
	h.pauses = append(h.pauses, historyPause{queue: q, call: c, ret: ret, resume: !pause})
	h.mu.Unlock()
}

// checkPauses: a dequeue of queue q whose whole interval lies where q is
// surely paused returned nothing. q is surely paused from a Pause's
// return until the call of the first Resume that may take effect after
// that Pause (one that returned after the Pause was called).
func (h *historyRun) checkPauses() {
	type span struct{ from, to int64 }
	paused := map[string][]span{}
	for _, p := range h.pauses {
		if p.resume {
			continue
		}
		to := int64(1<<63 - 1)
		for _, r := range h.pauses {
			if r.resume && r.queue == p.queue && r.ret > p.call {
				to = min(to, r.call)
			}
		}
		if to > p.ret {
			paused[p.queue] = append(paused[p.queue], span{p.ret, to})
		}
	}
	inside := func(q string, call, ret int64) bool {
		for _, s := range paused[q] {
			if call > s.from && ret < s.to {
				return true
			}
		}
		return false
	}
	empties, bad := 0, 0
	for _, e := range h.empty {
		if inside(e.queue, e.call, e.ret) {
			empties++
		}
	}
	for _, op := range h.ops {
		in, out := op.Input.(hIn), op.Output.(hOut)
		if in.kind != hDequeue || !inside(in.queue, op.Call, op.Return) {
			continue
		}
		if bad++; bad <= 10 {
			h.t.Errorf("seed %d: queue %q was paused throughout [%d, %d], but a dequeue of it returned %s", h.seed, in.queue,
				op.Call, op.Return, describeHistoryOp(in, out))
		}
	}
	if bad > 10 {
		h.t.Errorf("seed %d: %d more dequeues of a paused queue", h.seed, bad-10)
	}
	h.t.Logf("seed %d: %d pauses and resumes, %d dequeues made while their queue was surely paused found nothing",
		h.seed, len(h.pauses), empties)
}

// queueCounts is s's counts of each queue, by name.
func queueCounts(s ringwal.Stats) map[string]stateCounts {
	out := make(map[string]stateCounts, len(s.Queues))
	for _, q := range s.Queues {
		out[q.Name] = stateCounts{q.Pending, q.Delayed, q.Leased, q.Held, q.Dead}
	}
	return out
}

// add counts one message in state st.
func (c *stateCounts) add(st ringwal.State) {
	switch st {
	case ringwal.Pending:
		c.Pending++
	case ringwal.Delayed:
		c.Delayed++
	case ringwal.Leased:
		c.Leased++
	case ringwal.Held:
		c.Held++
	case ringwal.Dead:
		c.Dead++
	}
}

func (c stateCounts) plus(d stateCounts) stateCounts {
	return stateCounts{c.Pending + d.Pending, c.Delayed + d.Delayed, c.Leased + d.Leased, c.Held + d.Held, c.Dead + d.Dead}
}

func (c stateCounts) total() int { return c.Pending + c.Delayed + c.Leased + c.Held + c.Dead }

func (c stateCounts) base() historyBase { return historyBase{total: c.total(), dead: c.Dead} }

// queuesDiffer says how quiescent Stats s's queues (got) differ from
// what Get found in each queue (want), or "": Stats.Queues lists exactly
// the history's queues (and the workers' own, empty:
// linearizability_model_test.go), each queue's counts and Queue.Stats' equal
// Get's, and they sum to the engine's.
func (h *historyRun) queuesDiffer(s ringwal.Stats, got, want map[string]stateCounts) string {
	var bad []string
	if tmp := tmpQueuesDiffer(got); tmp != "" {
		bad = append(bad, tmp)
	}
	if names := historyNamed(s); fmt.Sprint(names) != fmt.Sprint(historyQueues) {
		bad = append(bad, fmt.Sprintf("Stats.Queues names %q, want %q", names, historyQueues))
	}
	for q := range want {
		if _, ok := got[q]; !ok {
			bad = append(bad, fmt.Sprintf("Get finds messages in queue %q, which Stats.Queues does not list", q))
		}
	}
	var sum stateCounts
	for _, q := range historyQueues {
		sum = sum.plus(got[q])
		if got[q] != want[q] {
			bad = append(bad, fmt.Sprintf("queue %q: Stats %+v, Get finds %+v", q, got[q], want[q]))
		}
		qs := h.e.Queue(q).Stats()
		if c := (stateCounts{qs.Pending, qs.Delayed, qs.Leased, qs.Held, qs.Dead}); c != want[q] {
			bad = append(bad, fmt.Sprintf("queue %q: Queue.Stats %+v, Get finds %+v", q, c, want[q]))
		}
	}
	if all := counts(s); sum != all {
		bad = append(bad, fmt.Sprintf("the queues' counts sum to %+v, the engine's are %+v", sum, all))
	}
	sort.Strings(bad)
	return strings.Join(bad, "; ")
}
