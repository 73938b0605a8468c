// Package ring owns ringwal's lock-free hot path: Ring, a bounded
// multi-producer multi-consumer queue (Dmitry Vyukov's design, per-slot
// sequence numbers, power-of-two capacity), and Tiers, the five rings that
// hold pending messages by priority.
//
// It owns storage and hand-off only. Which tier to pop next (weights, aging,
// deadlines) belongs to package sched; what the values mean belongs to the
// engine. Nothing here blocks, locks or allocates after construction:
// callers that want to wait spin, park or select on their own signal.
package ring
