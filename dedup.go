package ringwal

import (
	"context"
	"sync"
)

// dedupIndex remembers caller-supplied DedupIDs: for Options.DedupWindow
// (UniqueWindow), and while the message is queued or live (UniqueQueued,
// UniqueLive; unique.go). It is the engine's only map on the enqueue path,
// and only for messages that carry a DedupID. Each DedupID names the last
// message accepted with it. The housekeeper sweeps window entries once
// their window has passed; a unique entry is removed when its message
// leaves the slab (Engine.release), and read against its message's state
// at a repeat.
type dedupIndex struct {
	mu      sync.Mutex
	entries map[string]dedupEntry
	seq     uint64 // the last entry's seq; mu held
}

type dedupEntry struct {
	id   uint64
	at   int64  // unix ns of the first enqueue
	seq  uint64 // changes whenever the entry is set: a unique repeat judged against one seq reserves only if it is still there
	mode Unique // the mode the message was accepted with
	// logging is set while the first message's enqueue record is on its
	// way to the log, nil once it is as durable as the mode promises. A
	// repeat must not be answered before then: if the first's append
	// fails, or the process dies before it is written, neither message
	// exists, yet the repeat's caller would have been told it was stored.
	// A unique entry's is set too while its message's ack is on its way
	// (uniqueLeaving): an ack that fails leaves the message live.
	logging *dedupLogging
}

// dedupLogging is what a repeat waits on while the first message of its
// DedupID is being logged: closed once that enqueue is durable or has
// failed. One enqueue (or one EnqueueBatch) shares one.
type dedupLogging struct{ done chan struct{} }

func newDedupLogging() *dedupLogging { return &dedupLogging{done: make(chan struct{})} }

func (d *dedupIndex) init() { d.entries = make(map[string]dedupEntry) }

// reserve records dedupID for id at now unless a fresh entry exists. A
// durable fresh entry makes m a repeat: reserve returns its ID and dup =
// true. A fresh entry still being logged by someone else returns its
// logging. The caller gives back what it holds and waits on it before it
// tries again. An entry logged by the caller itself counts as durable:
// mine, an earlier message of the same batch, whose records reach the log
// in one write. The argument logging is the caller's own. It is nil when
// the reservation needs no wait (a memory-only engine), and then it is
// durable at once.
//
// A unique mode (UniqueQueued, UniqueLive) has judged the entry already,
// holding nothing (judgeUnique). Its seen is the seq of the entry it
// judged (0: none). The DedupID is taken only if that entry is still
// there. If it changed, reserve returns a closed logging: try again. An entry of the
// caller's own batch makes m a repeat of it (dup).
func (d *dedupIndex) reserve(dedupID string, id uint64, now, window int64, mode Unique, seen uint64, mine *dedupLogging) (first uint64, dup bool, wait *dedupLogging) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old, ok := d.entries[dedupID]
	if mode != UniqueWindow {
		switch {
		case ok && old.logging != nil && old.logging == mine:
			return old.id, true, nil
		case ok && old.logging != nil:
			return 0, false, old.logging
		case ok && old.seq != seen, !ok && seen != 0:
			return 0, false, retryNow
		}
	} else if ok && now-old.at < window {
		if old.logging != nil && old.logging != mine {
			return 0, false, old.logging
		}
		return old.id, true, nil
	}
	d.seq++
	d.entries[dedupID] = dedupEntry{id: id, at: now, seq: d.seq, mode: mode, logging: mine}
	return id, false, nil
}

// retryNow is a closed logging: reserve's "the entry changed, judge again".
var retryNow = func() *dedupLogging {
	l := newDedupLogging()
	close(l.done)
	return l
}()

// logged marks dedupID's entry for id durable: its enqueue record is
// written as the mode promises. The caller closes the entry's logging
// afterwards, which wakes the repeats waiting on it.
func (d *dedupIndex) logged(dedupID string, id uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.entries[dedupID]; ok && old.id == id {
		old.logging = nil
		d.entries[dedupID] = old
	}
}

// awaitLogged waits until no enqueue of dedupID is being logged, so that
// the caller can reserve or learn the answer without holding a claim
// while it waits. It returns ctx's error or ErrClosed when those end the
// wait first.
func (d *dedupIndex) awaitLogged(ctx context.Context, dedupID string, done <-chan struct{}) error {
	for {
		d.mu.Lock()
		old, ok := d.entries[dedupID]
		d.mu.Unlock()
		if !ok || old.logging == nil {
			return nil
		}
		if err := old.logging.wait(ctx, done); err != nil {
			return err
		}
	}
}

// wait blocks until l is closed, ctx ends or done (the engine's) closes.
func (l *dedupLogging) wait(ctx context.Context, done <-chan struct{}) error {
	if ctx == nil {
		ctx = context.Background()
	}
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
		return ErrClosed
	}
}

// lookup returns the ID of dedupID's entry if it is fresh at now and
// durable. It reserves nothing: reserve still decides.
func (d *dedupIndex) lookup(dedupID string, now, window int64) (uint64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.entries[dedupID]; ok && now-old.at < window && old.logging == nil {
		return old.id, true
	}
	return 0, false
}

