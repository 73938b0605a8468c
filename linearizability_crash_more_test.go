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
	"time"

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
