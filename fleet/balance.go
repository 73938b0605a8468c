package fleet

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Ownership. Each member wins shards until it holds its share and keeps
// what it holds (sticky): a member with more than its share hands one
// over, cleanly, only when another member has fewer than its own, so a
// join or a leave moves the fewest shards. Shares come from the members
// in the view, sorted by node: with S shards and k members, the first
// S mod k members' share is S/k + 1, the others' S/k; they add up to S.
// A member wins a shard by creating its election key in a transaction
// that requires the shard's prefix to be empty, so a shard has one owner
// at a time whatever the members' views say; the views only decide who
// tries. A shard that stays unowned longer than LeaseTTL (views that
// disagree, a member that does not take its share) is won by whoever
// sees it, share or not.

// share is the share of the member at index i of k.
func share(shards, k, i int) int {
	if k == 0 {
		return 0
	}
	q := shards / k
	if i < shards%k {
		q++
	}
	return q
}

// balance is the balancer goroutine: it looks again whenever the view
// changes, a shard opens or closes, the lease is lost, or LeaseTTL/4
// passed. It returns once balStop is closed.
func (m *Member) balance() {
	defer close(m.balDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-m.balStop:
			cancel()
		case <-stopped:
		}
	}()
	tick := time.NewTicker(m.o.LeaseTTL / 4)
	defer tick.Stop()
	unowned := map[int]time.Time{}
	for {
		l := m.currentLease()
		select {
		case <-m.balStop:
			return
		case <-l.lost:
			m.leaseLost(ctx, l)
			continue
		case <-m.wake:
		case <-m.view.changed:
		case <-tick.C:
		}
		m.step(ctx, l, unowned)
	}
}

// leaseLost lets every shard of l go (fenced already: etcd expired the
// lease, and with it the election keys) and joins again with a new lease.
func (m *Member) leaseLost(ctx context.Context, l *lease) {
	m.mu.Lock()
	var held []*shard
	for _, s := range m.local {
		if s.lease == l {
			held = append(held, s)
		}
	}
	m.mu.Unlock()
	for _, s := range held {
		s.revoked.Store(true)
		m.goRelease(s, false)
	}
	l.stop(false)
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, m.o.LeaseTTL)
		nl, err := m.register(rctx)
		cancel()
		if err == nil {
			m.mu.Lock()
			m.lease = nl
			m.mu.Unlock()
			m.o.Logger.Warn("fleet: joined again with a new lease", "node", m.o.Node, "lease", fmt.Sprintf("%x", nl.id))
			return
		}
		m.o.Logger.Warn("fleet: joining again", "err", err)
		sleepCtx(ctx, m.o.LeaseTTL/4)
	}
}

// goRelease releases s on a goroutine Close waits for.
func (m *Member) goRelease(s *shard, resign bool) {
	m.releasing.Add(1)
	go func() { defer m.releasing.Done(); m.releaseShard(s, resign) }()
}

// step is one look at the view: let go of shards lost, win up to the
// share, hand one over if another member is short.
func (m *Member) step(ctx context.Context, l *lease, unowned map[int]time.Time) {
	if m.isClosing() {
		return
	}
	members, rev := m.view.snapshot()
	m.mu.Lock()
	mine, leaving := 0, false
	var serving []*shard
	for n, s := range m.local {
		if s.state.Load() == shardLeaving {
			leaving = true
			continue
		}
		if o, ok := m.view.owner(n); rev >= s.epoch && (!ok || o.key != s.elect.Key()) {
			// The view has seen this key created and now deleted:
			// someone else may own the shard. Acknowledge nothing more.
			s.revoked.Store(true)
			m.goReleaseLocked(s, false)
			continue
		}
		mine++
		if s.state.Load() == shardServing {
			serving = append(serving, s)
		}
	}
	m.mu.Unlock()
	idx := -1
	for i, mi := range members {
		if mi.Node == m.o.Node {
			idx = i
		}
	}
	if idx < 0 || !l.valid() {
		return // not in the view yet, or fenced: winning would be of no use
	}
	quota := share(m.shards, len(members), idx)
	now := time.Now()
	for _, n := range m.preference() {
		if _, ok := m.view.owner(n); ok {
			delete(unowned, n)
			continue
		}
		if m.holds(n) {
			continue
		}
		if _, ok := unowned[n]; !ok {
			unowned[n] = now
		}
		if mine >= quota && now.Sub(unowned[n]) < m.o.LeaseTTL {
			continue
		}
		won, err := m.tryCampaign(ctx, l, n)
		if err != nil {
			m.o.Logger.Debug("fleet: campaign", "shard", n, "err", err)
			return
		}
		if won {
			delete(unowned, n)
			mine++
		}
	}
	if mine <= quota || leaving || len(serving) == 0 {
		return
	}
	for i, mi := range members {
		if i != idx && len(mi.Shards) < share(m.shards, len(members), i) {
			sort.Slice(serving, func(a, b int) bool { return serving[a].n > serving[b].n })
			s := serving[0]
			m.o.Logger.Info("fleet: handing a shard over", "shard", s.n, "to_fill", mi.Node, "have", mine, "share", quota)
			m.stats.handovers.Add(1)
			m.goRelease(s, true)
			return
		}
	}
}

func (m *Member) goReleaseLocked(s *shard, resign bool) {
	m.releasing.Add(1)
	go func() { defer m.releasing.Done(); m.releaseShard(s, resign) }()
}

func (m *Member) holds(n int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.local[n]
	return ok
}

// preference orders the shards by a hash of this member's name with each
// (rendezvous): members that start together try different shards first.
func (m *Member) preference() []int {
	out := make([]int, m.shards)
	keys := make([]uint64, m.shards)
	for i := range out {
		out[i] = i
		keys[i] = fnv64a(m.o.Node + "/" + strconv.Itoa(i))
	}
	sort.Slice(out, func(a, b int) bool { return keys[out[a]] < keys[out[b]] })
	return out
}

// tryCampaign creates shard n's election key on l if the shard has no
// key at all, and if it did, starts opening the shard.
func (m *Member) tryCampaign(ctx context.Context, l *lease, n int) (bool, error) {
	pfx := ownerPrefix(m.o.Cluster, n)
	key := fmt.Sprintf("%s%x", pfx, l.id)
	cctx, cancel := context.WithTimeout(ctx, m.o.LeaseTTL)
	defer cancel()
	resp, err := m.o.Etcd.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(pfx), "=", 0).WithPrefix()).
		Then(clientv3.OpPut(key, m.o.Node, clientv3.WithLease(l.id))).Commit()
	if err != nil {
		return false, err
	}
	if !resp.Succeeded {
		return false, nil
	}
	rev := resp.Header.Revision
	sctx, scancel := context.WithCancel(context.Background())
	s := &shard{m: m, n: n, lease: l, elect: concurrency.ResumeElection(l.sess, pfx, key, rev), epoch: rev,
		ctx: sctx, cancel: scancel, opened: make(chan struct{})}
	m.mu.Lock()
	if m.isClosing() {
		m.mu.Unlock()
		scancel()
		_ = s.elect.Resign(cctx)
		return false, nil
	}
	m.local[n] = s
	m.mu.Unlock()
	m.o.Logger.Info("fleet: won shard", "shard", n, "epoch", rev)
	m.releasing.Add(1)
	go func() { defer m.releasing.Done(); s.open() }()
	return true, nil
}
