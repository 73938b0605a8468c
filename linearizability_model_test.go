package ringwal_test

// The sequential model TestHistoryLinearizable checks a concurrent history
// against, partitioned by message ID: every recorded operation names the
// one message it acted on (a Dequeue names the message it returned, an
// enqueue the ID it was answered with), so that porcupine checks each
// message's short history on its own. The messages of one unique DedupID
// (UniqueQueued, UniqueLive) are one partition, since a repeat is judged
// against the last of them accepted (linearizability_unique_test.go). Operations
// that span messages (Stats, a Dequeue that found nothing, Checkpoint, a
// queue's pause, schedules and declarations) are checked outside the
// model (linearizability_check_test.go, linearizability_model_test.go). A message's queue
// is part of its state: it is set by its enqueue (or its Publish copy)
// and never changes, a dequeue from a queue returns only that queue's
// messages, and Get, a redrive and a reopening keep it. So is its
// Deadline, which a dequeue and Get return.
//
// An ack the log refuses (linearizability_failing_test.go) is no ack: the message
// is pending again with its attempts. The engine makes an ack visible
// before the log answers (log, then make visible, then wait), so a reader
// during a failing ack may miss the message for that moment: such an ack
// is two steps inside its call, the ack (leased to "acking") and its
// put-back (to pending).

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

// hKind is an operation of the model.
type hKind uint8

const (
	hEnqueue      hKind = iota // a new message (Enqueue, EnqueueBatch or a Publish copy); out.err "" or "dup"
	hEnqueueMaybe              // an EnqueueBatch entry (or Publish copy) with a DedupID in a call answered ErrDuplicate: new or a repeat
	hDequeue                   // TryDequeue or DequeueBatch (of in.queue) returned this message
	hAck
	hNackPerm
	hNackTrans
	hExtend
	hCancel
	hRequeue
	hRedrive
	hGet
	hReopen        // barrier: Close then Open (leases end, their messages are pending)
	hAdvance       // barrier: the fake clock passed every delay and backoff
	hEnqueueUnique // one message (in.entry) of a call with a unique DedupID, answered with in.id
	hAckBatch      // one lease of an AckBatch: out.err is that lease's ("stale" by the error's indexes, else the batch's)
	hPutBack       // the end of an ack (or AckBatch) of in.lease that the log refused: the message is pending again
)

var hKindNames = [...]string{"enqueue", "enqueue?", "dequeue", "ack", "nack(permanent)", "nack(transient)",
	"extend", "cancel", "requeue", "redrive", "get", "reopen", "advance", "enqueue-unique", "ack(batch)", "put-back"}

func (k hKind) String() string { return hKindNames[k] }

// hIn is an operation's input; id is the message it acted on (for an
// enqueue or a dequeue, the ID it returned).
type hIn struct {
	kind    hKind
	id      ringwal.ID
	queue   string // enqueue: the queue it went to; dequeue: the queue asked
	publish bool   // enqueue: a Publish copy (for the description only)
	batch   bool   // dequeue: by DequeueBatch (for the description only)
	payload string // enqueue
	dedup   string // enqueue
	delayed bool   // enqueue with a Delay
	lease   ringwal.Lease
	// deadline is an enqueue's Message.Deadline (Unix nanoseconds, 0:
	// none).
	deadline int64
	// hEnqueueUnique: the DedupID's mode, the message, and its place
	// among the call's messages with that DedupID: the k-th of n of the
	// call stamped call (they are judged in order); single: a lone
	// Enqueue (whose error is its own, not a batch's).
	unique ringwal.Unique
	entry  hEntry
	call   int64
	k, n   int
	single bool
	// all: a barrier on every message of in.id's group (one operation,
	// not one per message, so that the checker need not order them).
	all bool
}

