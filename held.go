package ringwal

import (
	"sync"
	"sync/atomic"
)

// heldSet keeps, per breaker key, the messages set aside while the key's
// breaker is open, in the order they were held. It enforces isolation. A
// key whose held messages reach capAt (a quarter of MaxMessages) is
// capped, and enqueues for it fail fast until its messages are released.
// Keys get small numeric IDs so that a timer entry can name one. Only
// touched when a breaker is open: the mutex is off the hot path, and so is
// everything but one atomic load (cappedKeys) on the keyed enqueue path.
type heldSet struct {
	capAt      int
	cappedKeys atomic.Int32 // keys at their cap; zero means no look-up needed

	mu     sync.Mutex
	byKey  map[string]*heldList
	byID   map[uint64]*heldList
	nextID uint64
}

type heldList struct {
	key    string
	id     uint64
	refs   []ref
	capped bool
}

func (h *heldSet) init(capAt int) {
	h.capAt = max(capAt, 1)
	h.byKey = make(map[string]*heldList)
	h.byID = make(map[uint64]*heldList)
}

// add appends rf to key's list; first is true when the list was empty (the
// caller then schedules a recheck).
func (h *heldSet) add(key string, rf ref) (id uint64, first bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.byKey[key]
	if l == nil {
		h.nextID++
		l = &heldList{key: key, id: h.nextID}
		h.byKey[key] = l
		h.byID[l.id] = l
	}
	l.refs = append(l.refs, rf)
	if !l.capped && len(l.refs) >= h.capAt {
		l.capped = true
		h.cappedKeys.Add(1)
	}
	return l.id, len(l.refs) == 1
}

// take removes and returns the list of the key with that ID, and the key.
func (h *heldSet) take(id uint64) (string, []ref) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.byID[id]
	if l == nil {
		return "", nil
	}
	delete(h.byID, id)
	delete(h.byKey, l.key)
	if l.capped {
		h.cappedKeys.Add(-1)
	}
	return l.key, l.refs
}

func (h *heldSet) idOf(key string) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.byKey[key]
	if l == nil {
		return 0, false
	}
	return l.id, true
}

// capped reports whether key is at its isolation cap, and how many of its
// messages are held.
func (h *heldSet) capped(key string) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.byKey[key]
	if l == nil {
		return 0, false
	}
	return len(l.refs), l.capped
}
