package wal

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// The power-loss test: a workload's file-system steps are recorded
// (ioTrace), then many disk images a power loss at a step could leave are
// built (powerloss_model_internal_test.go) and opened with the default
// recovery mode. Each must open, replay, and hold every fact that was
// durable at that step: in Fsync mode every record whose Append had
// returned; in Write mode those acknowledged before the last Sync or
// Checkpoint that had returned.

// opMark is a test-only event: ev.off's fact became durable (ev.to says
// which: "enq" or "ack").
const opMark ioOp = 200

// Fact states, replayed and required.
const (
	stEnq   = 1
	stLease = 2
	stAck   = 3
)

func (rc *recorder) mark(fact string, id uint64) {
	rc.mu.Lock()
	rc.evs = append(rc.evs, ioEvent{op: opMark, path: rc.root, to: fact, off: int64(id)})
	rc.mu.Unlock()
}

// powerLossWorkload runs enqueue-, lease- and ack-like records from three
// producers through a log in mode, over several 16 KiB segments, with a
// checkpoint half way; some enqueues carry 5 KB payloads that compress
// (s2) and hold a whole log entry. It returns the model of the directory
// before the run and the events of the run.
func powerLossWorkload(t *testing.T, mode Mode, perWorker int) (*model, []ioEvent) {
	root := t.TempDir()
	l, err := Open(filepath.Join(root, "data"), Options{Mode: mode, SegmentSize: 16 << 10})
	require.NoError(t, err)
	_, err = l.Replay(func(*Record) error { return nil })
	require.NoError(t, err)
	rc := record(t, root)
	m := newModel(t, root)

	embedded, _, _ := finishBatch(AppendRecord(make([]byte, batchHeaderSize), &Record{Kind: KindEnqueue, ID: 1 << 40, Payload: []byte("inner")}), 1, -1, nil, 1<<40)
	big := append(append(bytes.Repeat([]byte("qwertyuiop"), 250), appendUvarint(nil, uint64(len(embedded)))...), embedded...)
	big = append(big, bytes.Repeat([]byte("asdfghjkl"), 250)...)

	var mu sync.Mutex
	state := map[uint64]uint8{}
	var unsynced []string // Write mode: facts acknowledged, not yet known fsynced
	var next atomic.Uint64
	// barrier marks durable what was acknowledged before call ran
	// (Write mode: a Sync or a Checkpoint fsyncs the log first).
	barrier := func(call func() error) {
		mu.Lock()
		facts := append([]string(nil), unsynced...)
		unsynced = unsynced[:0]
		mu.Unlock()
		require.NoError(t, call())
		for _, f := range facts {
			var kind string
			var id uint64
			fmt.Sscanf(f, "%s %d", &kind, &id)
			rc.mark(kind, id)
		}
	}
	acked := func(kind string, id uint64) {
		if mode == Fsync {
			rc.mark(kind, id)
			return
		}
		mu.Lock()
		unsynced = append(unsynced, fmt.Sprintf("%s %d", kind, id))
		mu.Unlock()
	}
	checkpoint := func() error {
		_, err := l.Checkpoint(func(emit func(*Record) error) error {
			mu.Lock()
			defer mu.Unlock()
			for id, st := range state {
				var err error
				switch st {
				case stEnq, stLease:
					err = emit(&Record{Kind: KindEnqueue, ID: id})
				case stAck:
					err = emit(&Record{Kind: KindAck, ID: id}) // a tombstone, so the test can tell acked from lost
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		return err
	}
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for i := 0; i < perWorker; i++ {
				id := next.Add(1)
				r := Record{Kind: KindEnqueue, ID: id, Key: "k", Payload: make([]byte, 40+rng.IntN(200))}
				if id%15 == 0 {
					r.Payload = big
				}
				mu.Lock()
				state[id] = stEnq
				mu.Unlock()
				require.NoError(t, l.Append(&r))
				acked("enq", id)
				mu.Lock()
				state[id] = stLease
				mu.Unlock()
				require.NoError(t, l.AppendNoWait(&Record{Kind: KindLease, ID: id, Attempt: 1, Until: 5}))
				if rng.IntN(3) > 0 {
					mu.Lock()
					state[id] = stAck
					mu.Unlock()
					require.NoError(t, l.Append(&Record{Kind: KindAck, ID: id}))
					acked("ack", id)
				}
				if mode == Write && i%25 == 24 {
					barrier(l.Sync)
				}
				if w == 0 && i == perWorker/2 {
					barrier(checkpoint)
				}
			}
		}()
	}
	wg.Wait()
	barrier(l.Close)
	evs := rc.events()
	ioTrace.Store(nil)
	return m, evs
}

// powerLossFigures are what the test reports.
type powerLossFigures struct {
	images, checked, lost, openFailures, cuts int
	classes                                   map[string]int
}

// checkPowerLossImages replays evs into m, and at up to points crash
// points builds an image of every lossKind (and extra random ones), opens
// each with the default recovery mode and checks the required facts.
func checkPowerLossImages(t *testing.T, m *model, evs []ioEvent, points int, seed uint64) powerLossFigures {
	fig := powerLossFigures{classes: map[string]int{}}
	rng := rand.New(rand.NewPCG(seed, 1))
	var steps []int // crash points: after event i (a file-system step)
	for i, ev := range evs {
		if ev.op != opMark {
			steps = append(steps, i)
		}
	}
	chosen := map[int]bool{}
	for k := 0; k < points && k < len(steps); k++ {
		chosen[steps[k*len(steps)/min(points, len(steps))]] = true
		chosen[steps[rng.IntN(len(steps))]] = true
	}
	required := map[uint64]uint8{}
	img := filepath.Join(t.TempDir(), "img")
	for i, ev := range evs {
		if ev.op == opMark {
			st := uint8(stEnq)
			if ev.to == "ack" {
				st = stAck
			}
			required[uint64(ev.off)] = max(required[uint64(ev.off)], st)
			continue
		}
		m.apply(t, ev)
		if !chosen[i] {
			continue
		}
		for kind := lossKind(0); kind < lossKinds+2; kind++ {
			k := kind
			if k >= lossKinds {
				k = lossKind(rng.IntN(int(lossKinds)))
			}
			m.image(t, img, k, rng)
			fig.images++
			what := fmt.Sprintf("crash after step %d (%s %s), %s image", i, ev.op, filepath.Base(ev.path), k)
			l, err := Open(filepath.Join(img, "data"), Options{})
			if err != nil {
				fig.openFailures++
				t.Errorf("%s: Open: %v", what, err)
				continue
			}
			got := map[uint64]uint8{}
			_, err = l.Replay(func(r *Record) error {
				switch r.Kind {
				case KindEnqueue:
					got[r.ID] = max(got[r.ID], stEnq)
				case KindLease:
					got[r.ID] = max(got[r.ID], stLease)
				case KindAck:
					got[r.ID] = stAck
				}
				return nil
			})
			if err != nil {
				fig.openFailures++
				t.Errorf("%s: Replay: %v", what, err)
				l.Close()
				continue
			}
			for id, st := range required {
				fig.checked++
				if (st == stAck && got[id] != stAck) || got[id] == 0 {
					fig.lost++
					if fig.lost <= 5 {
						t.Errorf("%s: fact %d (state %d) lost: replayed state %d; repair: %s", what, id, st, got[id], l.Repair())
					}
				}
			}
			if rep := l.Repair(); rep.Bytes > 0 {
				fig.cuts++
				fig.classes[rep.Class]++
				require.NotEmpty(t, rep.String(), what)
				require.NotEmpty(t, rep.BrokenFiles, "%s: the cut bytes are kept", what)
			}
			require.NoError(t, l.Close(), what)
		}
	}
	return fig
}

func TestPowerLossImages(t *testing.T) {
	// CI sizes: about 350 images per mode.
	perWorker, points := 100, 30
	if testing.Short() {
		perWorker, points = 50, 12
	}
	for _, mode := range []Mode{Fsync, Write} {
		t.Run(mode.String(), func(t *testing.T) {
			m, evs := powerLossWorkload(t, mode, perWorker)
			ops := map[ioOp]int{}
			for _, ev := range evs {
				ops[ev.op]++
			}
			require.Positive(t, ops[opRename], "the run checkpointed")
			fig := checkPowerLossImages(t, m, evs, points, uint64(mode)+7)
			classes := make([]string, 0, len(fig.classes))
			for c, n := range fig.classes {
				classes = append(classes, fmt.Sprintf("%s: %d", c, n))
			}
			sort.Strings(classes)
			t.Logf("%s mode: %d steps recorded, %d images, %d facts checked, %d lost, %d open failures, %d images cut (%v)",
				mode, len(evs), fig.images, fig.checked, fig.lost, fig.openFailures, fig.cuts, classes)
			require.Zero(t, fig.lost)
			require.Zero(t, fig.openFailures)
			require.Positive(t, fig.cuts, "some images needed a cut")
		})
	}
}
