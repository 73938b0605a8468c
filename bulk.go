package ringwal

import (
	"cmp"
	"errors"

	"github.com/ringwal/ringwal/dlq"
)

// This file owns the bulk operator verbs. Each acts on a set fixed when it
// starts: a dead-letter mark (dlq.Query.Through) or a message ID bound
// (Filter.Through). Each applies the single-message verb (Redrive,
// MarkReviewed, Cancel) to each member, so that each is journaled, counted
// and ordered exactly as the single verb is. They start a page of verbs,
// each record placed in the log, and then finish them in order. So a page
// waits for the log once rather than once per message. In Fsync mode a
// page costs about one fsync instead of hundreds.

// bulkPage is how many dead letters a bulk verb copies out of the store
// at a time: the store's read lock is held for one page's copy, never for
// the whole set, and memory stays bounded whatever the set's size.
const bulkPage = 256

// deadSet fixes the set q selects: q.Through, when 0, becomes the store's
// mark now, so that dead letters added while a bulk verb runs are not in
// it. It validates q (ErrInvalid) and reports empty when the store has
// never held a dead letter (a mark of 0 would mean "no bound").
func (e *Engine) deadSet(q dlq.Query) (_ dlq.Query, empty bool, err error) {
	probe := q
	if probe.Limit >= 0 {
		probe.Limit = 1 // validation and the mark; never a long walk
	}
	n, mark, err := e.CountDeadLetters(probe)
	if err != nil {
		return q, false, err
	}
	if q.Through == 0 {
		q.Through = mark
	}
	return q, n == 0 || q.Through == 0, nil
}

// bulkLimit is how many a page may take: bulkPage, or what is left of
// the caller's Limit (0: none).
func bulkLimit(limit, done int) int {
	if limit == 0 {
		return bulkPage
	}
	return min(bulkPage, limit-done)
}

// RedriveMatching redrives the dead letters q matches, in q's order, and
// returns how many it redrove. Each is redriven as Redrive does it, and
// journaled. They are durable as the mode promises before it returns. A
// page of up to 256 waits for the log together, and each is made ready
// only once its records are durable. q.Limit, if not 0, bounds how many;
// q.After starts it at a cursor.
//
// The set is fixed when it starts. With q.Through 0, it is the dead
// letters q matched then. With q.Through set to CountDeadLetters' mark, it
// is exactly the dead letters that count counted. A dead letter added
// since is never redriven; that includes a redriven one that failed
// again, as it is added anew. One removed since (purged, evicted,
// redriven by another caller) is skipped and not counted. One that
// stopped matching, as a reviewed one under a Reviewed filter, is skipped.
// Dead letters are redriven one at a time, not atomically. A concurrent
// reader may see some redriven and the rest not yet, and a failure leaves
// those done redriven. On a failure (ErrFull, a log error, ErrClosed) it
// stops and returns the count so far with the error. A malformed q is
// ErrInvalid. Safe for concurrent use.
func (e *Engine) RedriveMatching(q dlq.Query) (int, error) {
	return e.eachDead(q, e.startRedrive)
}

// ReviewMatching marks the dead letters q matches as reviewed with note
// (as MarkReviewed does, each journaled), in q's order, and returns how
// many it marked. q.Limit, if not 0, bounds how many; q.After starts it
// at a cursor. The set is fixed as RedriveMatching fixes it: with
// q.Through set to CountDeadLetters' mark, exactly those counted, less
// those removed since (skipped, not counted); never one added since. A
// dead letter already reviewed that q matches gets the new note. On a
// failure it stops and returns the count so far with the error (a log
// error leaves that one marked in memory, as MarkReviewed does). A
// malformed q is ErrInvalid. Safe for concurrent use.
func (e *Engine) ReviewMatching(q dlq.Query, note string) (int, error) {
	return e.eachDead(q, func(id ID) (pendingOp, error) { return e.startReview(id, note) })
}

// eachDead applies op to each dead letter of the set q fixes (deadSet),
// a page at a time, in q's order. Each page starts just after the place
// (DeadAt, ID) of the last page's last dead letter. That holds whether op
// left it in the store, as a review does, or not, as a redrive does; a
// redriven one may be back under its ID at a later place, dead-lettered
// again. So every dead letter q's filters skip is read once in the run.
// Starting each page again from q's start would read those before the
// matches once per page. A dead letter op finds gone (ErrNotFound) is
// skipped; any other error stops it, returned with the count done.
func (e *Engine) eachDead(q dlq.Query, op func(ID) (pendingOp, error)) (int, error) {
	q, empty, err := e.deadSet(q)
	if err != nil || empty {
		return 0, err
	}
	done := 0
	// The previous page's last place, and only that: a pointer into the
	// page would keep the whole page (up to bulkPage copies, failures and
	// payloads) alive while the next one is read.
	var after deadPlace
	for q.Limit == 0 || done < q.Limit {
		page := q
		page.Limit = bulkLimit(q.Limit, done)
		ds, err := e.deadLettersAfter(page, after)
		if err != nil {
			return done, err
		}
		if len(ds) == 0 {
			return done, nil
		}
		var p pipeline
		for _, d := range ds {
			if !p.start(op(d.ID)) {
				break
			}
		}
		n, err := p.finish()
		done += n
		if err != nil {
			return done, err
		}
		after = deadPlace{at: ds[len(ds)-1].DeadAt, id: ds[len(ds)-1].ID}
	}
	return done, nil
}

