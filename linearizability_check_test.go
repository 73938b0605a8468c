package ringwal_test

// The history test's checks of a finished run: DedupID answers, Stats
// under load (the engine's and each queue's), and linearizability (with
// what to print when it fails).

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// checkDedup: every answer for one DedupID (a new message, or a repeat's
// ErrDuplicate) names the same ID: the window never closes here.
func (h *historyRun) checkDedup() {
	first := map[string]ringwal.ID{}
	for _, op := range h.ops {
		in, out := op.Input.(hIn), op.Output.(hOut)
		if (in.kind != hEnqueue && in.kind != hEnqueueMaybe) || in.dedup == "" || (out.err != "" && out.err != "dup") {
			continue
		}
		if id, ok := first[in.dedup]; !ok {
			first[in.dedup] = in.id
		} else if id != in.id {
			h.t.Errorf("seed %d: DedupID %q answered with two IDs, %d and %d (%s)", h.seed, in.dedup, id, in.id,
				describeHistoryOp(in, out))
		}
	}
}

// checkStats checks every Stats call made under load against bounds that
// hold whatever the interleaving: each count is within what the calls
// that began before Stats returned could have made it, give or take one
// per call that overlapped it (a message in motion may be missed or, for
// a moment, counted in both states). It checks the engine's counts and
// each queue's with the calls on that queue's messages (and those on a
// message whose queue is unknown), and that the queues' counts sum to the
// engine's give or take the calls that overlapped (Stats reads the
// engine's counts and each queue's one after another).
func (h *historyRun) checkStats() {
	failed := 0
	defer func() {
		if failed > 10 {
			h.t.Errorf("seed %d: %d more Stats calls out of bounds", h.seed, failed-10)
		}
	}()
	ops := h.statOps()
	for _, s := range h.stats {
		ph := h.phases[s.phase]
		// The calls made in the phase: those that started after its
		// quiescent start and before its end.
		from := sort.Search(len(ops), func(i int) bool { return ops[i].call >= ph.from })
		to := sort.Search(len(ops), func(i int) bool { return ops[i].call > ph.to })
		var ts [1 + 4]statsTally // the engine's, then each queue's
		for _, op := range ops[from:to] {
			var t statsTally
			t.add(op, s)
			ts[0].plus(t)
			for i := range historyQueues {
				if op.q < 0 || int(op.q) == i {
					ts[1+i].plus(t)
				}
			}
		}
		bad := ts[0].bounds(ph.historyBase, s.c)
		var sum stateCounts
		for i, q := range historyQueues {
			sum = sum.plus(s.queues[q])
			for _, b := range ts[1+i].bounds(ph.queues[q], s.queues[q]) {
				bad = append(bad, fmt.Sprintf("queue %q: %s", q, b))
			}
		}
		if overlap := ts[0].overlap; !near(sum, s.c, overlap) {
			bad = append(bad, fmt.Sprintf("the queues' counts sum to %+v, the engine's are %+v, with %d calls overlapping", sum, s.c, overlap))
		}
		if len(bad) > 0 {
			if failed++; failed > 10 {
				continue
			}
			h.t.Errorf("seed %d, phase %d: Stats %+v (called at %d, returned at %d): %s", h.seed, s.phase, s.c, s.call, s.ret, strings.Join(bad, "; "))
		}
	}
}

// near: every count of a is within d of b's.
func near(a, b stateCounts, d int) bool {
	within := func(x, y int) bool { return x-y <= d && y-x <= d }
	return within(a.Pending, b.Pending) && within(a.Delayed, b.Delayed) && within(a.Leased, b.Leased) &&
		within(a.Held, b.Held) && within(a.Dead, b.Dead)
}

// statOp is what checkStats needs of a call, by call stamp.
type statOp struct {
	call, ret int64
	kind      hKind // hEmpty: a dequeue that found nothing
	ok        bool  // it returned nil
	q         int8  // its message's queue (historyQueues index); -1: unknown, any
}

const hEmpty hKind = 255

