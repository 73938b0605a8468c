package fleet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/ringwal/ringwal"
)

// An embedded etcd cluster on 127.0.0.1 with its data in the test's
// temporary directory: the real server, not a fake, since what is tested
// is how leases, revisions and transactions behave.

type etcdCluster struct {
	t       testing.TB
	names   []string
	clients []url.URL
	peers   []url.URL
	dirs    []string
	mu      sync.Mutex
	servers []*embed.Etcd
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd starts an n-member etcd cluster and stops it when the test ends.
func startEtcd(t testing.TB, n int) *etcdCluster {
	t.Helper()
	c := &etcdCluster{t: t, servers: make([]*embed.Etcd, n)}
	root := t.TempDir()
	var initial []string
	for i := range n {
		c.names = append(c.names, fmt.Sprintf("e%d", i))
		cu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
		pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
		c.clients = append(c.clients, *cu)
		c.peers = append(c.peers, *pu)
		c.dirs = append(c.dirs, filepath.Join(root, c.names[i]))
		initial = append(initial, c.names[i]+"="+pu.String())
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.start(i, strings.Join(initial, ","), embed.ClusterStateFlagNew) }()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for i := range n {
			c.stop(i)
		}
	})
	return c
}

func (c *etcdCluster) start(i int, initial, state string) error {
	cfg := embed.NewConfig()
	cfg.Name = c.names[i]
	cfg.Dir = c.dirs[i]
	cfg.ListenClientUrls = []url.URL{c.clients[i]}
	cfg.AdvertiseClientUrls = []url.URL{c.clients[i]}
	cfg.ListenPeerUrls = []url.URL{c.peers[i]}
	cfg.AdvertisePeerUrls = []url.URL{c.peers[i]}
	cfg.InitialCluster = initial
	cfg.InitialClusterToken = "ringwal-fleet-test"
	cfg.ClusterState = state
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return fmt.Errorf("etcd %s did not become ready", c.names[i])
	}
	c.mu.Lock()
	c.servers[i] = e
	c.mu.Unlock()
	return nil
}

// stop stops member i (its data stays: restart brings it back).
func (c *etcdCluster) stop(i int) {
	c.mu.Lock()
	e := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if e != nil {
		e.Close()
	}
}

func (c *etcdCluster) endpoints() []string {
	var out []string
	for _, u := range c.clients {
		out = append(out, u.String())
	}
	return out
}

// client returns a client of the cluster, closed when the test ends.
func (c *etcdCluster) client(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	if len(endpoints) == 0 {
		endpoints = c.endpoints()
	}
	cl, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// history records every member's ownership events in one order.
type history struct {
	mu     sync.Mutex
	events []event
}

func (h *history) record(e event) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

// check reports the first violation of one owner at a time per shard, or
// of epochs growing with each open.
func (h *history) check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	open := map[int]event{}
	last := map[int]int64{}
	for i, e := range h.events {
		switch e.kind {
		case eventOpened:
			if o, ok := open[e.shard]; ok {
				return fmt.Errorf("event %d: shard %d opened by %s (epoch %d) while %s (epoch %d) has it", i, e.shard, e.node, e.epoch, o.node, o.epoch)
			}
			if e.epoch <= last[e.shard] {
				return fmt.Errorf("event %d: shard %d opened under epoch %d after epoch %d", i, e.shard, e.epoch, last[e.shard])
			}
			open[e.shard], last[e.shard] = e, e.epoch
		case eventClosed:
			if o, ok := open[e.shard]; ok && o.node == e.node && o.epoch == e.epoch {
				delete(open, e.shard)
			}
		}
	}
	return nil
}

// testMember is an in-process member behind an httptest server.
type testMember struct {
	*Member
	srv *httptest.Server
}

// lateHandler serves the member's Handler once it exists: the member
// needs its URL before Join, the server the member's Handler after.
type lateHandler struct{ h atomic.Pointer[http.Handler] }

func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := l.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	http.Error(w, "not joined yet", http.StatusServiceUnavailable)
}

func baseOptions(cl *clientv3.Client, cluster, node, dir string) Options {
	return Options{
		Etcd: cl, Cluster: cluster, Node: node, Dir: dir, Shards: 8,
		LeaseTTL: 2 * time.Second, Token: "secret",
		Engine: ringwal.Options{Durability: ringwal.Write},
	}
}

// join starts a member with o (Advertise filled in) and closes it when
// the test ends.
func join(t testing.TB, o Options) *testMember {
	t.Helper()
	var lh lateHandler
	srv := httptest.NewServer(&lh)
	o.Advertise = srv.URL
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := Join(ctx, o)
	if err != nil {
		srv.Close()
	}
	require.NoError(t, err)
	h := m.Handler()
	lh.h.Store(&h)
	tm := &testMember{Member: m, srv: srv}
	t.Cleanup(func() { tm.close() })
	return tm
}

func (tm *testMember) close() {
	_ = tm.Member.Close()
	tm.srv.Close()
}

// eventually polls cond every 20 ms until it holds; the bound only turns
// a hang into a failure, nothing is asserted about the time taken.
func eventually(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", bound, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled reports whether ms own every shard between them, each its share.
func settled(ms []*testMember) bool {
	if len(ms) == 0 {
		return false
	}
	shards := ms[0].shards
	seen := map[int]bool{}
	nodes := make([]string, len(ms))
	for i, m := range ms {
		nodes[i] = m.o.Node
	}
	for _, m := range ms {
		owned := m.Owned()
		idx := 0
		for _, n := range nodes {
			if n < m.o.Node {
				idx++
			}
		}
		if len(owned) != share(shards, len(ms), idx) {
			return false
		}
		for _, n := range owned {
			if seen[n] {
				return false
			}
			seen[n] = true
		}
	}
	return len(seen) == shards
}
