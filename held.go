package ringwal

import "sync"

// heldSet keeps, per breaker key, the messages set aside while the key's
// breaker is open, in the order they were held. Keys get small numeric IDs
// so that a timer entry can name one. Only touched when a breaker is open:
// the mutex is off the hot path.
type heldSet struct {
	mu     sync.Mutex
	byKey  map[string]*heldList
	byID   map[uint64]*heldList
	nextID uint64
}

type heldList struct {
	key  string
	id   uint64
	refs []ref
}

func (h *heldSet) init() {
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
	return l.id, len(l.refs) == 1
}

// take removes and returns the list of the key with that ID.
func (h *heldSet) take(id uint64) []ref {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.byID[id]
	if l == nil {
		return nil
	}
	delete(h.byID, id)
	delete(h.byKey, l.key)
	return l.refs
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
