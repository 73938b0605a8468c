package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// The fence. etcd expires a lease TTL after the last renewal its leader
// received (and only extends it on a leader change), and a renewal is
// received after it was sent. So a lease renewed by a request sent at t
// lives at least until t + TTL, by any clock that runs at the rate of the
// leader's. The member renews by KeepAliveOnce, noting each request's send
// time on the monotonic clock, and acknowledges nothing once LeaseTTL -
// FenceMargin passed since the send time of the last renewal etcd
// confirmed. The margin covers clock rates and the time between the
// fence's check and the acknowledgement it permits. So a paused,
// partitioned or quorum-less owner stops acknowledging before etcd can
// give its shards to anyone: two members never acknowledge for one shard
// at once.
//
// The session (client/v3/concurrency) renews the same lease with its own
// KeepAlive stream, as etcd's election helpers expect; that stream's
// replies are not exposed with their send times, which is why the fence
// keeps its own.

// epoch0 is the zero of mono: the monotonic clock, in nanoseconds.
var epoch0 = time.Now()

func mono() int64 { return int64(time.Since(epoch0)) }

// lease is one incarnation of a member in etcd: its lease and session,
// and the deadline past which it acknowledges nothing. A member whose
// lease is lost (etcd expired it) takes a new one: the shards of the old
// stay fenced for good.
type lease struct {
	id     clientv3.LeaseID
	c      *clientv3.Client
	sess   *concurrency.Session
	ttl    time.Duration
	margin time.Duration
	log    *slog.Logger

	// deadline is mono() past which the fence fails; lost forces it.
	deadline atomic.Int64
	isLost   atomic.Bool
	lost     chan struct{} // closed once etcd said the lease is gone
	lostOnce sync.Once

	cancel context.CancelFunc
	done   chan struct{} // the renewal loop returned
}

// grantLease takes a new lease and its session, and starts renewing it;
// stop ends the renewals.
func grantLease(ctx context.Context, c *clientv3.Client, ttl, margin time.Duration, log *slog.Logger) (*lease, error) {
	sent := mono()
	g, err := c.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		return nil, fmt.Errorf("fleet: granting a lease: %w", err)
	}
	l := &lease{id: g.ID, c: c, ttl: ttl, margin: margin, log: log, lost: make(chan struct{}), done: make(chan struct{})}
	l.confirm(sent, g.TTL)
	lctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	sess, err := concurrency.NewSession(c, concurrency.WithLease(g.ID), concurrency.WithContext(lctx))
	if err != nil {
		cancel()
		rctx, rcancel := context.WithTimeout(context.Background(), ttl)
		_, _ = c.Revoke(rctx, g.ID)
		rcancel()
		return nil, fmt.Errorf("fleet: starting a session: %w", err)
	}
	l.sess = sess
	go l.renew(lctx, c)
	return l, nil
}

// confirm moves the deadline to sent + TTL - margin (never back): etcd
// renewed the lease, granting ttlSec seconds, on a request sent at sent.
func (l *lease) confirm(sent int64, ttlSec int64) {
	ttl := min(l.ttl, time.Duration(ttlSec)*time.Second)
	d := sent + int64(ttl-l.margin)
	for {
		old := l.deadline.Load()
		if d <= old || l.isLost.Load() {
			return
		}
		if l.deadline.CompareAndSwap(old, d) {
			return
		}
	}
}

// valid is the fence's check: an atomic load and a read of the monotonic
// clock.
func (l *lease) valid() bool { return mono() < l.deadline.Load() }

// untilDeadline is how long the fence holds from now (negative: failing).
func (l *lease) untilDeadline() time.Duration { return time.Duration(l.deadline.Load() - mono()) }

func (l *lease) markLost() {
	l.lostOnce.Do(func() {
		l.isLost.Store(true)
		l.deadline.Store(0)
		close(l.lost)
	})
}

// renew renews the lease every TTL/4 until ctx ends or etcd says it is
// gone. Each renewal waits at most until the fence would fail anyway;
// one that fails is retried at once, so that a member cut off from etcd
// for less than the margin's worth never stops acknowledging.
func (l *lease) renew(ctx context.Context, c *clientv3.Client) {
	defer close(l.done)
	every := l.ttl / 4
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		sent := mono()
		rctx, cancel := context.WithTimeout(ctx, max(l.untilDeadline(), every))
		resp, err := c.KeepAliveOnce(rctx, l.id)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			l.log.Warn("fleet: the lease expired; its shards are fenced", "lease", fmt.Sprintf("%x", l.id))
			l.markLost()
			return
		case err != nil:
			l.log.Debug("fleet: lease renewal failed", "err", err, "fence_in", l.untilDeadline())
			wait := min(every/4, 100*time.Millisecond)
			if !sleepCtx(ctx, wait) {
				return
			}
			continue
		}
		l.confirm(sent, resp.TTL)
		t.Reset(max(0, every-time.Duration(mono()-sent)))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// stop ends the renewals and, if revoke, revokes the lease (deleting the
// member's keys at once rather than a TTL later).
func (l *lease) stop(revoke bool) {
	l.markLost()    // nothing is acknowledged under it from now on
	l.sess.Orphan() // its Close would wait up to a minute for an unreachable etcd
	l.cancel()
	<-l.done
	if revoke {
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
		_, _ = l.c.Revoke(ctx, l.id)
		cancel()
	}
}

// sleepCtx sleeps d unless ctx ends first; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
