package ringwal

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ringwal/ringwal/sched"
	"github.com/ringwal/ringwal/wal"
)

// acquireLease owns the record a lease names, waiting out a concurrent
// owner (an Extend of this very lease, a reader).
func (e *Engine) acquireLease(l Lease) (*rec, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	r := e.slab.lookup(l.slot)
	if r == nil || l.gen == 0 || !r.own(l.gen, stLeased) {
		return nil, ErrStaleLease
	}
	return r, nil
}

// Ack settles a delivery as done: the message is forgotten. Ack returns
// once its record is as durable as Options.Durability promises: an acked
// message is not delivered again after a killed process (Write, Fsync) or
// a power loss (Fsync only). A stale lease gets ErrStaleLease. Safe for
// concurrent use. (A Run worker acks without this wait; see Run.)
func (e *Engine) Ack(l Lease) error {
	r, err := e.acquireLease(l)
	if err != nil {
		return err
	}
	now := e.now()
	id := e.settleDone(r)
	if e.log != nil {
		rec := ackRecord(id, now)
		if err := e.log.Append(&rec); err != nil {
			return fmt.Errorf("ringwal: ack %d: %w", id, mapWALError(err))
		}
	}
	return nil
}

// ackLater is a Run worker's Ack: the same settlement, but the ack record
// is appended without waiting for it (logLater): it is durable with the
// next group commit, and a crash before that redelivers the message.
func (e *Engine) ackLater(l Lease) error {
	r, err := e.acquireLease(l)
	if err != nil {
		return err
	}
	now := e.now()
	id := e.settleDone(r)
	if e.log != nil {
		rec := ackRecord(id, now)
		if err := e.logLater(&rec); err != nil {
			return fmt.Errorf("ringwal: ack %d: %w", id, mapWALError(err))
		}
	}
	return nil
}

// AckBatch acks every lease in ls as Ack would, one after the other, but
// waits for the log once: the ack records go into the log as one batch
// (after a crash either all of them are in it or none), and AckBatch
// returns once that batch is as durable as Options.Durability promises.
// It is Ack for consumers that take messages with DequeueBatch.
//
// A stale lease does not stop the others: every lease that is still valid
// is acked, and the error then wraps ErrStaleLease and says how many of
// the leases were stale and the indexes in ls of the first eight. A lease
// that appears twice in ls is acked once; its second appearance is stale.
// After Close, AckBatch acks nothing and returns ErrClosed (also for an
// empty ls, which otherwise returns nil). If Close starts while AckBatch
// runs, the leases not yet settled are left to Close (which gives them
// back as pending) and the error wraps ErrClosed. A log failure is
// returned as Ack returns it; the messages are settled in memory either
// way. Safe for concurrent use; no allocation per lease.
func (e *Engine) AckBatch(ls []Lease) error {
	if err := e.usable(); err != nil {
		return err
	}
	if len(ls) == 0 {
		return nil
	}
	var recs *[]wal.Record
	if e.log != nil {
		recs = ackRecords.Get().(*[]wal.Record)
		*recs = (*recs)[:0]
		defer putAckRecords(recs)
	}
	now := e.now()
	var stale staleLeases
	closedAt := -1
	for i, l := range ls {
		r, err := e.acquireLease(l)
		if err != nil {
			if errors.Is(err, ErrStaleLease) {
				stale.add(i)
				continue
			}
			closedAt = i // ErrClosed: Close has taken over the rest
			break
		}
		id := e.settleDone(r)
		if recs != nil {
			*recs = append(*recs, ackRecord(id, now))
		}
	}
	var logErr error
	if recs != nil && len(*recs) > 0 {
		if err := e.log.AppendBatch(*recs); err != nil {
			logErr = fmt.Errorf("ringwal: ack batch of %d: %w", len(*recs), mapWALError(err))
		}
	}
	if closedAt < 0 && stale.n == 0 {
		return logErr
	}
	var errs []error
	if logErr != nil {
		errs = append(errs, logErr)
	}
	if closedAt >= 0 {
		errs = append(errs, fmt.Errorf("ringwal: ack batch: closed at lease %d of %d: %w", closedAt, len(ls), ErrClosed))
	}
	if stale.n > 0 {
		errs = append(errs, stale.err(len(ls)))
	}
	return errors.Join(errs...)
}