// CountMessages returns how many live messages f matches (as many as
// Messages(f) yields) and a mark: set f.Through to it and CancelMatching(f)
// cancels the messages counted (less those that left since), never one
// enqueued after the count. A mark of 0 means nothing was ever enqueued:
// no set to act on. It walks the records as Messages does (O(MaxMessages),
// or an ordered key's queue), copying nothing. Safe for concurrent use.
func (e *Engine) CountMessages(f Filter) (n int, through ID, err error) {
	if err := e.errIfClosed(); err != nil {
		return 0, 0, err
	}
	f, empty := e.messageSet(f)
	if empty {
		return 0, 0, nil
	}
	for range e.Messages(f) {
		n++
	}
	return n, f.Through, nil
}

// messageSet fixes the set f selects, as deadSet does for dead letters:
// f.Through, when 0 or past the last ID given, becomes that ID, read
// before any walk (whatever is enqueued from here has a higher ID). It
// reports empty when nothing was ever enqueued (a mark of 0 would mean
// "no bound").
func (e *Engine) messageSet(f Filter) (_ Filter, empty bool) {
	if last := e.nextID.Load(); f.Through == 0 || f.Through > last {
		f.Through = last
	}
	return f, f.Through == 0
}

// CancelMatching cancels the live messages f matches, and returns how
// many it cancelled. Each is cancelled as Cancel does it: journaled, and
// durable as the mode promises before it returns. Up to 256 wait for the
// log together. Pending, delayed, held and waiting messages are removed
// for good. Leased ones have their leases ended and their handlers' ctx
// cancelled.
//
// The set is fixed when it starts: with f.Through 0, the messages enqueued
// before it started; with f.Through set to CountMessages' mark, the
// messages counted then. A message enqueued since is never cancelled (IDs
// only grow), but a dead letter redriven meanwhile keeps its old ID and
// may be. A message that matched when the walk read it is cancelled even
// if its state changed just after (f.States is read at that moment); one
// that left meanwhile (acked, dead-lettered, cancelled by another) is
// skipped and not counted. Messages are cancelled one at a time, not
// atomically; on a failure (a log error, ErrClosed) it stops and returns
// the count so far with the error. Safe for concurrent use.
func (e *Engine) CancelMatching(f Filter) (int, error) {
	if err := e.errIfClosed(); err != nil {
		return 0, err
	}
	f, empty := e.messageSet(f)
	if empty {
		return 0, nil
	}
	done := 0
	for {
		n, err := e.cancelPass(f)
		done += n
		// An ordered key's walk reads its head, then its queue: a message
		// that became the head behind the walk was passed over, so walk
		// again while a pass finds some. The slab's walk misses none
		// (slots do not move), and the bound makes the passes end.
		if err != nil || n == 0 || e.orderedKey(f.Key) == nil {
			return done, err
		}
	}
}

// cancelPass cancels what one walk of Messages(f) yields, finishing the
// cancels a page at a time.
func (e *Engine) cancelPass(f Filter) (int, error) {
	done := 0
	var p pipeline
	for info := range e.Messages(f) {
		if !p.start(e.startCancel(info.ID)) {
			break
		}
		if len(p.ops) == bulkPage {
			n, err := p.finish()
			done += n
			if err != nil {
				return done, err
			}
		}
	}
	n, err := p.finish()
	return done + n, err
}

// pipeline is a page of started verbs (pendingOp) that finish together.
type pipeline struct {
	ops []pendingOp
	err error // the start error that stopped the page
}

// start adds a started verb; it reports false (stop starting) when the
// start failed for a reason other than the member being gone, which is
// skipped (ErrNotFound: removed meanwhile, so out of the set).
func (p *pipeline) start(op pendingOp, err error) bool {
	switch {
	case err == nil:
		p.ops = append(p.ops, op)
	case errors.Is(err, ErrNotFound):
	default:
		p.err = err
		return false
	}
	return true
}

// finish finishes every started verb, in order (each has its record in
// the log, so none may be left half done), and returns how many
// succeeded with the first error, the start error included. It leaves p
// empty for the next page.
func (p *pipeline) finish() (done int, err error) {
	for _, op := range p.ops {
		if ferr := op.finish(); ferr != nil {
			err = cmp.Or(err, ferr)
			continue
		}
		done++
	}
	err = cmp.Or(err, p.err)
	p.ops, p.err = p.ops[:0], nil
	return done, err
}
