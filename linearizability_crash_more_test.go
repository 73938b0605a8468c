package ringwal_test

// What TestHistorySurvivesCrash's child does besides the history's plain
// verbs: batches of up to 16 (DequeueBatch) beside messages whose
// Deadlines are inside Options.DeadlineSlack; EnqueueBatches repeating a
// fresh unique DedupID (UniqueQueued or UniqueLive, some with Replace);
// schedules added and removed and queues declared and deleted while a
// checkpointer runs. The parent checks, after the kill, that the child
// kept moving up to it (a heartbeat: Stats returns and every worker made
// a call since the last one), that a unique message live after the crash
// still refuses a repeat of its DedupID with its ID, and that Schedules
// and Queues are what the acknowledged calls (and the one in flight)
// allow. Lines (each name is one worker's, so its lines are in call
// order; "?" as for messages):
//
//	H                      a heartbeat
//	SA name payload        AddSchedule(name) returned nil, its message's payload that
//	SR name                RemoveSchedule(name) returned nil
//	QD name                DeclareQueue(name) returned nil
//	QX name                DeleteQueue(name) returned nil
//	Y name                 the call had no effect (ErrNotFound)

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// historyChildMore is the child's state for these verbs.
type historyChildMore struct {
	progress [historyWorkers]atomic.Int64 // calls made, by worker
}

// took checks a delivery of queue q and reports a Publish copy (L).
func (c *historyChild) took(q string, d ringwal.Delivery) {
	if d.Message.Queue != q {
		childFail("a dequeue of queue %q returned ID %d of queue %q", q, d.ID, d.Message.Queue)
	}
	if strings.HasPrefix(string(d.Message.Payload), historyPublished) {
		childEmit("L %d %s %s", d.ID, dash(q), d.Message.Payload)
	}
}

// dequeueBatch is DequeueBatch of up to max from queue q, for a moment.
func (c *historyChild) dequeueBatch(q string, max int) []ringwal.Delivery {
	ctx, cancel := context.WithTimeout(ctxBG, 2*time.Millisecond)
	defer cancel()
	var ds []ringwal.Delivery
	if q == "" {
		ds, _ = c.e.DequeueBatch(ctx, max)
	} else {
		ds, _ = c.e.Queue(q).DequeueBatch(ctx, max)
	}
	for _, d := range ds {
		c.took(q, d)
	}
	return ds
}

// childDeadline gives m, one time in three, a Deadline inside the
// history options' DeadlineSlack (or soon inside it).
func childDeadline(rng *rand.Rand, m *ringwal.Message) {
	if rng.IntN(3) == 0 {
		m.Deadline = time.Now().Add(time.Duration(1+rng.IntN(90)) * time.Second)
	}
}

// childUnique names a unique DedupID's mode by its prefix: "uq." under
// UniqueQueued, "ul." under UniqueLive (the window's fresh ones are
// "u<digit>...").
func childUnique(dedup string) ringwal.Unique {
	switch {
	case strings.HasPrefix(dedup, "uq."):
		return ringwal.UniqueQueued
	case strings.HasPrefix(dedup, "ul."):
		return ringwal.UniqueLive
	}
	return ringwal.UniqueWindow
}

