package prom

import "unicode/utf8"

// counterSet is a series' counters (a queue's or a schedule's totals).
type counterSet[T any] interface {
	comparable
	plus(T) T
	below(T) bool // any counter below the other's: the name was ended and begun again
}

// capped chooses which names (queues, schedules) have series of their
// own. The choice sticks, so that every series' counters only grow: a
// name gets its own series when the collector first sees it and fewer
// than capacity have one, and keeps it until it is gone (its place is
// then free for a name seen later). A name first seen when every place
// is taken is summed under the "_other" label for as long as it lives,
// even once places free up, and when it goes (or goes and comes back,
// which shows as counters going back) its last totals stay in "_other",
// so that "_other"'s counters never go back either. A name with its own
// series that goes and comes back between two scrapes shows the same way;
// its series then adds what it had counted (base), so that it never goes
// back either. The caller holds its collector's lock from before the
// engine call that listed the names, so that scrapes are taken in turn.
type capped[T counterSet[T]] struct {
	own      map[string]ownSeries[T] // names with series of their own
	folded   map[string]T            // names under _other, by their totals at the last scrape
	retired  T                       // totals of the folded names gone
	present  map[string]bool         // scratch: the names of this scrape
	capacity int
	reserved []string // labels no name may take (_other, _default)
}

func newCapped[T counterSet[T]](capacity int, reserved ...string) capped[T] {
	return capped[T]{own: map[string]ownSeries[T]{}, folded: map[string]T{}, present: map[string]bool{},
		capacity: capacity, reserved: reserved}
}

// ownSeries is a name's own series: its totals at the last scrape, and
// what it counted before it went and came back (added to what it counts).
type ownSeries[T any] struct{ last, base T }

// begin starts a scrape of names: the series of names gone end, and
// their places are free; the folded ones' last totals are retired. It
// returns _other's totals so far.
func (c *capped[T]) begin(names []string) T {
	clear(c.present)
	for _, name := range names {
		c.present[name] = true
	}
	for name := range c.own {
		if !c.present[name] {
			delete(c.own, name)
		}
	}
	for name, last := range c.folded {
		if !c.present[name] {
			c.retired = c.retired.plus(last)
			delete(c.folded, name)
		}
	}
	return c.retired
}

// place says whether name, whose totals are t, has a series of its own
// this scrape, and returns the totals to export under its own label, or
// what to add to _other's for it.
func (c *capped[T]) place(name string, t T) (own bool, totals T) {
	if s, ok := c.own[name]; ok {
		if t.below(s.last) {
			s.base = s.base.plus(s.last) // gone and back since the last scrape
		}
		s.last = t
		c.own[name] = s
		return true, t.plus(s.base)
	}
	if c.adopt(name) {
		c.own[name] = ownSeries[T]{last: t}
		return true, t
	}
	var toOther T
	if last, ok := c.folded[name]; ok && t.below(last) {
		c.retired = c.retired.plus(last) // gone and back since the last scrape
		toOther = last
	}
	c.folded[name] = t
	return false, toOther.plus(t)
}

// adopt reports whether a name not seen before gets a series of its own:
// a place is free and its name makes a label that cannot be mistaken for
// another (the engine only gives out UTF-8 names not starting with "_";
// the check guards the collector against a change there).
func (c *capped[T]) adopt(name string) bool {
	if _, seen := c.folded[name]; seen {
		return false
	}
	if len(c.own) >= c.capacity || !utf8.ValidString(name) {
		return false
	}
	for _, r := range c.reserved {
		if name == r {
			return false
		}
	}
	return true
}

// anyRetired reports whether _other keeps totals of names gone.
func (c *capped[T]) anyRetired() bool {
	var zero T
	return c.retired != zero
}
