package ringwal

import "sync"

// dedupIndex remembers caller-supplied DedupIDs for Options.DedupWindow.
// It is the engine's only map on the enqueue path, and only for messages
// that carry a DedupID. The housekeeper sweeps expired entries.
type dedupIndex struct {
	mu      sync.Mutex
	entries map[string]dedupEntry
}

type dedupEntry struct {
	id uint64
	at int64 // unix ns of the first enqueue
}

func (d *dedupIndex) init() { d.entries = make(map[string]dedupEntry) }

// reserve records dedupID for id at now unless a fresh entry exists, in
// which case it returns that entry's ID and dup = true.
func (d *dedupIndex) reserve(dedupID string, id uint64, now, window int64) (first uint64, dup bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.entries[dedupID]; ok && now-old.at < window {
		return old.id, true
	}
	d.entries[dedupID] = dedupEntry{id: id, at: now}
	return id, false
}

// lookup returns the ID of dedupID's entry if it is fresh at now. It
// reserves nothing: reserve still decides.
func (d *dedupIndex) lookup(dedupID string, now, window int64) (uint64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.entries[dedupID]; ok && now-old.at < window {
		return old.id, true
	}
	return 0, false
}

// restore records an entry found in the log or a snapshot.
func (d *dedupIndex) restore(dedupID string, id uint64, at int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old, ok := d.entries[dedupID]
	switch {
	case !ok || (old.id != id && old.at <= at):
		d.entries[dedupID] = dedupEntry{id: id, at: at}
	case old.id == id && at < old.at:
		// The same message seen again (a snapshot's copy of a redriven
		// message): its window counts from its first enqueue.
		d.entries[dedupID] = dedupEntry{id: id, at: at}
	}
}

// forget removes dedupID if it still names id (an enqueue that failed).
func (d *dedupIndex) forget(dedupID string, id uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.entries[dedupID]; ok && old.id == id {
		delete(d.entries, dedupID)
	}
}

// sweep drops entries older than the window.
func (d *dedupIndex) sweep(now, window int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, v := range d.entries {
		if now-v.at >= window {
			delete(d.entries, k)
		}
	}
}

// each calls fn for every entry fresh at now (for checkpoints).
func (d *dedupIndex) each(now, window int64, fn func(dedupID string, id uint64, at int64) error) error {
	d.mu.Lock()
	live := make([]struct {
		k string
		v dedupEntry
	}, 0, len(d.entries))
	for k, v := range d.entries {
		if now-v.at < window {
			live = append(live, struct {
				k string
				v dedupEntry
			}{k, v})
		}
	}
	d.mu.Unlock()
	for _, x := range live {
		if err := fn(x.k, x.v.id, x.v.at); err != nil {
			return err
		}
	}
	return nil
}

func (d *dedupIndex) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}
