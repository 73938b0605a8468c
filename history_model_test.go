package ringwal_test

// The sequential model TestHistoryLinearizable checks a concurrent history
// against, partitioned by message ID: every recorded operation names the
// one message it acted on (a Dequeue names the message it returned, an
// enqueue the ID it was answered with), so that porcupine checks each
// message's short history on its own. Operations that span messages
// (Stats, a Dequeue that found nothing, Checkpoint, a queue's pause) are
// checked outside the model (history_check_test.go). A message's queue is
// part of its state: it is set by its enqueue (or its Publish copy) and
// never changes, a dequeue from a queue returns only that queue's
// messages, and Get, a redrive and a reopening keep it.

import (
	"errors"
	"fmt"
	"sort"
	"strings"

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
	hReopen  // barrier: Close then Open (leases end, their messages are pending)
	hAdvance // barrier: the fake clock passed every delay and backoff
)

var hKindNames = [...]string{"enqueue", "enqueue?", "dequeue", "ack", "nack(permanent)", "nack(transient)",
	"extend", "cancel", "requeue", "redrive", "get", "reopen", "advance"}

func (k hKind) String() string { return hKindNames[k] }

// hIn is an operation's input; id is the message it acted on (for an
// enqueue or a dequeue, the ID it returned).
type hIn struct {
	kind    hKind
	id      ringwal.ID
	queue   string // enqueue: the queue it went to; dequeue: the queue asked
	publish bool   // enqueue: a Publish copy (for the description only)
	payload string // enqueue
	dedup   string // enqueue
	delayed bool   // enqueue with a Delay
	lease   ringwal.Lease
}

// hOut is what the call returned. err is a class: "" (nil), "dup",
// "stale", "notfound", "invalid", or "other: <text>" (never allowed).
type hOut struct {
	err      string
	lease    ringwal.Lease // dequeue
	attempt  int           // dequeue: Delivery.Attempt; get: Info.Attempts
	payload  string        // dequeue, get
	dedup    string        // dequeue, get
	queue    string        // dequeue, get: the message's Queue
	state    ringwal.State // get
	category classify.Category
}

// errClass maps an error to hOut.err.
func errClass(err error) string {
	switch {
	case err == nil:
		return ""
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
	msGone // acked or cancelled
)

var msNames = [...]string{"absent", "pending", "delayed", "leased", "dead", "gone"}

// hState is one message's state in the model (comparable: == is Equal).
type hState struct {
	st       int
	queue    string
	attempts int
	lease    ringwal.Lease
	payload  string
	dedup    string
	cat      classify.Category
}

func (s hState) String() string {
	switch s.st {
	case msAbsent, msGone:
		return msNames[s.st]
	case msDead:
		return fmt.Sprintf("dead(%v) queue=%q attempts=%d payload=%q", s.cat, s.queue, s.attempts, s.payload)
	}
	return fmt.Sprintf("%s queue=%q attempts=%d payload=%q dedup=%q", msNames[s.st], s.queue, s.attempts, s.payload, s.dedup)
}

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

// historyStep is the model's step.
func historyStep(s hState, in hIn, out hOut) (bool, hState) {
	live := s.st == msPending || s.st == msDelayed || s.st == msLeased
	switch in.kind {
	case hEnqueue, hEnqueueMaybe:
		created := s.st == msAbsent && (out.err == "" || in.kind == hEnqueueMaybe)
		if created {
			n := hState{st: msPending, queue: in.queue, payload: in.payload, dedup: in.dedup}
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
		if s.st != msPending || in.queue != s.queue || out.queue != s.queue ||
			out.payload != s.payload || out.dedup != s.dedup || out.attempt != s.attempts+1 {
			return false, s
		}
		s.st, s.attempts, s.lease = msLeased, out.attempt, out.lease
		return true, s
	case hAck:
		return staleOr(s, in, out, gone)
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
			out.err == "notfound" && (s.st == msAbsent || s.st == msGone):
			return true, s
		}
		return false, s
	case hRequeue:
		switch {
		case out.err == "" && live:
			s.st, s.lease = msPending, ringwal.Lease{}
			return true, s
		case out.err == "invalid" && s.st == msDead,
			out.err == "notfound" && (s.st == msAbsent || s.st == msGone):
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
			return s.st == msAbsent || s.st == msGone, s
		}
		if out.err != "" || s.st == msAbsent || s.st == msGone {
			return false, s
		}
		want := [...]ringwal.State{msPending: ringwal.Pending, msDelayed: ringwal.Delayed,
			msLeased: ringwal.Leased, msDead: ringwal.Dead}[s.st]
		ok := out.state == want && out.queue == s.queue && out.attempt == s.attempts && out.payload == s.payload &&
			out.dedup == s.dedup && (s.st != msDead || out.category == s.cat)
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
		fmt.Fprintf(&b, ", queue %q, payload %q, dedup %q, delayed %v", in.queue, in.payload, in.dedup, in.delayed)
	case hDequeue:
		fmt.Fprintf(&b, ", queue %q", in.queue)
	case hAck, hNackPerm, hNackTrans, hExtend:
		fmt.Fprintf(&b, ", lease %v", in.lease)
	}
	b.WriteString(") -> ")
	switch {
	case out.err != "":
		b.WriteString(out.err)
	case in.kind == hDequeue:
		fmt.Fprintf(&b, "lease %v attempt %d queue %q payload %q", out.lease, out.attempt, out.queue, out.payload)
	case in.kind == hGet:
		fmt.Fprintf(&b, "%v queue %q attempts %d payload %q dedup %q cat %v", out.state, out.queue, out.attempt, out.payload, out.dedup, out.category)
	default:
		b.WriteString("ok")
	}
	return b.String()
}

// historyModel is the model, partitioned by message ID.
func historyModel() porcupine.Model {
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[ringwal.ID][]porcupine.Operation{}
			for _, op := range h {
				id := op.Input.(hIn).id
				by[id] = append(by[id], op)
			}
			ids := make([]ringwal.ID, 0, len(by))
			for id := range by {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			out := make([][]porcupine.Operation, len(ids))
			for i, id := range ids {
				out[i] = by[id]
			}
			return out
		},
		Init: func() any { return hState{} },
		Step: func(state, input, output any) (bool, any) {
			return historyStep(state.(hState), input.(hIn), output.(hOut))
		},
		DescribeOperation: describeHistoryOp,
		DescribeState:     func(state any) string { return state.(hState).String() },
	}
}
