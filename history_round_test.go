package ringwal_test

// The history test's rounds: an engine opened in a fresh directory (or
// memory-only), phases of workers beside a checkpointer, waited for with
// a bound (history_stall_test.go).

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

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
