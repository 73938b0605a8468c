package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ringwal/ringwal"
)

// Routing. A keyed message goes to shardOf(Key), a keyless one with a
// DedupID to shardOf(DedupID); any other message to a shard serving here
// (no network hop), or, with none, to any shard that has an owner. A
// message for a shard not served here is forwarded to its owner. While a
// shard has no owner (a takeover) or its owner refuses (it is fenced, or
// handing the shard over), the call waits and routes again, until its
// ctx ends, or 3 × LeaseTTL passed if the ctx has no deadline.
//
// A retried enqueue may be a duplicate: the first try may have been
// written (a fenced owner's refused batch is in its log; a forward whose
// reply was lost may have succeeded). That is at-least-once; a DedupID
// makes the retry return the first ID within the shard's DedupWindow.

// result is one message's outcome: its ID, the epoch of the owner that
// acknowledged it, or an error.
type result struct {
	ID    ID
	Epoch int64
	Err   error
}

// retryable reports whether err may pass once ownership settles.
func retryable(err error) bool {
	return errors.Is(err, ringwal.ErrNotOwner) || errors.Is(err, ringwal.ErrClosed) || errors.Is(err, errUnreachable)
}

// errUnreachable: a forward did not get an answer (the owner may or may
// not have enqueued).
var errUnreachable = errors.New("fleet: owner unreachable")

// Enqueue adds msg to its shard's engine, here or on the shard's owner,
// and returns its fleet ID. Errors are the engine's (ErrDuplicate with the
// first ID, ErrInvalid, ErrFull), or wrap ErrNotOwner when ownership did
// not settle in time, or ErrClosed.
func (m *Member) Enqueue(ctx context.Context, msg ringwal.Message) (ID, error) {
	rs := m.enqueueAll(ctx, []ringwal.Message{msg}, -1)
	return rs[0].ID, rs[0].Err
}

// EnqueueBatch enqueues msgs, routed as Enqueue routes each; messages for
// one shard go in one engine batch (one request when forwarded). It
// returns every message's ID (the zero ID where it failed) and the first
// error other than ErrDuplicate, or one wrapping ErrDuplicate if some
// were repeats. Unlike the engine's, a fleet's batch is not all or
// nothing: its shards are different logs.
func (m *Member) EnqueueBatch(ctx context.Context, msgs []ringwal.Message) ([]ID, error) {
	rs := m.enqueueAll(ctx, msgs, -1)
	ids := make([]ID, len(rs))
	var first error
	dups := 0
	for i, r := range rs {
		ids[i] = r.ID
		switch {
		case r.Err == nil:
		case errors.Is(r.Err, ringwal.ErrDuplicate):
			dups++
		case first == nil:
			first = r.Err
		}
	}
	if first != nil {
		return ids, first
	}
	if dups > 0 {
		return ids, fmt.Errorf("%w: fleet: %d of %d messages", ringwal.ErrDuplicate, dups, len(msgs))
	}
	return ids, nil
}

// shardFor is the shard a keyed or deduplicated message must go to, or
// -1 for a message any shard may take.
func (m *Member) shardFor(msg *ringwal.Message) int {
	switch {
	case msg.Key != "":
		return shardOf(msg.Key, m.shards)
	case msg.DedupID != "":
		return shardOf(msg.DedupID, m.shards)
	}
	return -1
}

// anyShard picks the shard for the free messages of one call: one
// serving here, round-robin, or any shard with an owner.
func (m *Member) anyShard() int {
	r := int(m.rr.Add(1))
	m.mu.Lock()
	var here []int
	for n, s := range m.local {
		if s.state.Load() == shardServing && !s.revoked.Load() && s.lease.valid() {
			here = append(here, n)
		}
	}
	m.mu.Unlock()
	if len(here) > 0 {
		return here[r%len(here)]
	}
	for i := range m.shards {
		if n := (r + i) % m.shards; m.hasOwner(n) {
			return n
		}
	}
	return r % m.shards
}

func (m *Member) hasOwner(n int) bool {
	_, ok := m.view.owner(n)
	return ok
}

