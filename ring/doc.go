// Package ring owns ringwal's lock-free hot path: Ring, a bounded
// multi-producer multi-consumer queue (Dmitry Vyukov's design, per-slot
// sequence numbers, power-of-two capacity), and Tiers, the five rings that
// hold pending messages by priority.
//
// It owns storage and hand-off only. Which tier to pop next (weights, aging,
// deadlines) belongs to package sched; what the values mean belongs to the
// engine. Nothing here blocks, locks or allocates after construction:
// callers that want to wait spin, park or select on their own signal.
//
// Exported surface: Ring and New are the contract's queue (DESIGN.md),
// public so that benchmarks outside the engine (bench/, peers) measure the
// ring the engine uses; Tiers, NewTiers and NumTiers are the engine's five
// rings by priority, exported because the engine is another package.
// Applications do not need this package.
package ring