// hOut is what the call returned. err is a class: "" (nil), "dup",
// "stale", "notfound", "invalid", "io" (a write the disk refused), or
// "other: <text>" (never allowed).
type hOut struct {
	err      string
	lease    ringwal.Lease // dequeue
	attempt  int           // dequeue: Delivery.Attempt; get: Info.Attempts
	payload  string        // dequeue, get
	dedup    string        // dequeue, get
	queue    string        // dequeue, get: the message's Queue
	state    ringwal.State // get
	category classify.Category
	deadline int64          // dequeue, get
	unique   ringwal.Unique // dequeue, get
}

// errClass maps an error to hOut.err.
func errClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.EFBIG):
		return "io" // the log's write failed: a full disk (linearizability_failing_test.go)
	case errors.Is(err, ringwal.ErrDuplicate):
		return "dup"
	case errors.Is(err, ringwal.ErrStaleLease):
		return "stale"
	case errors.Is(err, ringwal.ErrNotFound):
		return "notfound"
	case errors.Is(err, ringwal.ErrInvalid):
		return "invalid"
	}
	return "other: " + err.Error()
}

// Model states of one message.
const (
	msAbsent  = iota // not enqueued (yet)
	msPending        // Pending
	msDelayed        // Delayed (a Delay, or a retry's backoff)
	msLeased
	msDead
	msGone   // acked or cancelled
	msAcking // an ack the log refuses is on its way: not found until it is put back
)

var msNames = [...]string{"absent", "pending", "delayed", "leased", "dead", "gone", "acking"}

// hState is one message's state in the model (comparable: == is Equal).
type hState struct {
	st       int
	queue    string
	attempts int
	lease    ringwal.Lease
	payload  string
	dedup    string
	cat      classify.Category
	deadline int64
	unique   ringwal.Unique
}

func (s hState) String() string {
	switch s.st {
	case msAbsent, msGone:
		return msNames[s.st]
	case msDead:
		return fmt.Sprintf("dead(%v) queue=%q attempts=%d payload=%q", s.cat, s.queue, s.attempts, s.payload)
	}
	return fmt.Sprintf("%s queue=%q attempts=%d payload=%q dedup=%q deadline=%d", msNames[s.st], s.queue, s.attempts, s.payload,
		s.dedup, s.deadline)
}

// alive: the engine holds s as a live message (what a unique DedupID's
// entry may name).
func (s hState) alive() bool { return s.st == msPending || s.st == msDelayed || s.st == msLeased }

// gone is s acked or cancelled: only its DedupID is still remembered.
func gone(s hState) hState { return hState{st: msGone, dedup: s.dedup} }

// historyTransientMax is the Transient policy's MaxAttempts in the
// history tests: a transient nack of attempt k >= it dead-letters.
const historyTransientMax = 3

// staleOr is the model of a settle by lease: ok (nil) needs the lease to
// be the message's current one; "stale" needs it not to be.
func staleOr(s hState, in hIn, out hOut, next func(hState) hState) (bool, hState) {
	current := s.st == msLeased && s.lease == in.lease
	switch {
	case out.err == "" && current:
		return true, next(s)
	case out.err == "stale" && !current:
		return true, s
	}
	return false, s
}

// ackStep is an Ack's (or an AckBatch lease's): staleOr, and a current
// lease whose record the log refused ("io") is acking until its put-back.
func ackStep(s hState, in hIn, out hOut) (bool, hState) {
	if out.err == "io" {
		if s.st != msLeased || s.lease != in.lease {
			return false, s
		}
		s.st = msAcking
		return true, s
	}
	return staleOr(s, in, out, gone)
}

