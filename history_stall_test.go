package ringwal_test

// The history tests wait for their workers, their checkpointer and Close
// with a bound: a stall (a DequeueBatch waiting for ever on a lease it
// holds, an EnqueueBatch spinning on its own DedupID's entry, a Stats or
// Checkpoint behind either) is reported as a failure of the round, with
// the goroutines' stacks, instead of hanging the suite. The bound is on
// progress, not on time taken: the round fails once no operation has
// started or returned for historyStall, however slow the machine.

import (
	"os"
	"runtime"
	"strings"
	"time"
)

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
