package fleet

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// TestOneMemberServesEveryShard: a lone member owns every shard, routes
// keyed messages to their shards, delivers each, and reads and cancels
// them by fleet ID.
func TestOneMemberServesEveryShard(t *testing.T) {
	ec := startEtcd(t, 1)
	cl := ec.client(t)
	m := join(t, baseOptions(cl, "one", "a", t.TempDir()))
	eventually(t, 20*time.Second, "a owns every shard", func() bool { return len(m.Owned()) == 8 })

	id, err := m.Enqueue(context.Background(), ringwal.Message{Key: "slack", Payload: []byte("x"), Delay: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, shardOf("slack", 8), id.Shard)
	info, err := m.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Delayed, info.State)
	require.NoError(t, m.Cancel(id))
	_, err = m.Get(id)
	assert.ErrorIs(t, err, ringwal.ErrNotFound)

	var mu sync.Mutex
	got := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, 2, func(_ context.Context, d ringwal.Delivery) error {
			mu.Lock()
			got[string(d.Message.Payload)]++
			mu.Unlock()
			return nil
		})
	}()
	var msgs []ringwal.Message
	for i := range 100 {
		msgs = append(msgs, ringwal.Message{Key: fmt.Sprintf("k%d", i%7), Payload: []byte(fmt.Sprint(i))})
	}
	ids, err := m.EnqueueBatch(context.Background(), msgs)
	require.NoError(t, err)
	for i, id := range ids {
		assert.Equal(t, shardOf(msgs[i].Key, 8), id.Shard)
	}
	eventually(t, 10*time.Second, "100 delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 100
	})
	cancel()
	require.NoError(t, <-done)
}

// TestMembersStartingTogetherOwnOneShardEach: two or three members that
// join at once end with one owner per shard, each its share, and the
// ownership history (every open and close on every member) never has two
// owners of a shard at once, nor an epoch that does not grow. Repeated
// for FLEET_ROUNDS rounds (default 100).
func TestMembersStartingTogetherOwnOneShardEach(t *testing.T) {
	ec := startEtcd(t, 1)
	cl := ec.client(t)
	rounds := envInt("FLEET_ROUNDS", 100)
	var took []time.Duration
	for r := range rounds {
		k := 2 + r%2
		var h history
		dir := t.TempDir()
		cluster := fmt.Sprintf("together-%d", r)
		ms := make([]*testMember, k)
		start := time.Now()
		var wg sync.WaitGroup
		for i := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := baseOptions(cl, cluster, fmt.Sprintf("m%d", i), dir)
				o.onEvent = h.record
				ms[i] = join(t, o)
			}()
		}
		wg.Wait()
		eventually(t, 30*time.Second, "the members settle", func() bool { return settled(ms) })
		took = append(took, time.Since(start))
		require.NoError(t, h.check(), "round %d", r)
		for _, m := range ms {
			m.close()
		}
		require.NoError(t, h.check(), "round %d after close", r)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("%d rounds: settled in p50 %v, max %v", rounds, took[len(took)/2], took[len(took)-1])
}