// historyStep is the model's step.
func historyStep(s hState, in hIn, out hOut) (bool, hState) {
	live := s.st == msPending || s.st == msDelayed || s.st == msLeased
	switch in.kind {
	case hEnqueue, hEnqueueMaybe:
		created := s.st == msAbsent && (out.err == "" || in.kind == hEnqueueMaybe)
		if created {
			n := hState{st: msPending, queue: in.queue, payload: in.payload, dedup: in.dedup, deadline: in.deadline}
			if in.delayed {
				n.st = msDelayed
			}
			return true, n
		}
		// A repeat: the first message (in any state: the window is
		// time-based) must exist and carry the same DedupID. DedupIDs are
		// the engine's, not a queue's: a repeat sent to another queue
		// names the first, which stays in its own.
		repeat := out.err == "dup" || in.kind == hEnqueueMaybe
		return repeat && s.st != msAbsent && in.dedup != "" && s.dedup == in.dedup, s
	case hDequeue:
		if s.st != msPending || in.queue != s.queue || out.queue != s.queue || out.payload != s.payload ||
			out.dedup != s.dedup || out.attempt != s.attempts+1 || out.deadline != s.deadline || out.unique != s.unique {
			return false, s
		}
		s.st, s.attempts, s.lease = msLeased, out.attempt, out.lease
		return true, s
	case hAck, hAckBatch:
		return ackStep(s, in, out)
	case hPutBack:
		// As a requeue: pending, its attempt counted.
		if s.st != msAcking || s.lease != in.lease {
			return false, s
		}
		s.st, s.lease = msPending, ringwal.Lease{}
		return true, s
	case hNackPerm:
		return staleOr(s, in, out, func(s hState) hState {
			s.st, s.cat, s.lease = msDead, classify.Permanent, ringwal.Lease{}
			return s
		})
	case hNackTrans:
		return staleOr(s, in, out, func(s hState) hState {
			s.st, s.lease = msDelayed, ringwal.Lease{}
			if s.attempts >= historyTransientMax {
				s.st, s.cat = msDead, classify.Transient
			}
			return s
		})
	case hExtend:
		return staleOr(s, in, out, func(s hState) hState { return s })
	case hCancel:
		switch {
		case out.err == "" && live:
			return true, gone(s)
		case out.err == "invalid" && s.st == msDead,
			out.err == "notfound" && (s.st == msAbsent || s.st == msGone || s.st == msAcking):
			return true, s
		}
		return false, s
	case hRequeue:
		switch {
		case out.err == "" && live:
			s.st, s.lease = msPending, ringwal.Lease{}
			return true, s
		case out.err == "invalid" && s.st == msDead,
			out.err == "notfound" && (s.st == msAbsent || s.st == msGone || s.st == msAcking):
			return true, s
		}
		return false, s
	case hRedrive:
		switch {
		case out.err == "" && s.st == msDead:
			s.st, s.attempts, s.cat = msPending, 0, classify.Unknown
			return true, s
		case out.err == "notfound" && s.st != msDead:
			return true, s
		}
		return false, s
	case hGet:
		if out.err == "notfound" {
			return s.st == msAbsent || s.st == msGone || s.st == msAcking, s
		}
		if out.err != "" || s.st == msAbsent || s.st == msGone || s.st == msAcking {
			return false, s
		}
		want := [...]ringwal.State{msPending: ringwal.Pending, msDelayed: ringwal.Delayed,
			msLeased: ringwal.Leased, msDead: ringwal.Dead}[s.st]
		ok := out.state == want && out.queue == s.queue && out.attempt == s.attempts && out.payload == s.payload &&
			out.dedup == s.dedup && (s.st != msDead || out.category == s.cat) && out.deadline == s.deadline && out.unique == s.unique
		return ok, s
	case hReopen:
		if s.st == msLeased {
			s.st, s.lease = msPending, ringwal.Lease{}
		}
		return true, s
	case hAdvance:
		if s.st == msDelayed {
			s.st = msPending
		}
		return true, s
	}
	return false, s
}

