package breaker

import "sync"

// event is one state transition awaiting delivery to OnStateChange.
type event struct {
	key      string
	from, to State
}

// notifier delivers transitions to OnStateChange in the order they were
// pushed, one call at a time, with no breaker lock held. Transitions are
// pushed while the breaker's lock is held, which fixes their order; flush
// is called after it is released, and whoever finds delivery idle becomes
// the deliverer until the queue is empty (so a callback that causes a
// transition does not recurse: its event is delivered after it returns).
type notifier struct {
	fn func(key string, from, to State)

	mu       sync.Mutex
	queue    []event
	spare    []event // the previous batch's array, reused to avoid garbage
	draining bool
}

// push queues ev; call with the breaker's lock held.
func (n *notifier) push(ev event) {
	if n.fn == nil {
		return
	}
	n.mu.Lock()
	n.queue = append(n.queue, ev)
	n.mu.Unlock()
}

// flush delivers queued events unless another goroutine already is; call
// with no breaker lock held.
func (n *notifier) flush() {
	if n.fn == nil {
		return
	}
	n.mu.Lock()
	if n.draining || len(n.queue) == 0 {
		n.mu.Unlock()
		return
	}
	n.draining = true
	defer func() {
		// Runs also if fn panics, so that later events are still delivered.
		n.draining = false
		n.mu.Unlock()
	}()
	for len(n.queue) > 0 {
		batch := n.queue
		n.queue = n.spare[:0]
		n.mu.Unlock()
		n.deliver(batch)
		n.mu.Lock()
		n.spare = batch[:0]
	}
}

// deliver calls fn for each event, re-taking n.mu if fn panics so that
// flush's deferred unlock stays balanced.
func (n *notifier) deliver(batch []event) {
	ok := false
	defer func() {
		if !ok {
			n.mu.Lock()
		}
	}()
	for _, ev := range batch {
		n.fn(ev.key, ev.from, ev.to)
	}
	ok = true
}
