package ringwal_test

// Acks that fail, in the history: a child process of this test binary
// runs the history workload on the named queues (Write mode), then makes
// the log's writes fail (RLIMIT_FSIZE, as a full disk does: EFBIG) while
// workers dequeue and ack (one, or a batch) and read, and gives the space
// back while they go on. The model (linearizability_model_test.go) takes a failed
// ack for no ack: the message is pending again, its attempt counted, in
// its queue; the history must stay linearizable against it. Afterwards
// DeleteQueue of each named queue that holds messages must refuse it,
// naming the queue's live messages and dead letters as Get finds them
// (one short is the lost count of a put-back message); the first
// Checkpoint may report the refused writes, the next must succeed; a
// reopening, and the parent's (without a limit), must find exactly the
// messages the history left.
//
// The child reports, after its last quiescent point, a line per message:
//
//	LIVE id queue       pending or delayed
//	DEAD id queue       dead-lettered
//	GONE id             acked or cancelled
//	PUTBACK id queue    an ack of it failed, and it is live (also a LIVE line)

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/dlq"
)

const historyFailingEnv = "RINGWAL_HISTORY_FAILING_DIR"

// historyFailingOps is each worker's operations in each phase of the
// child: fewer than the in-process rounds', the child is one round.
const historyFailingOps = 150

// historyFailedAcks is how many acks must have failed (one at least of a
// named queue's message) before the space is given back.
const historyFailedAcks = 12

// recordSettle records a settle of d by kind that returned err; an ack
// the log refused is two steps, the ack and its put-back.
func (h *historyRun) recordSettle(w int, c int64, kind hKind, d ringwal.Delivery, err error) {
	in, out := hIn{kind: kind, id: d.ID, lease: d.Lease}, hOut{err: errClass(err)}
	if kind == hAck && out.err == "io" {
		h.failedAck(d)
		h.record(w, c, []hIn{in, {kind: hPutBack, id: d.ID, lease: d.Lease}}, []hOut{out, {}})
		return
	}
	h.record1(w, c, in, out)
}

// failedAck counts an ack of d that the log refused.
func (h *historyRun) failedAck(d ringwal.Delivery) {
	h.failed.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.putBack == nil {
		h.putBack = map[ringwal.ID]bool{}
	}
	h.putBack[d.ID] = true
	if d.Message.Queue != "" {
		h.failedNamed.Store(true)
	}
}

// staleIndexes reads the indexes of the stale leases from an AckBatch's
// error ("... leases stale (indexes 0 2): ..."), all of them for a batch
// of at most eight.
var staleIndexes = regexp.MustCompile(`leases stale \(indexes ([0-9 ]+)\)`)

// ackBatch acks up to four held leases (and sometimes a spent one, stale)
// with one AckBatch, records one operation per lease (its own outcome:
// stale by the error's indexes, else the batch's) and returns held and
// spent updated.
func (h *historyRun) ackBatch(w int, rng *rand.Rand, held, spent []ringwal.Delivery) ([]ringwal.Delivery, []ringwal.Delivery) {
	var ds, kept []ringwal.Delivery
	for _, d := range held { // put-back messages are acked alone (ackPutBack)
		if h.isPutBack(d.ID) {
			kept = append(kept, d)
		} else {
			ds = append(ds, d)
		}
	}
	rng.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
	k := min(len(ds), 1+rng.IntN(4))
	held = append(kept, ds[k:]...)
	ds = ds[:k]
	if len(spent) > 0 && rng.IntN(4) == 0 {
		ds = append(ds, spent[rng.IntN(len(spent))])
	}
	ls := make([]ringwal.Lease, len(ds))
	for i, d := range ds {
		ls[i] = d.Lease
	}
	c := h.now()
	err := h.e.AckBatch(ls)
	stale := map[int]bool{}
	class := errClass(err)
	if errors.Is(err, ringwal.ErrStaleLease) {
		if m := staleIndexes.FindStringSubmatch(err.Error()); m != nil {
			for _, f := range strings.Fields(m[1]) {
				i, _ := strconv.Atoi(f)
				stale[i] = true
			}
			if class == "stale" {
				class = "" // the others were acked
			}
		}
	}
	var ins []hIn
	var outs []hOut
	for i, d := range ds {
		out := hOut{err: class}
		if stale[i] {
			out.err = "stale"
		}
		ins, outs = append(ins, hIn{kind: hAckBatch, id: d.ID, lease: d.Lease}), append(outs, out)
		if out.err == "io" {
			h.failedAck(d)
			ins, outs = append(ins, hIn{kind: hPutBack, id: d.ID, lease: d.Lease}), append(outs, hOut{})
		}
	}
	h.record(w, c, ins, outs)
	return held, append(spent, ds...)
}