// localShard returns shard n and its engine if it serves here.
func (m *Member) localShard(n int) (*shard, *ringwal.Engine, bool) {
	m.mu.Lock()
	s := m.local[n]
	m.mu.Unlock()
	if s == nil {
		return nil, nil, false
	}
	e, ok := s.engine()
	return s, e, ok
}

// enqueueAll routes and enqueues msgs. only >= 0 is a forwarded group for
// that shard: it is served here or refused (ErrNotOwner), never forwarded
// again, so a stale view cannot bounce a message between members.
func (m *Member) enqueueAll(ctx context.Context, msgs []ringwal.Message, only int) []result {
	rs := make([]result, len(msgs))
	if m.isClosing() {
		for i := range rs {
			rs[i].Err = ErrClosed
		}
		return rs
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 3*m.o.LeaseTTL)
		defer cancel()
	}
	pending := make([]int, len(msgs))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; ; attempt++ {
		groups := map[int][]int{}
		free := -1
		for _, i := range pending {
			n := only
			if n < 0 {
				n = m.shardFor(&msgs[i])
			}
			if n < 0 {
				if free < 0 {
					free = m.anyShard()
				}
				n = free
			}
			groups[n] = append(groups[n], i)
		}
		var wg sync.WaitGroup
		for n, idx := range groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.enqueueGroup(ctx, n, msgs, idx, rs, only >= 0)
			}()
		}
		wg.Wait()
		pending = pending[:0]
		for i := range rs {
			if rs[i].Err != nil && retryable(rs[i].Err) {
				pending = append(pending, i)
			}
		}
		if len(pending) == 0 || only >= 0 || m.isClosing() {
			return rs
		}
		if !sleepCtx(ctx, min(time.Duration(attempt+1)*10*time.Millisecond, 100*time.Millisecond)) {
			return rs // the last errors stand
		}
	}
}

// enqueueGroup enqueues msgs[idx...] into shard n: here if it serves
// here, else on its owner (unless forwarded, which only serves here).
func (m *Member) enqueueGroup(ctx context.Context, n int, msgs []ringwal.Message, idx []int, rs []result, forwarded bool) {
	group := make([]ringwal.Message, len(idx))
	for j, i := range idx {
		group[j] = msgs[i]
	}
	var out []result
	if s, e, ok := m.localShard(n); ok {
		out = localEnqueue(ctx, s, e, group)
	} else if o, ok := m.view.owner(n); ok && !forwarded && o.node != m.o.Node {
		out = m.forward(ctx, o.node, n, group)
	} else {
		err := fmt.Errorf("%w: fleet: shard %d is not served by %s", ringwal.ErrNotOwner, n, m.o.Node)
		if !ok {
			err = fmt.Errorf("%w: fleet: shard %d has no owner yet", ringwal.ErrNotOwner, n)
		}
		out = make([]result, len(group))
		for j := range out {
			out[j].Err = err
		}
	}
	for j, i := range idx {
		rs[i] = out[j]
	}
}

// localEnqueue enqueues into a shard serving here: one engine batch when
// no message needs its own outcome (a DedupID's duplicate, an invalid
// one), else message by message.
func localEnqueue(ctx context.Context, s *shard, e *ringwal.Engine, msgs []ringwal.Message) []result {
	out := make([]result, len(msgs))
	one := func(j int) {
		id, err := e.Enqueue(ctx, msgs[j])
		out[j] = result{Epoch: s.epoch, Err: err}
		if id != 0 {
			out[j].ID = ID{Shard: s.n, ID: id}
		}
	}
	batch := len(msgs) > 1
	for j := range msgs {
		if msgs[j].DedupID != "" {
			batch = false
		}
	}
	if !batch {
		for j := range msgs {
			one(j)
		}
		return out
	}
	ids, err := e.EnqueueBatch(ctx, msgs)
	if errors.Is(err, ringwal.ErrInvalid) {
		for j := range msgs {
			one(j)
		}
		return out
	}
	for j := range out {
		out[j] = result{Epoch: s.epoch, Err: err}
		if err == nil {
			out[j].ID = ID{Shard: s.n, ID: ids[j]}
		}
	}
	return out
}
