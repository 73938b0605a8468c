package ringwal_test

// The history test's checks of a finished run: DedupID answers, Stats
// under load, and linearizability (with what to print when it fails).

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ringwal/ringwal"
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
// a moment, counted in both states).
func (h *historyRun) checkStats() {
	failed := 0
	defer func() {
		if failed > 10 {
			h.t.Errorf("seed %d: %d more Stats calls out of bounds", h.seed, failed-10)
		}
	}()
	for _, s := range h.stats {
		ph := h.phases[s.phase]
		var overlap, created, createdBefore, removed, dequeued, settled, nacked, redriven int
		count := func(call, ret int64) bool {
			if call < ph.from || call > ph.to {
				return false
			}
			if call <= s.ret && ret >= s.call {
				overlap++
			}
			return true
		}
		for _, e := range h.empty {
			count(e[0], e[1])
		}
		for _, op := range h.ops {
			if !count(op.Call, op.Return) {
				continue
			}
			in, out := op.Input.(hIn), op.Output.(hOut)
			begun := op.Call < s.ret
			switch in.kind {
			case hEnqueue, hEnqueueMaybe:
				if out.err == "" && begun {
					created++
					if op.Return < s.call && in.kind == hEnqueue {
						createdBefore++
					}
				}
			case hDequeue:
				if begun {
					dequeued++
				}
			case hAck, hNackPerm, hNackTrans:
				if out.err == "" && op.Return < s.call {
					settled++
				}
				if begun && in.kind == hAck {
					removed++
				}
				if begun && in.kind != hAck {
					nacked++
				}
			case hCancel:
				if begun {
					removed++
				}
			case hRedrive:
				if begun {
					redriven++
				}
			}
		}
		c := s.c
		total := c.Pending + c.Delayed + c.Leased + c.Held + c.Dead
		bad := []string{}
		check := func(ok bool, what string, args ...any) {
			if !ok {
				bad = append(bad, fmt.Sprintf(what, args...))
			}
		}
		check(c.Pending >= 0 && c.Delayed >= 0 && c.Leased >= 0 && c.Dead >= 0, "a negative count")
		check(c.Held == 0, "Held %d, but no breaker trips", c.Held)
		check(total <= ph.total+created+overlap, "total %d > %d at the phase's start + %d enqueued + %d overlapping", total, ph.total, created, overlap)
		check(total >= ph.total+createdBefore-removed-overlap, "total %d < %d at the phase's start + %d enqueued before - %d acks and cancels - %d overlapping",
			total, ph.total, createdBefore, removed, overlap)
		check(c.Leased <= dequeued-settled+overlap, "Leased %d > %d dequeued - %d settled + %d overlapping", c.Leased, dequeued, settled, overlap)
		check(c.Dead <= ph.dead+nacked+overlap, "Dead %d > %d at the phase's start + %d nacks + %d overlapping", c.Dead, ph.dead, nacked, overlap)
		check(c.Dead >= ph.dead-redriven-overlap, "Dead %d < %d at the phase's start - %d redrives - %d overlapping", c.Dead, ph.dead, redriven, overlap)
		if len(bad) > 0 {
			if failed++; failed > 10 {
				continue
			}
			h.t.Errorf("seed %d, phase %d: Stats %+v (called at %d, returned at %d): %s", h.seed, s.phase, c, s.call, s.ret, strings.Join(bad, "; "))
		}
	}
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
		fmt.Fprintf(&b, "\nmessage %d has no linearization; its operations by call (client [call, return]), ==> at the first that no order explains:",
			part[0].Input.(hIn).id)
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
	if d, err := os.MkdirTemp("", "ringwal-history-dir-*"); err == nil && h.e.Close() == nil {
		if err := os.CopyFS(d, os.DirFS(h.dir)); err == nil {
			kept = d
		}
	}
	h.t.Errorf("seed %d (rerun with RINGWAL_HISTORY_SEED=%d): the history is not linearizable; visualization: %s; data directory kept at %s%s",
		h.seed, h.seed, viz, kept, b.String())
}
