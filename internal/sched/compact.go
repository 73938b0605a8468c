package sched

// Compact removes every pending entry for which live returns false and
// returns how many it removed. Lazy cancellation leaves stale entries in
// the wheel until they surface; an owner whose entries are mostly
// cancelled long before they are due (leases acked in microseconds, timed
// out after 30 s) calls Compact now and then so that the wheel's size
// follows the live entries rather than the rate of scheduling.
//
// O(pending entries). Entries keep their order within each bucket. Not
// safe for concurrent use (see Wheel).
func (w *Wheel) Compact(live func(Entry) bool) int {
	removed := 0
	filter := func(l *list) bool {
		var kept list
		for i := l.head; i != 0; {
			nd := w.node(i)
			next := nd.next
			if live(nd.e) {
				w.push(&kept, i)
			} else {
				w.release(i)
				w.n--
				removed++
			}
			i = next
		}
		*l = kept
		return kept.head != 0
	}
	for level := 0; level < w.levels; level++ {
		for slot := 0; slot < wheelSlots; slot++ {
			if w.occupied[level]&(1<<slot) == 0 {
				continue
			}
			if !filter(&w.slots[level][slot]) {
				w.occupied[level] &^= 1 << slot
			}
		}
	}
	filter(&w.overflow)
	filter(&w.ready)
	return removed
}
