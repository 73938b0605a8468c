package ringwal_test

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

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ringwal/ringwal"
)

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