// statOps are the calls and empty dequeues, sorted by call. A call's queue
// is its enqueue's or dequeue's, else its ID's as an enqueue that surely
// created it, a dequeue or a Get found it (an enqueue that may be a repeat
// may name another queue than its first's); an ID with none is of any.
func (h *historyRun) statOps() []statOp {
	index := map[string]int8{}
	for i, q := range historyQueues {
		index[q] = int8(i)
	}
	idQueue := map[ringwal.ID]int8{}
	for _, op := range h.ops {
		in, o := op.Input.(hIn), op.Output.(hOut)
		switch {
		case in.kind == hEnqueue && o.err == "":
			idQueue[in.id] = index[in.queue]
		case (in.kind == hDequeue || in.kind == hGet) && o.err == "":
			idQueue[in.id] = index[o.queue]
		}
	}
	out := make([]statOp, 0, len(h.ops)+len(h.empty))
	for _, e := range h.empty {
		out = append(out, statOp{call: e.call, ret: e.ret, kind: hEmpty, q: index[e.queue]})
	}
	for _, op := range h.ops {
		in, o := op.Input.(hIn), op.Output.(hOut)
		q, known := idQueue[in.id]
		switch in.kind {
		case hEnqueue, hEnqueueMaybe, hDequeue:
			q, known = index[in.queue], true
		case hEnqueueUnique: // its first message's queue, if it made one
			q, known = index[in.entry.queue], true
		}
		if !known {
			q = -1
		}
		out = append(out, statOp{call: op.Call, ret: op.Return, kind: in.kind, ok: o.err == "", q: q})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].call < out[j].call })
	return out
}

// statsTally counts the calls of a phase as a Stats call's bounds need.
type statsTally struct {
	overlap, created, createdBefore, removed, dequeued, settled, nacked, redriven int
}

func (t *statsTally) plus(u statsTally) {
	t.overlap += u.overlap
	t.created += u.created
	t.createdBefore += u.createdBefore
	t.removed += u.removed
	t.dequeued += u.dequeued
	t.settled += u.settled
	t.nacked += u.nacked
	t.redriven += u.redriven
}

// add counts op as Stats call s sees it.
func (t *statsTally) add(op statOp, s historyStat) {
	if op.call <= s.ret && op.ret >= s.call {
		t.overlap++
	}
	begun := op.call < s.ret
	switch op.kind {
	case hEnqueue, hEnqueueMaybe, hEnqueueUnique:
		if (op.ok || op.kind == hEnqueueUnique) && begun { // a unique call's "dup" may have made one too
			t.created++
			if op.ret < s.call && op.kind == hEnqueue {
				t.createdBefore++
			}
		}
	case hDequeue:
		if begun {
			t.dequeued++
		}
	case hAck, hAckBatch, hNackPerm, hNackTrans:
		if op.ok && op.ret < s.call {
			t.settled++
		}
		if begun && (op.kind == hAck || op.kind == hAckBatch) {
			t.removed++
		}
		if begun && op.kind != hAck {
			t.nacked++
		}
	case hCancel:
		if begun {
			t.removed++
		}
	case hRedrive:
		if begun {
			t.redriven++
		}
	}
}

// bounds checks counts c (the engine's or a queue's) against the phase's
// base and the tally of the calls on them; it returns what is out of
// bounds.
func (t statsTally) bounds(base historyBase, c stateCounts) []string {
	total := c.total()
	bad := []string{}
	check := func(ok bool, what string, args ...any) {
		if !ok {
			bad = append(bad, fmt.Sprintf(what, args...))
		}
	}
	check(c.Pending >= 0 && c.Delayed >= 0 && c.Leased >= 0 && c.Dead >= 0, "a negative count in %+v", c)
	check(c.Held == 0, "Held %d, but no breaker trips", c.Held)
	check(total <= base.total+t.created+t.overlap, "total %d > %d at the phase's start + %d enqueued + %d overlapping",
		total, base.total, t.created, t.overlap)
	check(total >= base.total+t.createdBefore-t.removed-t.overlap, "total %d < %d at the phase's start + %d enqueued before - %d acks and cancels - %d overlapping",
		total, base.total, t.createdBefore, t.removed, t.overlap)
	check(c.Leased <= t.dequeued-t.settled+t.overlap, "Leased %d > %d dequeued - %d settled + %d overlapping", c.Leased, t.dequeued, t.settled, t.overlap)
	check(c.Dead <= base.dead+t.nacked+t.overlap, "Dead %d > %d at the phase's start + %d nacks + %d overlapping", c.Dead, base.dead, t.nacked, t.overlap)
	check(c.Dead >= base.dead-t.redriven-t.overlap, "Dead %d < %d at the phase's start - %d redrives - %d overlapping", c.Dead, base.dead, t.redriven, t.overlap)
	return bad
}