// failWorker is a worker of the phase in which the disk refuses writes:
// it dequeues (one, or a batch), acks (one, or a batch), reads messages
// and Stats, and nothing else that writes. Once the space is back it
// requeues, rather than acks, a message whose ack failed, so that its
// queue still holds it afterwards.
func (h *historyRun) failWorker(w int, rng *rand.Rand) {
	var held, spent []ringwal.Delivery
	for n := 0; n < h.perOp; n++ {
		switch r := rng.IntN(100); {
		case r < 35:
			if len(held) < 8 {
				held = append(held, h.dequeueSome(w, rng, 8)...)
			}
		case r < 75:
			if len(held) == 0 {
				continue
			}
			i := rng.IntN(len(held))
			d := held[i]
			if h.isPutBack(d.ID) { // acked alone, and only while the disk refuses
				held = append(held[:i], held[i+1:]...)
				if h.ackPutBack(w, d) {
					spent = append(spent, d)
				} else {
					h.requeue(w, d.ID)
				}
				continue
			}
			if r < 60 {
				held = append(held[:i], held[i+1:]...)
				h.ack(w, d)
				spent = append(spent, d)
			} else {
				held, spent = h.ackBatch(w, rng, held, spent)
			}
		case r < 90:
			h.get(w, h.anyID(rng))
		default:
			h.readStats()
		}
	}
	for _, d := range held { // the phase ends with no lease: requeued
		h.requeue(w, d.ID)
	}
}

// deleteRefused: DeleteQueue of each named queue that holds messages (by
// Get: live and dead) refuses it with an error that names those counts.
// It returns how many queues holding a put-back message it asked.
func (h *historyRun) deleteRefused(when string) int {
	live, dead, putBack := map[string]int{}, map[string]int{}, map[string]int{}
	for _, id := range h.ids {
		info, err := h.e.Get(id)
		if err != nil {
			continue
		}
		q := info.Message.Queue
		if info.State == ringwal.Dead {
			dead[q]++
		} else {
			live[q]++
		}
		if h.putBack[id] && info.State != ringwal.Dead {
			putBack[q]++
		}
	}
	asked := 0
	for _, q := range historyQueues[1:] {
		if live[q]+dead[q] == 0 {
			continue
		}
		if putBack[q] > 0 {
			asked++
		}
		err := h.e.DeleteQueue(q)
		want := fmt.Sprintf("holds %d live messages and %d dead letters", live[q], dead[q])
		if !errors.Is(err, ringwal.ErrInvalid) || !strings.Contains(err.Error(), want) {
			h.t.Errorf("seed %d, %s: DeleteQueue(%q), which %s (%d put back after a failed ack): %v", h.seed, when, q, want, putBack[q], err)
		}
	}
	return asked
}

