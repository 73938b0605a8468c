package fleet

// Shard choice. A key's shard must be the same in every member and every
// build, so the hash is spelled out here (FNV-1a, 64 bits) rather than
// taken from hash/maphash, whose seed differs per process. Jump
// consistent hashing (Lamping and Veach, 2014) spreads keys evenly and
// needs no table; the shard count is fixed for a fleet's life, so its
// property of moving few keys when the count changes is not relied on.

// fnv64a is FNV-1a over s, without the allocation of hash/fnv.
func fnv64a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// jump maps key to a bucket in [0, buckets); buckets must be positive.
func jump(key uint64, buckets int) int {
	var b, j int64 = -1, 0
	for j < int64(buckets) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// shardOf is the shard a name (a Key, a DedupID, a schedule's Name) lives in.
func shardOf(name string, shards int) int { return jump(fnv64a(name), shards) }