// checkLinearizable runs porcupine; on a failure it names the messages
// whose histories have no linearization, prints each, and writes
// porcupine's visualization to a file it names.
func (h *historyRun) checkLinearizable() {
	model := historyModel()
	res, info := porcupine.CheckOperationsVerbose(model, h.ops, time.Minute)
	h.t.Logf("seed %d: %d operations on %d messages, %d Stats calls: %v", h.seed, len(h.ops), len(h.ids), len(h.stats), res)
	switch res {
	case porcupine.Ok:
		return
	case porcupine.Unknown:
		h.t.Logf("seed %d: the linearizability check timed out (not a failure)", h.seed)
		return
	}
	var b strings.Builder
	shown := 0
	for _, part := range model.Partition(h.ops) {
		if porcupine.CheckOperations(model, part) || shown >= 3 {
			continue
		}
		shown++
		sort.SliceStable(part, func(i, j int) bool { return part[i].Call < part[j].Call })
		// The first operation (by call) whose prefix has no
		// linearization: where to start reading.
		first := len(part) - 1
		for k := 1; k <= len(part); k++ {
			if !porcupine.CheckOperations(model, part[:k]) {
				first = k - 1
				break
			}
		}
		fmt.Fprintf(&b, "\n%s: no linearization; the operations by call (client [call, return]), ==> at the first that no order explains:",
			describePartition(part))
		for i, op := range part {
			mark := "   "
			if i == first {
				mark = "==>"
			}
			fmt.Fprintf(&b, "\n  %s c%d [%d, %d] %s", mark, op.ClientId, op.Call, op.Return, describeHistoryOp(op.Input, op.Output))
		}
	}
	viz := "(not written)"
	if f, err := os.CreateTemp("", "ringwal-history-*.html"); err == nil {
		viz = f.Name()
		if err := porcupine.Visualize(model, info, f); err != nil {
			viz += " (incomplete: " + err.Error() + ")"
		}
		_ = f.Close()
	}
	kept := "(not kept)"
	if d, err := os.MkdirTemp("", "ringwal-history-dir-*"); err == nil && h.dir != "" && h.e.Close() == nil {
		if err := os.CopyFS(d, os.DirFS(h.dir)); err == nil {
			kept = d
		}
	}
	h.t.Errorf("seed %d (rerun with RINGWAL_HISTORY_SEED=%d): the history is not linearizable; visualization: %s; data directory kept at %s%s",
		h.seed, h.seed, viz, kept, b.String())
}

// The history test's rounds: an engine opened in a fresh directory (or
// memory-only), phases of workers beside a checkpointer, waited for with
// a bound (linearizability_check_test.go).

// newHistoryRun opens a round's engine (on a fake clock) in a fresh
// directory.
func newHistoryRun(t *testing.T, dir string, seed uint64, mode ringwal.Durability, perOp int) *historyRun {
	h := &historyRun{t: t, seed: seed, dir: dir, fake: clock.NewFake(time.Unix(1_700_000_000, 0)), perOp: perOp,
		known: map[ringwal.ID]bool{}, group: map[ringwal.ID]string{}, admin: map[string]historyAdmin{}}
	h.opts = historyOptions(mode)
	h.opts.Clock = h.fake
	e, err := ringwal.Open(h.dir, h.opts)
	require.NoError(t, err)
	h.e = e
	return h
}

// close closes the engine at the round's end, unless a wait gave up on it
// (its Close would hang too).
func (h *historyRun) close() {
	if !h.stalled {
		_ = h.e.Close()
	}
}

// phase runs historyWorkers workers (work) and the checkpointer until the
// workers are done, waiting for them as await does.
func (h *historyRun) phase(p int, work func(w int, rng *rand.Rand)) {
	var wg, cp sync.WaitGroup
	stop := make(chan struct{})
	h.checkpointer(stop, &cp)
	for w := 0; w < historyWorkers; w++ {
		rng := rand.New(rand.NewPCG(h.seed, uint64(p*100+w)))
		wg.Add(1)
		go func() { defer wg.Done(); work(w, rng) }()
	}
	h.run(fmt.Sprintf("phase %d's workers", p), wg.Wait)
	close(stop)
	h.run(fmt.Sprintf("phase %d's checkpointer", p), cp.Wait)
}