func TestHistoryFailedAcksAreNoAcks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RLIMIT_FSIZE and SIGXFSZ as on Linux")
	}
	if dir := os.Getenv(historyFailingEnv); dir != "" {
		historyFailingChild(t, dir)
		return
	}
	if os.Getenv(historyCrashDirEnv) != "" {
		t.Skip("in the crash child")
	}
	seed := historySeed(t)
	dir := t.TempDir()
	out := runChild(t, "TestHistoryFailedAcksAreNoAcks", historyFailingEnv+"="+dir, fmt.Sprintf("RINGWAL_HISTORY_SEED=%d", seed))
	type reported struct {
		state string
		queue string
	}
	rep, putBack := map[ringwal.ID]reported{}, map[ringwal.ID]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		id, err := strconv.ParseUint(f[1], 10, 64)
		switch {
		case f[0] == "REPORT":
			t.Log(sc.Text())
		case err != nil:
		case (f[0] == "LIVE" || f[0] == "DEAD") && len(f) == 3:
			rep[id] = reported{f[0], undash(f[2])}
		case f[0] == "GONE" && len(f) == 2:
			rep[id] = reported{state: f[0]}
		case f[0] == "PUTBACK" && len(f) == 3:
			putBack[id] = true
		}
	}
	require.NotEmpty(t, putBack, "seed %d: the child reported no put-back message:\n%s", seed, out)

	// Reopened without a limit, on a frozen clock.
	fake := clock.NewFake(time.Now())
	opts := historyOptions(ringwal.Write)
	opts.Clock = fake
	e := open(t, dir, opts)
	want := stateCounts{}
	for id, r := range rep {
		info, err := e.Get(id)
		got := "GONE"
		switch {
		case errors.Is(err, ringwal.ErrNotFound):
		case err != nil:
			t.Errorf("seed %d: Get(%d): %v", seed, id, err)
		case info.State == ringwal.Dead:
			got = "DEAD"
			want.Dead++
		default:
			got = "LIVE"
			want.add(info.State)
		}
		if got != r.state || (err == nil && info.Message.Queue != r.queue) {
			t.Errorf("seed %d: message %d is %s in queue %q after the child's Close; the child left it %s in queue %q (put back: %v)",
				seed, id, got, info.Message.Queue, r.state, r.queue, putBack[id])
		}
	}
	assert.Equal(t, want, counts(e.Stats()), "seed %d: Stats after reopening count what Get finds", seed)
	// Every live message is delivered by its own queue.
	fake.Advance(historyJump)
	delivered := 0
	deadline := time.Now().Add(historySettle)
	for {
		more := false
		for _, q := range historyQueues {
			d, ok := e.Queue(q).TryDequeue()
			if !ok {
				continue
			}
			more = true
			delivered++
			if r := rep[d.ID]; r.state != "LIVE" || r.queue != q {
				t.Errorf("seed %d: queue %q delivered message %d after reopening; the child left it %+v", seed, q, d.ID, r)
			}
			require.NoError(t, e.Ack(d.Lease))
		}
		if s := e.Stats(); !more && s.Pending+s.Delayed == 0 {
			break
		}
		require.False(t, time.Now().After(deadline), "seed %d: not drained: %+v", seed, counts(e.Stats()))
		if !more {
			time.Sleep(time.Millisecond) // the housekeeper makes the delayed ones due
		}
	}
	assert.Equal(t, want.Pending+want.Delayed, delivered, "seed %d: every live message delivered once", seed)
	require.NoError(t, e.Checkpoint())
	t.Logf("seed %d: %d messages reported, %d put back after a failed ack, %d delivered after reopening", seed, len(rep), len(putBack), delivered)
}

// historyFailingChild is the child half of TestHistoryFailedAcksAreNoAcks.
func historyFailingChild(t *testing.T, dir string) {
	setLimit, unlimited := fileSizeLimit(t) // SIGXFSZ ignored from here
	defer setLimit(unlimited)
	seed, err := strconv.ParseUint(os.Getenv("RINGWAL_HISTORY_SEED"), 10, 64)
	require.NoError(t, err)
	h := newHistoryRun(t, dir, seed, ringwal.Write, historyFailingOps)
	defer h.close()
	h.quiescent("at the start")
	h.phase(0, h.worker)
	h.phases[len(h.phases)-1].to = h.now()
	h.quiescent("after phase 0")
	h.checkpoint()
	h.reopen() // the workers' leases end: a phase starts with none
	h.quiescent("after reopening")
	h.fillQueues(20)
	h.quiescent("after filling the queues")

	// The disk refuses writes until enough acks have failed.
	h.noCheckpoints = true
	setLimit(1)
	raised := make(chan error, 1)
	go func() {
		for h.failed.Load() < historyFailedAcks || !h.failedNamed.Load() {
			if h.failDone.Load() {
				break
			}
			time.Sleep(time.Millisecond)
		}
		h.spaceMu.Lock()
		err := setFileSize(unlimited)
		h.spaceBack = true
		h.spaceMu.Unlock()
		raised <- err
	}()
	h.phase(1, h.failWorker)
	h.failDone.Store(true)
	require.NoError(t, <-raised)
	h.noCheckpoints = false
	h.phases[len(h.phases)-1].to = h.now()
	childEmit("REPORT child: %d acks failed while the disk refused writes", h.failed.Load())
	require.True(t, h.failedNamed.Load(), "seed %d: no ack of a named queue's message failed (%d failed in all)", seed, h.failed.Load())
	h.quiescent("after the disk refused acks")
	require.NotZero(t, h.deleteRefused("after the disk refused acks"), "seed %d: no named queue holds a put-back message", seed)
	// The first checkpoint may report the writes the disk refused (lease
	// records); the next must succeed.
	first := h.e.Checkpoint()
	childEmit("REPORT child: first checkpoint once space is back: %v", first)
	require.NoError(t, h.e.Checkpoint(), "seed %d: the second checkpoint once space is back", seed)
	h.quiescent("after the checkpoints")
	h.reopen()
	h.quiescent("after reopening again")
	h.deleteRefused("after reopening again")

	h.checkStats()
	h.checkPauses()
	h.checkDedup()
	h.checkLinearizable()
	h.reportStates()
}