func describeHistoryOp(input, output any) string {
	in, out := input.(hIn), output.(hOut)
	var b strings.Builder
	fmt.Fprintf(&b, "%v(%d", in.kind, in.id)
	switch in.kind {
	case hEnqueue, hEnqueueMaybe:
		if in.publish {
			b.WriteString(", published")
		}
		fmt.Fprintf(&b, ", queue %q, payload %q, dedup %q, delayed %v, deadline %d", in.queue, in.payload, in.dedup, in.delayed, in.deadline)
	case hEnqueueUnique:
		en := in.entry
		fmt.Fprintf(&b, ", %v dedup %q, %d of %d, single %v: queue %q payload %q delayed %v deadline %d replace %v", in.unique, in.dedup,
			in.k+1, in.n, in.single, en.queue, en.payload, en.delayed, en.deadline, en.replace)
	case hDequeue:
		fmt.Fprintf(&b, ", queue %q, batch %v", in.queue, in.batch)
	case hAck, hAckBatch, hPutBack, hNackPerm, hNackTrans, hExtend:
		fmt.Fprintf(&b, ", lease %v", in.lease)
	}
	b.WriteString(") -> ")
	switch {
	case out.err != "":
		b.WriteString(out.err)
	case in.kind == hDequeue:
		fmt.Fprintf(&b, "lease %v attempt %d queue %q payload %q dedup %q deadline %d", out.lease, out.attempt, out.queue, out.payload,
			out.dedup, out.deadline)
	case in.kind == hGet:
		fmt.Fprintf(&b, "%v queue %q attempts %d payload %q dedup %q cat %v deadline %d", out.state, out.queue, out.attempt, out.payload,
			out.dedup, out.category, out.deadline)
	default:
		b.WriteString("ok")
	}
	return b.String()
}

// historyModel is the model, partitioned by message ID, the messages of
// a unique DedupID together (historyPartition).
func historyModel() porcupine.Model {
	return porcupine.Model{
		Partition: historyPartition,
		Init:      func() any { return hGroup{} },
		Step: func(state, input, output any) (bool, any) {
			return groupStep(state.(hGroup), input.(hIn), output.(hOut))
		},
		Equal:             func(a, b any) bool { return a.(hGroup).equal(b.(hGroup)) },
		DescribeOperation: describeHistoryOp,
		DescribeState:     func(state any) string { return state.(hGroup).String() },
	}
}

// The history test's schedules and declarations beside checkpoints:
// workers add and remove schedules and declare and delete queues while a
// checkpointer runs Checkpoint over and over, and at every quiescent
// point, a reopening included, Schedules and Queues must be what the
// acknowledged calls left: every schedule whose AddSchedule returned nil
// (and no RemoveSchedule since) there with the message it was last given,
// every queue whose DeleteQueue returned nil (and no DeclareQueue since)
// gone. Each name is one worker's, so its calls are in order and the
// state they leave is exact. The schedules never fire (historySpec); the
// queues take no message.

// historySpec fires on February 29th at midnight: never on the frozen
// clock, nor in a crash child's few seconds (but for one minute in four
// years).
const historySpec = "0 0 29 2 *"

// historyTmpQueue prefixes the queues the workers declare and delete
// (Stats and Queues list them too: they hold nothing).
const historyTmpQueue = "x"

// historyNames is how many schedule names and queue names each worker
// owns.
const historyNames = 3

// historyAdmin is what the acknowledged calls left of one name.
type historyAdmin struct {
	present bool
	payload string // a schedule's Message.Payload
}