// uniqueBatch sends an EnqueueBatch of 2 to 4 messages under one fresh
// unique DedupID (each into a queue of its own: a repeat names the first,
// which stays in its queue), a plain one among them sometimes. The first
// is new; each repeat gets its ID and, without Replace, makes the error
// wrap ErrDuplicate; with Replace it gives the first its payload. It
// reports the first (E, with the payload it ends with) and each refused
// repeat (D).
func (c *historyChild) uniqueBatch(ctx context.Context, g, n int, rng *rand.Rand) {
	dedup := fmt.Sprintf("uq.%d-%d", g, n)
	u := ringwal.UniqueQueued
	if rng.IntN(2) == 0 {
		dedup, u = fmt.Sprintf("ul.%d-%d", g, n), ringwal.UniqueLive
	}
	var ms []ringwal.Message
	plain := -1
	for i, k := 0, 2+rng.IntN(3); i < k; i++ {
		m := ringwal.Message{Payload: []byte(fmt.Sprintf("c%d-%d-%d", g, n, i)), DedupID: dedup, Unique: u,
			Replace: i > 0 && rng.IntN(2) == 0, Queue: historyQueue(rng)}
		childDeadline(rng, &m)
		ms = append(ms, m)
		if plain < 0 && rng.IntN(4) == 0 {
			plain = len(ms)
			ms = append(ms, ringwal.Message{Payload: []byte(fmt.Sprintf("c%d-%d-p", g, n)), Queue: historyQueue(rng)})
		}
	}
	ids, err := c.e.EnqueueBatch(ctx, ms)
	refused, final := 0, string(ms[0].Payload)
	for i, m := range ms[1:] {
		if i+1 == plain {
			continue
		}
		if m.Replace {
			final = string(m.Payload)
		} else {
			refused++
		}
	}
	if dup := errors.Is(err, ringwal.ErrDuplicate); (err != nil && !dup) || dup != (refused > 0) || len(ids) != len(ms) {
		childFail("unique batch %s of %d with %d refused repeats: %v, %v", dedup, len(ms), refused, ids, err)
	}
	for i := range ms {
		if i != plain && ids[i] != ids[0] {
			childFail("unique batch %s: message %d got ID %d, the first %d", dedup, i, ids[i], ids[0])
		}
	}
	childEmit("E %d %s %s %s", ids[0], dedup, final, dash(ms[0].Queue))
	c.known(ids[0], "")
	for ; refused > 0; refused-- {
		childEmit("D %d %s", ids[0], dedup)
	}
	if plain >= 0 {
		c.enqueuedIn(ids[plain], ms[plain], ms[plain].Queue, 0, nil, false)
	}
}

// adminOp adds or removes one of worker g's schedules, or declares or
// deletes one of its queues, and reports it.
func (c *historyChild) adminOp(g int, rng *rand.Rand, n int) {
	k := rng.IntN(historyNames)
	add := rng.IntN(3) != 0
	var line string
	var call func() error
	if rng.IntN(2) == 0 {
		name := fmt.Sprintf("c%d-%d", g, k)
		payload := fmt.Sprintf("s%d-%d", g, n)
		line, call = "SR "+name, func() error { return c.e.RemoveSchedule(name) }
		if add {
			line, call = fmt.Sprintf("SA %s %s", name, payload), func() error {
				return c.e.AddSchedule(ringwal.Schedule{Name: name, Spec: historySpec,
					Message: ringwal.Message{Payload: []byte(payload), Queue: historyQueue(rng)}})
			}
		}
	} else {
		name := fmt.Sprintf("%sc%d-%d", historyTmpQueue, g, k)
		line, call = "QX "+name, func() error { return c.e.DeleteQueue(name) }
		if add {
			line, call = "QD "+name, func() error { return c.e.DeclareQueue(name, ringwal.QueueOptions{}) }
		}
	}
	childEmit("? %s", line)
	switch err := call(); {
	case err == nil:
		childEmit("%s", line)
	case !add && errors.Is(err, ringwal.ErrNotFound):
		childEmit("Y %s", strings.Fields(line)[1])
	default:
		childFail("%s: %v", line, err)
	}
}

// heartbeat writes H every few milliseconds once Stats has returned and
// every worker has made a call since the last H.
func (c *historyChild) heartbeat(ctx context.Context) {
	var last [historyWorkers]int64
	for ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
		_ = c.e.Stats()
		moved := true
		for g := range last {
			moved = moved && c.progress[g].Load() != last[g]
		}
		if moved {
			for g := range last {
				last[g] = c.progress[g].Load()
			}
			childEmit("H")
		}
	}
}