// historyVariant is a round's engine: durable in mode, or memory-only
// (whose phases end without a reopening).
type historyVariant struct {
	mode   ringwal.Durability
	memory bool
}

var historyVariants = []historyVariant{{mode: ringwal.Write}, {mode: ringwal.Buffered}, {memory: true}}

func (v historyVariant) String() string {
	if v.memory {
		return "memory"
	}
	return v.mode.String()
}

// historyRuns runs rounds of a history test, round r with seed
// historySeed+r, until one fails or, with RINGWAL_HISTORY, its budget is
// spent (else historyRounds of them). It skips in a crash child, where
// only the child half runs. round runs one round as a subtest.
func historyRuns(t *testing.T, round func(t *testing.T, seed uint64, round int)) {
	if os.Getenv(historyCrashDirEnv) != "" {
		t.Skip("in the crash child")
	}
	seed := historySeed(t)
	budget := historyBudget(t)
	end := time.Now().Add(budget)
	for r := 0; ; r++ {
		round(t, seed+uint64(r), r)
		if t.Failed() || (budget == 0 && r+1 >= historyRounds(t)) || (budget > 0 && time.Now().After(end)) {
			return
		}
	}
}

// The history tests wait for their workers, their checkpointer and Close
// with a bound: a stall (a DequeueBatch waiting for ever on a lease it
// holds, an EnqueueBatch spinning on its own DedupID's entry, a Stats or
// Checkpoint behind either) is reported as a failure of the round, with
// the goroutines' stacks, instead of hanging the suite. The bound is on
// progress, not on time taken: the round fails once no operation has
// started or returned for historyStall, however slow the machine.

// historyStall is how long a round may go without an operation starting
// or returning before it is reported as stalled: long, so that a loaded
// machine is not taken for a bug.
const historyStall = 30 * time.Second

// await waits until done is closed, failing the round (and ending it:
// t.FailNow) if h's operations stop moving for historyStall meanwhile.
// what names what it waited for.
func (h *historyRun) await(done <-chan struct{}, what string) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last, since := h.clock.Load(), time.Now()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		if now := h.clock.Load(); now != last {
			last, since = now, time.Now()
			continue
		}
		if time.Since(since) < historyStall {
			continue
		}
		h.stalled = true // the engine cannot be closed: leave it
		h.t.Errorf("seed %d (rerun with RINGWAL_HISTORY_SEED=%d): stalled: no operation started or returned for %v while waiting for %s; %s",
			h.seed, h.seed, historyStall, what, stallStacks())
		h.t.FailNow()
	}
}

// run calls fn and waits for it as await does.
func (h *historyRun) run(what string, fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	h.await(done, what)
}

// stallStacks writes every goroutine's stack to a file it names, and
// quotes those of the workers stuck in a call of the engine: down to the
// call, from the first ringwal frame.
func stallStacks() string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	where := "(not written)"
	if f, err := os.CreateTemp("", "ringwal-history-stall-*.txt"); err == nil {
		if _, err := f.Write(buf); err == nil {
			where = f.Name()
		}
		_ = f.Close()
	}
	var quoted []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		from, to := -1, -1
		for i, l := range lines {
			if from < 0 && strings.HasPrefix(l, "github.com/ringwal/ringwal.") {
				from = i
			}
			if from >= 0 && strings.HasPrefix(l, "github.com/ringwal/ringwal_test.") {
				to = i
				break
			}
		}
		if to < 0 || len(quoted) == 6 {
			continue
		}
		var calls []string
		for _, l := range lines[from:to] {
			if !strings.HasPrefix(l, "\t") {
				calls = append(calls, l[:strings.LastIndexByte(l, '(')])
			}
		}
		quoted = append(quoted, lines[0]+" "+strings.Join(calls, " < ")+" < "+lines[to][:strings.LastIndexByte(lines[to], '(')])
	}
	return "every goroutine's stack in " + where + "; the workers in the engine:\n" + strings.Join(quoted, "\n")
}