// ackRecords holds AckBatch's record buffers between calls.
var ackRecords = sync.Pool{New: func() any { return new([]wal.Record) }}

// putAckRecords returns a buffer to ackRecords unless a huge batch grew it.
func putAckRecords(recs *[]wal.Record) {
	if cap(*recs) <= 1<<12 {
		ackRecords.Put(recs)
	}
}

// staleLeases counts AckBatch's stale leases and keeps the first indexes.
type staleLeases struct {
	n     int
	first [8]int
}

func (s *staleLeases) add(i int) {
	if s.n < len(s.first) {
		s.first[s.n] = i
	}
	s.n++
}

func (s *staleLeases) err(of int) error {
	idx := s.first[:min(s.n, len(s.first))]
	more := ""
	if s.n > len(idx) {
		more = ", ..."
	}
	return fmt.Errorf("ringwal: ack batch: %d of %d leases stale (indexes %s%s): %w",
		s.n, of, strings.Trim(fmt.Sprint(idx), "[]"), more, ErrStaleLease)
}

// settleDone settles an owned, leased record as acked (breaker, handling
// latency) and frees it; it returns the message's ID, for the ack record.
func (e *Engine) settleDone(r *rec) uint64 {
	id := r.id.Load()
	if r.msg.Key != "" {
		e.breakers.Done(r.ticket, true)
	}
	if sampled(id) {
		e.metrics.observeHandling(e.preciseNow() - r.leasedAt.Load())
	}
	e.release(r)
	return id
}

// release frees a busy record's slot for reuse.
func (e *Engine) release(r *rec) {
	r.free()
	e.ctr.freed.Add(1)
	e.waiting.signalSpace()
}

// Nack settles a delivery as failed with cause: the cause is classified,
// counted against the key's breaker (Transient, Timeout, RateLimited and
// Resource only), and the message is retried after the category policy's
// backoff (or exactly after classify.After's delay), or dead-lettered once
// its attempts or the policy's MaxElapsed are spent (as Expired if its TTL
// passed during the delivery). A nil cause is recorded as "nack without a
// cause" (Unknown to the default classifier). Like Ack, it returns once its
// record is as durable as the mode promises; a stale lease gets
// ErrStaleLease. Safe for concurrent use.
func (e *Engine) Nack(l Lease, cause error) error {
	r, err := e.acquireLease(l)
	if err != nil {
		return err
	}
	if cause == nil {
		cause = errors.New("nack without a cause")
	}
	e.ctr.nacked.Add(1)
	cat := e.opts.Classifier.Classify(cause)
	return e.fail(l.slot, r, cat, cause, e.now(), true)
}

// Extend makes the lease end d from now (d > 0, else ErrInvalid). It does
// not wait for the log: a lease is never durable (after a crash the
// message comes back pending). A stale lease gets ErrStaleLease. Safe for
// concurrent use.
func (e *Engine) Extend(l Lease, d time.Duration) error {
	if err := e.usable(); err != nil {
		return err
	}
	if d <= 0 {
		return invalidf("Extend by %v: must be positive", d)
	}
	r, err := e.acquireLease(l)
	if err != nil {
		return err
	}
	now := e.preciseNow() // a short Extend must not end early because the cache lags
	expiry := addSat(now, int64(d))
	r.leaseExpiry = expiry
	id := r.id.Load()
	// Logged while the record is ours, before whatever settles the lease.
	rec := extendRecord(id, now, expiry)
	err = e.appendRecord(&rec, false)
	r.keep(stLeased) // the lease stays valid
	e.hk.schedule(expiry, sched.Entry{ID: uint64(l.slot), Gen: l.gen, Kind: timerLease})
	return err
}
