// Package fleet runs several processes over one set of shards: each shard
// is a ringwal engine over its own directory, each is owned by one member
// at a time through etcd, and every member routes what belongs to
// another member's shard to it.
//
// # The model
//
// A fleet has a fixed number of shards (Options.Shards, kept in etcd when
// the fleet is created). A message with a Key goes to the shard the Key
// hashes to (jump consistent hash), so a key's order, limits, breaker and
// pauses are those of one engine: exact. A keyless message with a
// DedupID goes to its DedupID's shard, so uniqueness holds across the
// fleet. Any other message goes to a shard the member it was given to
// serves, with no network hop. A schedule lives in the shard its Name
// hashes to and runs there, once per tick in the whole fleet.
//
// Each member holds one etcd session (client/v3/concurrency) and wins
// its share of the shards; the epoch of an ownership is the create
// revision of the shard's election key. An owner keeps what it has; on a
// join or a leave, a member with more than its share hands one over
// cleanly (its consumers stop, its engine closes, its key is deleted)
// when another has fewer. When a member dies, its lease expires after
// LeaseTTL and the others win its shards and open their directories.
//
// # Fencing
//
// A member acknowledges nothing for a shard once its lease may have
// expired: each shard engine's ringwal.Options.Fence fails once
// LeaseTTL - FenceMargin passed, on the monotonic clock, since the member
// sent the last renewal etcd confirmed. Its calls then fail with an error
// wrapping ringwal.ErrNotOwner. etcd cannot expire the lease, and so
// cannot give the shard to anyone, before that: two members never
// acknowledge for one shard at once. A paused or partitioned owner stops
// acknowledging before its successor starts; an owner cut off from a
// quorum stops too, and resumes when etcd confirms its lease again
// (consistency over availability).
//
// A batch the fence refuses after writing it is in the shard's log, and
// its next owner replays it: a refused enqueue may still be delivered.
// Everything is at least once; nothing acknowledged is lost while the
// shard's volume survives.
//
// # Epochs and the owner file
//
// Beside each shard directory, Dir/shard-NNN.owner records the epoch of
// every owner that opened the shard, fsynced before the engine opens, and
// is held (flock) by the owner while it serves. An owner whose epoch is
// older than the file's newest refuses to open the shard: a member that
// won a shard, was paused, lost its lease and resumed cannot open it
// after its successor did. A file of its own is enough because the check
// must happen before the engine opens (opening replays and may write),
// under a lock that keeps the older owner out, on the same volume as the
// log; a record in the log would add only that it travels with the log
// to object storage, which log shipping will need.
//
// The flock also means that a paused owner on the same host keeps its
// shards' files until it resumes: its successor wins the election key at
// once but opens the directory only once the paused owner, resumed,
// finds itself fenced and closes. Until then nobody acknowledges for the
// shard (the paused one is fenced, the successor not open), which is
// what the fence promises; the wait is as long as the pause. Members on
// separate hosts sharing a volume depend on the volume's flock
// (NFSv4 locks, for one).
//
// # What it owns and what it does not
//
// The package owns the shard count, membership, ownership and its
// handovers, the fence, routing (forwarding over HTTP with a bearer
// token, batched), and running consumers on the shards served here. It
// does not own durability beyond the volume: until log shipping lands, a
// shard's data is only as safe as the volume its directory is on. It does
// not change the engine: each shard is a plain ringwal engine with
// Options.Engine, and everything the engine promises holds per shard.
package fleet