// adminOp adds or removes one of worker w's schedules, or declares or
// deletes one of its queues, and checks the answer against what its own
// earlier calls left (it alone calls on these names).
func (h *historyRun) adminOp(w int, rng *rand.Rand, n int) {
	k := rng.IntN(historyNames)
	schedule := rng.IntN(2) == 0
	name := fmt.Sprintf("%s%d-%d", historyTmpQueue, w, k)
	if schedule {
		name = fmt.Sprintf("h%d-%d", w, k)
	}
	h.mu.Lock()
	was := h.admin[name]
	h.mu.Unlock()
	add := rng.IntN(3) != 0
	var now historyAdmin
	var err error
	h.now() // the call and its return move the round on (await)
	switch {
	case schedule && add:
		now = historyAdmin{present: true, payload: fmt.Sprintf("s%d-%d-%d", len(h.phases), w, n)}
		err = h.e.AddSchedule(ringwal.Schedule{Name: name, Spec: historySpec,
			Message: ringwal.Message{Payload: []byte(now.payload), Queue: historyQueue(rng)}})
	case schedule:
		err = h.e.RemoveSchedule(name)
	case add:
		now = historyAdmin{present: true}
		err = h.e.DeclareQueue(name, ringwal.QueueOptions{Strict: rng.IntN(2) == 0})
	default:
		err = h.e.DeleteQueue(name)
	}
	h.now()
	verb := map[[2]bool]string{{true, true}: "AddSchedule", {true, false}: "RemoveSchedule", {false, true}: "DeclareQueue",
		{false, false}: "DeleteQueue"}[[2]bool{schedule, add}]
	switch {
	case err == nil:
	case !add && !was.present && errors.Is(err, ringwal.ErrNotFound):
	default:
		h.t.Errorf("seed %d: worker %d: %s(%q) (present before: %v): %v", h.seed, w, verb, name, was.present, err)
		return
	}
	if !add && !was.present && err == nil {
		h.t.Errorf("seed %d: worker %d: %s(%q) of a name not there returned nil", h.seed, w, verb, name)
	}
	h.mu.Lock()
	h.admin[name] = now
	h.mu.Unlock()
}

// checkpointer runs Checkpoint over and over until stop is closed.
func (h *historyRun) checkpointer(stop <-chan struct{}, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if !h.noCheckpoints {
				h.checkpoint()
			}
			time.Sleep(time.Millisecond) // room for the workers on a small machine
		}
	}()
}

// checkAdmin compares Schedules and Queues with what the acknowledged
// calls left (quiescent: nothing else calls).
func (h *historyRun) checkAdmin(when string) {
	want := map[string]historyAdmin{}
	for name, a := range h.admin {
		if a.present {
			want[name] = a
		}
	}
	got := map[string]historyAdmin{}
	for _, s := range h.e.Schedules() {
		got[s.Name] = historyAdmin{present: true, payload: string(s.Message.Payload)}
		if s.Spec != historySpec {
			h.t.Errorf("seed %d, %s: schedule %q has spec %q, added with %q", h.seed, when, s.Name, s.Spec, historySpec)
		}
	}
	for _, q := range h.e.Queues() {
		if strings.HasPrefix(q.Name, historyTmpQueue) {
			got[q.Name] = historyAdmin{present: true}
		}
	}
	var bad []string
	for name, a := range want {
		if g, ok := got[name]; !ok {
			bad = append(bad, fmt.Sprintf("%q is missing", name))
		} else if g != a {
			bad = append(bad, fmt.Sprintf("%q is %+v, last added as %+v", name, g, a))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			bad = append(bad, fmt.Sprintf("%q is there, but its last acknowledged call removed it (or none added it)", name))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		h.t.Errorf("seed %d, %s: schedules and queues differ from what the acknowledged calls left: %s", h.seed, when,
			strings.Join(bad, "; "))
	}
}

// tmpQueuesDiffer says how the workers' own queues in quiescent Stats
// differ from empty, or "".
func tmpQueuesDiffer(got map[string]stateCounts) string {
	var bad []string
	for q, c := range got {
		if strings.HasPrefix(q, historyTmpQueue) && c != (stateCounts{}) {
			bad = append(bad, fmt.Sprintf("queue %q, which takes no message, counts %+v", q, c))
		}
	}
	sort.Strings(bad)
	return strings.Join(bad, "; ")
}

// historyNamed are the names of Stats.Queues that are the history's
// queues (not the workers' own).
func historyNamed(s ringwal.Stats) []string {
	var names []string
	for _, q := range s.Queues {
		if !strings.HasPrefix(q.Name, historyTmpQueue) {
			names = append(names, q.Name)
		}
	}
	return names
}
