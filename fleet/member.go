package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is one process of a fleet: it owns a share of the shards, serves
// them, and routes what belongs to other members' shards to them. Safe
// for concurrent use.
//
// Goroutines, each stopped by Close: the view's watch, the balancer (the
// one that decides what to win and what to hand over), the lease's
// renewal, one opener per shard being won, one releaser per shard being
// handed over, each consumer's run per serving shard, and the
// forwarders' senders per peer.
type Member struct {
	o      Options
	shards int
	view   *view

	ctx              context.Context // ends when Close has handed every shard over
	cancel           context.CancelFunc
	wake             chan struct{} // cap 1: the balancer has something to look at
	balStop, balDone chan struct{}
	wg               sync.WaitGroup
	// releasing counts openers and releasers: Close waits for them.
	releasing sync.WaitGroup

	closing   atomic.Bool
	closeOnce sync.Once
	closeErr  error

	mu        sync.Mutex
	lease     *lease // the current incarnation; replaced when etcd expires it
	local     map[int]*shard
	consumers map[*consumer]struct{}
	peers     map[string]*peer

	rr    atomic.Uint64 // round-robin for keyless messages
	stats counters
}

// counters are the member's metrics.
type counters struct {
	won, released, handovers, forwarded, fenceRefusals, forwardRequests atomic.Uint64
}

// Join makes this process a member of the fleet o.Cluster (creating the
// fleet, with o.Shards shards, if it is new) and starts winning its share
// of the shards. It returns once the member is registered; shards open in
// the background (Owned says which serve here).
func Join(ctx context.Context, o Options) (*Member, error) {
	o.fill()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	n, err := ensureShards(ctx, o.Etcd, o.Cluster, o.Shards)
	if err != nil {
		return nil, err
	}
	o.Shards = n
	m := &Member{
		o: o, shards: n, view: newView(o.Cluster, n),
		wake: make(chan struct{}, 1), balStop: make(chan struct{}), balDone: make(chan struct{}), local: map[int]*shard{},
		consumers: map[*consumer]struct{}{}, peers: map[string]*peer{},
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	l, err := m.register(ctx)
	if err != nil {
		m.cancel()
		return nil, err
	}
	m.lease = l
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.view.watch(m.ctx, o.Etcd, o.Logger) }()
	go m.balance()
	o.Logger.Info("fleet: joined", "cluster", o.Cluster, "node", o.Node, "shards", n, "lease", fmt.Sprintf("%x", l.id))
	return m, nil
}

// register takes a lease and puts the member's key on it.
func (m *Member) register(ctx context.Context) (*lease, error) {
	l, err := grantLease(ctx, m.o.Etcd, m.o.LeaseTTL, m.o.FenceMargin, m.o.Logger)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(MemberInfo{Node: m.o.Node, Advertise: m.o.Advertise})
	if _, err := m.o.Etcd.Put(ctx, membersPrefix(m.o.Cluster)+m.o.Node, string(b), clientv3.WithLease(l.id)); err != nil {
		l.stop(true)
		return nil, fmt.Errorf("fleet: registering %s: %w", m.o.Node, err)
	}
	return l, nil
}

func (m *Member) kick() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Member) isClosing() bool { return m.closing.Load() }

func (m *Member) currentLease() *lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease
}

// Owned returns the shards serving on this member, ascending.
func (m *Member) Owned() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []int{}
	for n, s := range m.local {
		if s.state.Load() == shardServing {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// Members returns the fleet's members as this member's view of etcd has
// them, sorted by node, each with the shards etcd says it owns (won: a
// shard may still be opening there).
func (m *Member) Members() []MemberInfo {
	ms, _ := m.view.snapshot()
	return ms
}

// Shards is the fleet's shard count.
func (m *Member) Shards() int { return m.shards }

// Stats are a member's counters.
type Stats struct {
	// Owned is the number of shards serving here.
	Owned int
	// Epochs are the owned shards' epochs, by shard.
	Epochs map[int]int64
	// Won and Released count shards opened and let go since Join
	// (Released includes handovers and shards lost with the lease).
	Won, Released uint64
	// Forwarded counts messages enqueued through another member, in
	// ForwardRequests requests.
	Forwarded, ForwardRequests uint64
	// FenceRefusals counts batches a shard's fence refused.
	FenceRefusals uint64
}

// Stats returns the member's counters.
func (m *Member) Stats() Stats {
	s := Stats{Epochs: map[int]int64{}, Won: m.stats.won.Load(), Released: m.stats.released.Load(),
		Forwarded: m.stats.forwarded.Load(), ForwardRequests: m.stats.forwardRequests.Load(),
		FenceRefusals: m.stats.fenceRefusals.Load()}
	m.mu.Lock()
	for n, sh := range m.local {
		if sh.state.Load() == shardServing {
			s.Owned++
			s.Epochs[n] = sh.epoch
		}
	}
	m.mu.Unlock()
	return s
}

// Close hands this member's shards over: it stops their consumers, closes
// their engines (which writes and fsyncs what they hold), deletes their
// election keys so that other members win them at once, and revokes the
// member's lease. Idempotent; later calls return the first one's error.
func (m *Member) Close() error {
	m.closeOnce.Do(func() {
		m.closing.Store(true)
		close(m.balStop) // nothing more is won
		<-m.balDone
		m.mu.Lock()
		var held []*shard
		for _, s := range m.local {
			held = append(held, s)
		}
		for c := range m.consumers {
			c.stop()
		}
		m.mu.Unlock()
		var wg sync.WaitGroup
		for _, s := range held {
			wg.Add(1)
			go func() { defer wg.Done(); m.releaseShard(s, true) }()
		}
		wg.Wait()
		m.releasing.Wait()
		m.cancel() // the watch, the balancer, the forwarders
		m.wg.Wait()
		m.mu.Lock()
		l := m.lease
		m.mu.Unlock()
		if l != nil {
			l.stop(true)
		}
		m.o.Logger.Info("fleet: left", "cluster", m.o.Cluster, "node", m.o.Node)
	})
	return m.closeErr
}

// ErrClosed is wrapped by calls on a closed Member.
var ErrClosed = errors.New("fleet: member closed")

// eventKind is what an event reports.
type eventKind uint8

const (
	eventOpened eventKind = iota + 1 // a shard serves here
	eventClosed                      // a shard was let go
)

// event is one ownership change on a member, for tests' histories.
type event struct {
	kind  eventKind
	shard int
	node  string
	epoch int64
}

func (m *Member) event(e event) {
	if m.o.onEvent != nil {
		m.o.onEvent(e)
	}
}