// checkpointer checkpoints over and over until ctx ends.
func (c *historyChild) checkpointer(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := c.e.Checkpoint(); err != nil && ctx.Err() == nil {
				childFail("checkpoint: %v", err)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
}

// historyCrashMore is what the parent reads of these lines.
type historyCrashMore struct {
	beats atomic.Int64
	admin map[string][]string // a name's lines, in order
}

// parseMore reads a heartbeat or an admin line (f: its fields); it
// reports whether it was one.
func (r *historyCrashReport) parseMore(f []string) bool {
	g := f
	if len(g) > 0 && g[0] == "?" {
		g = g[1:]
	}
	switch {
	case len(f) == 1 && f[0] == "H":
		r.beats.Add(1)
	case len(g) >= 2 && (g[0] == "SA" || g[0] == "SR" || g[0] == "QD" || g[0] == "QX" || g[0] == "Y"):
		if r.admin == nil {
			r.admin = map[string][]string{}
		}
		r.admin[g[1]] = append(r.admin[g[1]], strings.Join(f, " "))
	default:
		return false
	}
	return true
}

// awaitBeat waits for a heartbeat after now, for historyStall at most: a
// child that stopped moving (a DequeueBatch or EnqueueBatch waiting for
// ever, a Stats behind it) fails the round.
func (r *historyCrashReport) awaitBeat(fail func(string, ...any)) {
	from, since := r.beats.Load(), time.Now()
	for r.beats.Load() == from {
		if time.Since(since) > historyStall {
			fail("the child stopped moving: no heartbeat (a Stats returned and every worker made a call) for %v", historyStall)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// allowedAdmin is the states ("" absent; "s:<payload>" a schedule with
// that message; "q" a declared queue) the acknowledged calls on one name
// allow: the last one's, or the one in flight's.
func allowedAdmin(events []string) map[string]bool {
	step := func(s, line string) string {
		f := strings.Fields(line)
		switch f[0] {
		case "SA":
			return "s:" + f[2]
		case "QD":
			return "q"
		case "SR", "QX":
			return ""
		}
		return s
	}
	s, inflight := "", ""
	for _, ev := range events {
		switch {
		case strings.HasPrefix(ev, "? "):
			inflight = ev[2:]
		case strings.HasPrefix(ev, "Y "):
			inflight = ""
		default:
			inflight, s = "", step(s, ev)
		}
	}
	out := map[string]bool{s: true}
	if inflight != "" {
		out[step(s, inflight)] = true
	}
	return out
}

// checkAdmin: after the crash every schedule and every worker's queue
// is in a state the acknowledged calls allow.
func (r *historyCrashReport) checkAdmin(e *ringwal.Engine, fail func(string, ...any)) int {
	got := map[string]string{}
	for _, s := range e.Schedules() {
		got[s.Name] = "s:" + string(s.Message.Payload)
	}
	for _, q := range e.Queues() {
		if strings.HasPrefix(q.Name, historyTmpQueue) {
			got[q.Name] = "q"
		}
	}
	names := map[string]bool{}
	for n := range got {
		names[n] = true
	}
	for n := range r.admin {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		if allowed := allowedAdmin(r.admin[n]); !allowed[got[n]] {
			fail("%q is %q after the crash; the acknowledged calls allow %v; the child reported %q", n, got[n], allowed, r.admin[n])
		}
	}
	return len(sorted)
}

// checkUnique: a unique message live after the crash refuses a repeat of
// its DedupID (in its mode) with its ID; it returns how many it tried.
func (r *historyCrashReport) checkUnique(e *ringwal.Engine, got map[ringwal.ID]byte, fail func(string, ...any)) int {
	n := 0
	for id, m := range r.msgs {
		u := childUnique(m.dedup)
		if !m.enqueued || u == ringwal.UniqueWindow || got[id] != 'l' {
			continue
		}
		n++
		again, err := e.TryEnqueue(ringwal.Message{DedupID: m.dedup, Unique: u, Payload: []byte("again")})
		if !errors.Is(err, ringwal.ErrDuplicate) || again != id {
			fail("a %v repeat of DedupID %s (ID %d, live) after the crash: %d, %v", u, m.dedup, id, again, err)
		}
	}
	return n
}

// TestHistorySurvivesCrash's queues: the child enqueues into and dequeues
// from the history tests' queues and publishes to their topic; after the
// crash the parent checks that every message is in its own queue, that a
// publish kept all its copies or none, and that each queue delivers only
// its own messages.

// historyPublished marks a Publish copy's payload.
const historyPublished = "t"

// tryDequeue is TryDequeue of queue q (the engine's for the default
// queue, the handle's otherwise); a message of another queue fails the
// child, and a Publish copy is reported (L) before anything settles it.
func (c *historyChild) tryDequeue(q string) (ringwal.Delivery, bool) {
	var d ringwal.Delivery
	var ok bool
	if q == "" {
		d, ok = c.e.TryDequeue()
	} else {
		d, ok = c.e.Queue(q).TryDequeue()
	}
	if !ok {
		return d, false
	}
	c.took(q, d)
	return d, true
}

// publish publishes a message to historyTopic and reports each copy
// (an E line in its queue) once Publish returned.
func (c *historyChild) publish(ctx context.Context, name string) {
	m := ringwal.Message{Payload: []byte(historyPublished + name)}
	ids, err := c.e.Publish(ctx, historyTopic, m)
	if err != nil || len(ids) != len(historyTopicQueues) {
		childFail("publish %s: %v, %v", m.Payload, ids, err)
	}
	for i, q := range historyTopicQueues {
		c.enqueuedIn(ids[i], m, q, 0, nil, false)
	}
}

func undash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// copyOf notes that id is a copy of the Publish of payload in queue q.
func (r *historyCrashReport) copyOf(id ringwal.ID, payload, q string) {
	if !strings.HasPrefix(payload, historyPublished) {
		return
	}
	byQ := r.copies[payload]
	if byQ == nil {
		byQ = map[string][]ringwal.ID{}
		r.copies[payload] = byQ
	}
	byQ[q] = append(byQ[q], id)
}

// checkCopies checks the Publish copies found after the crash (found:
// every ID Get found): each is in a queue bound to the topic, one per
// queue, and a publish with a copy has one in every bound queue, but for
// a copy the child reported (E or L) whose reported calls allow it to be
// gone (acked or cancelled). A publish the crash cut has no copy. It
// returns how many publishes have copies.
func (r *historyCrashReport) checkCopies(found map[ringwal.ID]ringwal.Info, fail func(string, ...any)) int {
	byPayload := map[string]map[string][]ringwal.ID{}
	for id, info := range found {
		p := string(info.Message.Payload)
		if !strings.HasPrefix(p, historyPublished) {
			continue
		}
		if byPayload[p] == nil {
			byPayload[p] = map[string][]ringwal.ID{}
		}
		byPayload[p][info.Message.Queue] = append(byPayload[p][info.Message.Queue], id)
	}
	bound := map[string]bool{}
	for _, q := range historyTopicQueues {
		bound[q] = true
	}
	payloads := make([]string, 0, len(byPayload))
	for p := range byPayload {
		payloads = append(payloads, p)
	}
	sort.Strings(payloads)
	for _, p := range payloads {
		byQ := byPayload[p]
		for q, ids := range byQ {
			if !bound[q] || len(ids) > 1 {
				fail("the publish %s has copies %v in queue %q after the crash, which takes one copy if bound (bound: %q)",
					p, ids, q, historyTopicQueues)
			}
		}
		for _, q := range historyTopicQueues {
			if len(byQ[q]) > 0 {
				continue
			}
			gone := false
			for _, id := range r.copies[p][q] {
				if m := r.msgs[id]; m != nil && m.allowed()['a'] {
					gone = true
				}
			}
			if !gone {
				fail("the publish %s has copies %v after the crash but none in queue %q, and the child settled none there (reported %v)",
					p, byQ, q, r.copies[p])
			}
		}
	}
	return len(byPayload)
}

// drainQueues leases and acks what every queue delivers until nothing is
// live: each delivery must be a message Get found live after the crash
// (got 'l', then 'x'), of the queue that delivered it. It returns how many
// were delivered.
func drainQueues(t *testing.T, e *ringwal.Engine, got map[ringwal.ID]byte, found map[ringwal.ID]ringwal.Info,
	fail func(string, ...any)) int {
	delivered := 0
	deadline := time.Now().Add(historySettle)
	for {
		more := false
		for _, q := range historyQueues {
			var d ringwal.Delivery
			var ok bool
			if q == "" {
				d, ok = e.TryDequeue()
			} else {
				d, ok = e.Queue(q).TryDequeue()
			}
			if !ok {
				continue
			}
			more = true
			delivered++
			if got[d.ID] != 'l' {
				fail("ID %d delivered after the crash, but Get said %s", d.ID, outcomeNames[got[d.ID]])
			}
			if d.Message.Queue != q || found[d.ID].Message.Queue != q {
				fail("ID %d delivered by queue %q after the crash, but the delivery names queue %q and Get named %q",
					d.ID, q, d.Message.Queue, found[d.ID].Message.Queue)
			}
			got[d.ID] = 'x'
			require.NoError(t, e.Ack(d.Lease))
		}
		if more {
			continue
		}
		if s := e.Stats(); s.Pending+s.Delayed+s.Leased == 0 {
			return delivered
		}
		require.False(t, time.Now().After(deadline), "not drained: %+v by queue %v", counts(e.Stats()), queueCounts(e.Stats()))
		time.Sleep(time.Millisecond)
	}
}