// fillQueues enqueues n plain messages into each queue, for the acks
// that fail to have leases.
func (h *historyRun) fillQueues(n int) {
	for _, q := range historyQueues {
		for i := 0; i < n; i++ {
			m := ringwal.Message{Payload: []byte(fmt.Sprintf("f%s-%d", q, i)), Queue: q}
			c := h.now()
			id, err := h.e.Enqueue(ctxBG, m)
			h.record1(historyWorkers, c, enqIn(hEnqueue, id, m, q), hOut{err: errClass(err)})
		}
	}
}

// reportStates writes the child's report: each known message's state as
// Get finds it (quiescent), and which are live after a failed ack.
func (h *historyRun) reportStates() {
	for _, id := range h.ids {
		info, err := h.e.Get(id)
		switch {
		case errors.Is(err, ringwal.ErrNotFound):
			childEmit("GONE %d", id)
		case err != nil:
			h.t.Errorf("seed %d: Get(%d): %v", h.seed, id, err)
		case info.State == ringwal.Dead:
			childEmit("DEAD %d %s", id, dash(info.Message.Queue))
		default:
			childEmit("LIVE %d %s", id, dash(info.Message.Queue))
			if h.putBack[id] {
				childEmit("PUTBACK %d %s", id, dash(info.Message.Queue))
			}
		}
	}
	if dls, err := h.e.DeadLetters(dlq.Query{}); err == nil {
		childEmit("REPORT child: %d dead letters", len(dls))
	}
}

// historyFailing is the failing-write state of a run.
type historyFailing struct {
	failed        atomic.Int64 // acks the log refused
	failedNamed   atomic.Bool  // one of them of a named queue's message
	failDone      atomic.Bool  // the phase's workers are done
	noCheckpoints bool         // the checkpointer is off (the disk refuses writes)
	// spaceBack says the space is back, set (under spaceMu's write lock)
	// as the limit is raised: an ack of a put-back message is made under
	// its read lock, before then only (ackPutBack), so that at least the
	// put-back messages no ack reached are still held when the phase
	// ends (deleteRefused asks their queues).
	spaceMu   sync.RWMutex
	spaceBack bool
	putBack   map[ringwal.ID]bool // under mu
}

// ackPutBack acks d, a message put back after a failed ack, unless the
// space is back: then it reports false and the caller requeues d.
func (h *historyRun) ackPutBack(w int, d ringwal.Delivery) bool {
	h.spaceMu.RLock()
	defer h.spaceMu.RUnlock()
	if h.spaceBack {
		return false
	}
	h.ack(w, d)
	return true
}

// ack acks d and records the operation.
func (h *historyRun) ack(w int, d ringwal.Delivery) {
	c := h.now()
	err := h.e.Ack(d.Lease)
	h.recordSettle(w, c, hAck, d, err)
}

// isPutBack reports whether id was put back after a failed ack.
func (h *historyRun) isPutBack(id ringwal.ID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.putBack[id]
}