// restore records a window entry found in the log or a snapshot.
func (d *dedupIndex) restore(dedupID string, id uint64, at int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old, ok := d.entries[dedupID]
	switch {
	case !ok || (old.id != id && old.at <= at):
		d.seq++
		d.entries[dedupID] = dedupEntry{id: id, at: at, seq: d.seq}
	case old.id == id && at < old.at:
		// The same message seen again (a snapshot's copy of a redriven
		// message): its window counts from its first enqueue.
		d.seq++
		d.entries[dedupID] = dedupEntry{id: id, at: at, seq: d.seq}
	}
}

// forget removes dedupID if it still names id (an enqueue that failed, or
// was given back before it was logged). The caller then closes the
// entry's logging, if it had one, so that repeats waiting on it retry and
// enqueue themselves.
func (d *dedupIndex) forget(dedupID string, id uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.entries[dedupID]; ok && old.id == id {
		delete(d.entries, dedupID)
	}
}

// sweep drops window entries older than the window (a unique entry goes
// with its message).
func (d *dedupIndex) sweep(now, window int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, v := range d.entries {
		if v.mode == UniqueWindow && now-v.at >= window {
			delete(d.entries, k)
		}
	}
}

// each calls fn for every durable window entry fresh at now (for
// checkpoints; a unique entry is carried by its live message's enqueue
// record, which says its mode).
// An entry whose first enqueue is still being logged is waited for, then
// given if that enqueue succeeded. Its record may be in a batch the
// checkpoint lets the log drop. A snapshot without the entry would then
// let a repeat in after a restart. The log writer runs on while a
// checkpoint does, so the wait ends.
func (d *dedupIndex) each(now, window int64, fn func(dedupID string, id uint64, at int64) error) error {
	type entry struct {
		k string
		v dedupEntry
	}
	d.mu.Lock()
	live := make([]entry, 0, len(d.entries))
	for k, v := range d.entries {
		if v.mode == UniqueWindow && now-v.at < window {
			live = append(live, entry{k, v})
		}
	}
	d.mu.Unlock()
	for _, x := range live {
		if x.v.logging != nil {
			<-x.v.logging.done
			d.mu.Lock()
			v, ok := d.entries[x.k]
			d.mu.Unlock()
			if !ok || v.id != x.v.id || v.logging != nil {
				continue // its enqueue failed; forget removed it
			}
		}
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

// peek returns dedupID's entry.
func (d *dedupIndex) peek(dedupID string) (dedupEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ent, ok := d.entries[dedupID]
	return ent, ok
}

// forgetUnique removes dedupID's unique entry if it names id.
func (d *dedupIndex) forgetUnique(dedupID string, id uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.entries[dedupID]; ok && old.id == id && old.mode != UniqueWindow {
		delete(d.entries, dedupID)
	}
}

// leaving marks dedupID's unique entry, if it names id and is durable,
// as being logged (uniqueLeaving) and returns the mark; nil otherwise.
func (d *dedupIndex) leaving(dedupID string, id uint64) *dedupLogging {
	d.mu.Lock()
	defer d.mu.Unlock()
	old, ok := d.entries[dedupID]
	if !ok || old.id != id || old.mode == UniqueWindow || old.logging != nil {
		return nil
	}
	old.logging = newDedupLogging()
	d.entries[dedupID] = old
	return old.logging
}

// left ends a leaving mark l: the ack is durable, dedupID's entry goes.
// Repeats waiting on l judge again.
func (d *dedupIndex) left(dedupID string, l *dedupLogging) { d.endLeaving(dedupID, l, true) }

// stayed ends a leaving mark l: the ack failed and its message is back,
// holding dedupID's entry as before. Repeats waiting on l judge again.
func (d *dedupIndex) stayed(dedupID string, l *dedupLogging) { d.endLeaving(dedupID, l, false) }

// endLeaving is left (gone) and stayed: the entry, if l still marks it,
// goes or is durable again; then l's waiters wake.
func (d *dedupIndex) endLeaving(dedupID string, l *dedupLogging, gone bool) {
	d.mu.Lock()
	if old, ok := d.entries[dedupID]; ok && old.logging == l {
		if gone {
			delete(d.entries, dedupID)
		} else {
			old.logging = nil
			d.entries[dedupID] = old
		}
	}
	d.mu.Unlock()
	close(l.done)
}

// back sets dedupID's entry to id, live again, if no entry holds it.
func (d *dedupIndex) back(dedupID string, id uint64, at int64, mode Unique) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.entries[dedupID]; !ok {
		d.seq++
		d.entries[dedupID] = dedupEntry{id: id, at: at, seq: d.seq, mode: mode}
	}
}

// restoreUnique records a unique entry found in the log or a snapshot:
// the message of the latest enqueue record holds it, unless a later
// message (a higher ID: a snapshot walks its messages in slot order)
// holds it already.
func (d *dedupIndex) restoreUnique(dedupID string, id uint64, at int64, mode Unique) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old, ok := d.entries[dedupID]
	if ok && old.mode != UniqueWindow && old.id > id {
		return
	}
	d.seq++
	d.entries[dedupID] = dedupEntry{id: id, at: at, seq: d.seq, mode: mode}
}
