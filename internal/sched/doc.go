// Package sched owns ringwal's notion of "when" and "which next":
//
//   - Wheel (wheel.go): a hierarchical timing wheel for delays, retries,
//     lease expiries and TTLs. Tick configurable (DefaultTick 1ms), enough
//     64-slot levels to cover at least 30 days (MinHorizon), an overflow list
//     for anything later, O(1) Add, and Advance that hands out every due
//     entry, never early and at most one tick late.
//   - Timers (timers.go): a self-contained owner goroutine for a Wheel,
//     fed by producers through a lock-free MPSC ring (package ring) of
//     32-byte, pointer-free requests (DefaultTimerCapacity 4096, 128 KiB),
//     sleeping on the clock.Clock so tests drive it with a fake clock. A
//     push that leaves the ring half full wakes the owner; a producer that
//     finds it full puts its entry on a locked spill list (Spilled counts
//     them) and never waits. The engine's housekeeper is a Timers whose
//     fire callback does what each entry asks.
//   - DeadlineHeap (heap.go): a min-heap on deadline with lazy deletion and
//     an atomic count, for earliest-deadline-first dispatch.
//   - Picker (picker.go): which priority tier to pop next: Weighted (smooth
//     weighted round-robin, default weights 16:8:4:2:1 Critical to
//     Background) or Strict, both with aging. Lock-free, allocation-free.
//   - Scheduler (scheduler.go): Picker plus DeadlineHeap: a deadline within
//     DeadlineSlack goes first; with no deadline pending, no lock is taken.
//
// It does not own the messages, the tiers' storage (ring.Tiers), the
// records' generations or what an Entry means: the engine interprets
// entries and decides staleness. Cancellation is lazy everywhere: an Entry
// carries the generation of its record at scheduling time, and a stale
// entry is dropped when it surfaces (the engine's fire callback checks it;
// DeadlineHeap.PopIf, Scheduler.Next and the Compact sweeps of Wheel and
// DeadlineHeap take a valid or live func). Nothing here
// reads the wall clock by itself: time-based pieces take a clock.Clock or
// an explicit now.
//
// # Starvation bound
//
// Let A be AgingAfter, T the number of tiers (NumTiers = 5) and R the pick
// rate (calls of Next per second, so one pick takes 1/R). A tier b is aged
// once it is non-empty and A has passed since it was last Served (or since
// the Picker's first pick, if never). Every pick serves an aged tier if
// there is one, the longest unserved first (ties: the higher tier), and
// Served makes that tier young again. Only tiers last served no later than
// b can be ahead of b, and each of them, once served, drops behind it; so
// b is served within k picks of becoming aged, where k <= T is the number
// of non-empty tiers (b included) last served no later than b.
//
// For the message at the head of tier b, which arrived at time t0, the
// tier was last served at or before t0, hence its worst wait W is
//
//	W < A + k/R <= A + T/R
//
// and under a saturating load on Critical alone (Critical, served all the
// time, is never aged; k = 1) a Background message waits less than A plus
// one pick: W < A + 1/R. A message with n messages ahead of it in its tier
// waits at most (n+1) times that. Deadline picks (Scheduler) are served
// before aged tiers, so each deadline pick taken in the meantime adds 1/R.
// With several consumers racing, the bound holds per pick stream; two
// consumers may both pick the same aged tier, which only serves it sooner.
//
// TestStarvationBound checks W < A + 1/R under a saturating Critical load
// for both policies and W < A + T/R with every tier backlogged.
//
// Exported surface: everything here (Wheel, Timers, Picker, Scheduler,
// DeadlineHeap, their options and defaults) exists for the root package,
// which is another package and so can only use exported names; the
// defaults (DefaultAgingAfter, DefaultDeadlineSlack, DefaultWeights) are
// the values the root's Options document. Applications do not need this
// package.
package sched
