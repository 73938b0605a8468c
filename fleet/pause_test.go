package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// members asks c for the fleet as its view has it.
func (c *child) members() ([]MemberInfo, bool) {
	resp, err := authed(http.MethodGet, c.url+"/fleet/v1/members", nil)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var ms []MemberInfo
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&ms) != nil {
		return nil, false
	}
	return ms, true
}

// checkShardFiles opens every shard directory after the members closed:
// each must open cleanly (no owner left it damaged), and its owner file
// must list epochs that only grow.
func checkShardFiles(t *testing.T, s childSpec) {
	for n := range s.shards {
		dir := filepath.Join(s.dir, fmt.Sprintf("shard-%03d", n))
		e, err := ringwal.Open(dir, ringwal.Options{})
		require.NoError(t, err, "shard %d", n)
		require.NoError(t, e.Close())
		f, err := lockOwnerFile(dir + ".owner")
		require.NoError(t, err)
		es, err := f.entries()
		require.NoError(t, err)
		require.NoError(t, f.release())
		for i := 1; i < len(es); i++ {
			assert.Greater(t, es[i].Epoch, es[i-1].Epoch, "shard %d: owner file %v", n, es)
		}
	}
}

// TestOwnerPausedPastTTLIsFenced: an owner stopped (SIGSTOP) for longer
// than its lease; the other member wins its shards in etcd at once but
// opens them only when the paused one, resumed (SIGCONT), finds its lease
// gone, fences and closes them. Nothing the paused owner acknowledges
// comes after it resumed (every request it took while stopped is refused
// or forwarded: no answer after SIGCONT carries its old epochs); nothing
// acknowledged is lost; every shard's log opens cleanly afterwards and its
// owner file lists growing epochs.
func TestOwnerPausedPastTTLIsFenced(t *testing.T) {
	ec := startEtcd(t, 1)
	s := newFaultSpec(t, ec, "pause")
	cs := startChildren(t, s, "a", "b")
	a, b := cs[0], cs[1]
	st, ok := a.status()
	require.True(t, ok)
	aEpochs := st.Stats.Epochs
	require.NotEmpty(t, aEpochs)

	bst, ok := b.status()
	require.True(t, ok)
	p := newProducer(cs)
	ctx, cancel := context.WithCancel(context.Background())
	wg := p.run(ctx)
	eventually(t, 20*time.Second, "some messages acknowledged", func() bool { return len(p.ackedSet()) >= 300 })

	p.setTargets([]*child{b})
	a.signal(syscall.SIGSTOP)
	stopped := time.Now()
	// Requests that reach the paused member wait in its socket; it
	// answers them, if the client still listens, only after SIGCONT.
	var direct sync.WaitGroup
	for range 4 {
		direct.Add(1)
		go func() {
			defer direct.Done()
			for ctx.Err() == nil {
				p.once(a, 5)
			}
		}()
	}
	eventually(t, 20*time.Second, "b has won every shard in etcd", func() bool {
		ms, ok := b.members()
		return ok && len(ms) == 1 && ms[0].Node == "b" && len(ms[0].Shards) == s.shards
	})
	won := time.Since(stopped)
	time.Sleep(time.Second) // paused well past the lease
	a.signal(syscall.SIGCONT)
	resumed := time.Now()
	eventually(t, 30*time.Second, "b opened the paused owner's shards", func() bool {
		st, ok := b.status()
		return ok && st.Stats.Won >= bst.Stats.Won+uint64(len(aEpochs))
	})
	opened := time.Since(resumed)
	eventually(t, 30*time.Second, "a and b share the shards again", func() bool {
		_, ok := cover(cs, s.shards)
		return ok
	})
	n := len(p.ackedSet())
	eventually(t, 20*time.Second, "more acknowledged after the handback", func() bool { return len(p.ackedSet()) >= n+200 })
	cancel()
	wg.Wait()
	direct.Wait()
	ast, _ := a.status()

	acked := p.ackedSet()
	for payload, k := range acked {
		if old, ok := aEpochs[k.id.Shard]; ok && k.epoch == old && k.at.After(resumed) {
			t.Errorf("%s acknowledged under the paused owner's epoch %d of shard %d after SIGCONT", payload, old, k.id.Shard)
		}
	}
	lost, dups, _ := waitDelivered(t, s, acked)
	require.Empty(t, lost, "acknowledged but never delivered (%d of %d)", len(lost), len(acked))
	t.Logf("paused owner: b won its shards %v after SIGSTOP, opened them %v after SIGCONT; %d acknowledged, 0 lost, %d duplicates; a's fence refused %d batches",
		won, opened, len(acked), dups, ast.Stats.FenceRefusals)
	a.stop(t)
	b.stop(t)
	checkShardFiles(t, s)
}
