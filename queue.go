package ringwal

import (
	"sync/atomic"

	"github.com/ringwal/ringwal/ring"
	"github.com/ringwal/ringwal/sched"
)

// A queue's delivery machinery: what a consumer of that queue takes from
// and sleeps on. Each queue owns its tier rings (one per priority), their
// spill queues, its scheduler (weighted or strict picks with aging, and
// the deadline heap) and its sleeping consumers. Everything else (the log,
// the slab, keys and breakers, dedup, dead letters, the housekeeper) is
// the engine's, shared by every queue.
//
// The default queue's is embedded in the Engine (rt0), so that its hot
// path reaches it with no load more than before queues existed.
type qrun struct {
	tiers   *ring.Tiers[ref]
	spill   [ring.NumTiers]spillQueue
	spilled atomic.Uint32 // bit i: spill[i] is not empty
	sched   *sched.Scheduler
	ready   sleepers // consumers waiting for a message of this queue
}

// init sets up rt with rings of tierCap and a scheduler of so.
func (rt *qrun) init(tierCap [ring.NumTiers]int, so sched.SchedulerOptions) {
	rt.tiers = ring.NewTiers[ref](tierCap)
	rt.sched = sched.NewScheduler(so)
	rt.ready.init()
}

// runOf returns the delivery machinery of r's queue. The caller owns r.
func (e *Engine) runOf(*rec) *qrun { return &e.rt0 }

// eachRun calls fn with every queue's delivery machinery.
func (e *Engine) eachRun(fn func(*qrun)) { fn(&e.rt0) }

// signalAllReady wakes a sleeping consumer of every queue (a pause of all
// delivery ended, restore placed a backlog).
func (e *Engine) signalAllReady() { e.eachRun(func(rt *qrun) { rt.ready.signal() }) }
