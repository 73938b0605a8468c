package fleet

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The fleet's etcd keys, all under /ringwal/<Cluster>/:
//
//	shards                 the shard count, written once when the fleet is created
//	members/<Node>         a member's MemberInfo (JSON), on its lease
//	owner/NNN/<lease hex>  shard NNN's election key, on its owner's lease
//
// The owner keys are laid out as client/v3/concurrency's Election lays
// out its candidates (prefix, then the lease in hex), so the election API
// reads them: the owner is the key with the lowest create revision, and
// that revision is the owner's epoch. A member only ever creates one when
// the prefix is empty (tryCampaign), so there is no queue behind an owner.

func clusterPrefix(cluster string) string { return "/ringwal/" + cluster + "/" }

func shardsKey(cluster string) string { return clusterPrefix(cluster) + "shards" }

func membersPrefix(cluster string) string { return clusterPrefix(cluster) + "members/" }

func ownerPrefix(cluster string, shard int) string {
	return fmt.Sprintf("%sowner/%03d/", clusterPrefix(cluster), shard)
}

// parseOwnerKey returns the shard an owner key under prefix p belongs to.
func parseOwnerKey(p, key string) (int, bool) {
	rest, ok := cutPrefix(key, p+"owner/")
	if !ok || len(rest) < 4 || rest[3] != '/' {
		return 0, false
	}
	n, err := strconv.Atoi(rest[:3])
	return n, err == nil
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) < len(p) || s[:len(p)] != p {
		return "", false
	}
	return s[len(p):], true
}

// ensureShards creates the fleet's shard count if the fleet is new, and
// otherwise returns the count it was created with; want 0 takes it, any
// other value must match it.
func ensureShards(ctx context.Context, c *clientv3.Client, cluster string, want int) (int, error) {
	n := want
	if n == 0 {
		n = defaultShards
	}
	k := shardsKey(cluster)
	resp, err := c.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, strconv.Itoa(n))).
		Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return 0, fmt.Errorf("fleet: reading the shard count of %q: %w", cluster, err)
	}
	if resp.Succeeded {
		return n, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) != 1 {
		return 0, fmt.Errorf("fleet: the shard count of %q vanished while read", cluster)
	}
	have, err := strconv.Atoi(string(kvs[0].Value))
	if err != nil || have <= 0 || have > maxShards {
		return 0, fmt.Errorf("fleet: %s holds %q, not a shard count", k, kvs[0].Value)
	}
	if want != 0 && want != have {
		return 0, invalidf("Options.Shards %d: fleet %q was created with %d shards", want, cluster, have)
	}
	return have, nil
}
