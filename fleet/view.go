package fleet

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// MemberInfo is a member as the fleet sees it.
type MemberInfo struct {
	// Node is the member's Options.Node.
	Node string `json:"node"`
	// Advertise is where its Handler is reached.
	Advertise string `json:"advertise"`
	// Shards are the shards it owns, ascending.
	Shards []int `json:"shards"`
}

// ownerRec is one key under a shard's owner prefix.
type ownerRec struct {
	key   string
	node  string
	lease clientv3.LeaseID
	rev   int64 // create revision: the epoch, for the lowest one
}

// memberRec is a member's key.
type memberRec struct {
	info  MemberInfo
	lease clientv3.LeaseID
}

// view is this member's picture of the fleet's keys in etcd, kept by one
// watch (watchView). It lags etcd by the watch's delay: a decision on it
// is either made safe by a transaction (campaigns compare in etcd) or by
// the revision it has seen (rev).
type view struct {
	cluster string
	mu      sync.Mutex
	rev     int64 // the etcd revision the view reflects
	members map[string]memberRec
	owners  []map[string]ownerRec // per shard, by key
	changed chan struct{}         // cap 1: something changed
}

func newView(cluster string, shards int) *view {
	v := &view{cluster: cluster, members: map[string]memberRec{}, owners: make([]map[string]ownerRec, shards), changed: make(chan struct{}, 1)}
	for i := range v.owners {
		v.owners[i] = map[string]ownerRec{}
	}
	return v
}

func (v *view) notify() {
	select {
	case v.changed <- struct{}{}:
	default:
	}
}

// apply puts (or, with del, removes) one key. v.mu held.
func (v *view) applyLocked(kv *mvccpb.KeyValue, del bool) {
	key := string(kv.Key)
	p := clusterPrefix(v.cluster)
	if node, ok := cutPrefix(key, membersPrefix(v.cluster)); ok {
		if del {
			delete(v.members, node)
			return
		}
		var mi MemberInfo
		if json.Unmarshal(kv.Value, &mi) != nil {
			return
		}
		mi.Node = node
		v.members[node] = memberRec{info: mi, lease: clientv3.LeaseID(kv.Lease)}
		return
	}
	if n, ok := parseOwnerKey(p, key); ok && n < len(v.owners) {
		if del {
			delete(v.owners[n], key)
			return
		}
		v.owners[n][key] = ownerRec{key: key, node: string(kv.Value), lease: clientv3.LeaseID(kv.Lease), rev: kv.CreateRevision}
	}
}

// owner is shard n's owner: the key with the lowest create revision.
func (v *view) owner(n int) (ownerRec, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.ownerLocked(n)
}

func (v *view) ownerLocked(n int) (ownerRec, bool) {
	var best ownerRec
	found := false
	for _, r := range v.owners[n] {
		if !found || r.rev < best.rev {
			best, found = r, true
		}
	}
	return best, found
}

// advertise is where node is reached, if the view knows.
func (v *view) advertise(node string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	m, ok := v.members[node]
	return m.info.Advertise, ok
}

// snapshot returns the members (sorted by node, each with its shards)
// and the view's revision.
func (v *view) snapshot() ([]MemberInfo, int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	by := map[string]*MemberInfo{}
	out := make([]MemberInfo, 0, len(v.members))
	for _, m := range v.members {
		out = append(out, MemberInfo{Node: m.info.Node, Advertise: m.info.Advertise, Shards: []int{}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	for i := range out {
		by[out[i].Node] = &out[i]
	}
	for n := range v.owners {
		if o, ok := v.ownerLocked(n); ok {
			if mi := by[o.node]; mi != nil {
				mi.Shards = append(mi.Shards, n)
			}
		}
	}
	return out, v.rev
}

// load replaces the view with what etcd holds now and returns its revision.
func (v *view) load(ctx context.Context, c *clientv3.Client) (int64, error) {
	resp, err := c.Get(ctx, clusterPrefix(v.cluster), clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	v.mu.Lock()
	v.members = map[string]memberRec{}
	for i := range v.owners {
		v.owners[i] = map[string]ownerRec{}
	}
	for _, kv := range resp.Kvs {
		v.applyLocked(kv, false)
	}
	v.rev = resp.Header.Revision
	v.mu.Unlock()
	v.notify()
	return resp.Header.Revision, nil
}

// watch keeps the view current until ctx ends: a load, then a watch from
// the revision after it; when the watch fails (compaction, no leader, a
// lost connection) it loads again.
func (v *view) watch(ctx context.Context, c *clientv3.Client, log *slog.Logger) {
	for ctx.Err() == nil {
		rev, err := v.load(ctx, c)
		if err != nil {
			if ctx.Err() == nil {
				log.Debug("fleet: loading the fleet's keys", "err", err)
			}
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		wch := c.Watch(clientv3.WithRequireLeader(wctx), clusterPrefix(v.cluster), clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		for resp := range wch {
			if err := resp.Err(); err != nil {
				if ctx.Err() == nil && !strings.Contains(err.Error(), "context canceled") {
					log.Debug("fleet: watch ended", "err", err)
				}
				break
			}
			v.mu.Lock()
			for _, ev := range resp.Events {
				v.applyLocked(ev.Kv, ev.Type == clientv3.EventTypeDelete)
			}
			v.rev = max(v.rev, resp.Header.Revision)
			v.mu.Unlock()
			v.notify()
		}
		cancel()
		for range wch { // drain so the watcher's goroutine can end
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}
