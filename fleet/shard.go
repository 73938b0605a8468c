package fleet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ringwal/ringwal"
)

// A shard held by this member goes opening -> serving -> leaving -> gone.
// Opening: the member won its election key and waits for the owner file
// (a paused predecessor on this host holds it until it resumes and closes),
// checks the epoch, opens the engine. Serving: consumers run on it.
// Leaving: consumers stopped, engine closed, owner file released, and, on
// a clean handover, the election key deleted. The member's lock (m.mu)
// orders the transitions; the fence reads only atomics.
const (
	shardOpening int32 = iota
	shardServing
	shardLeaving
)

type shard struct {
	m     *Member
	n     int
	lease *lease
	elect *concurrency.Election // Key() is the election key, Rev() the epoch
	epoch int64

	state   atomic.Int32
	revoked atomic.Bool // the key is gone or the member is closing: fence for good

	ctx    context.Context // ends when the shard starts leaving
	cancel context.CancelFunc
	opened chan struct{} // closed when the opener returned

	// Set by the opener before state becomes serving; read after.
	eng  *ringwal.Engine
	file *ownerFile

	runs sync.WaitGroup // consumers' runs on this shard
}

// fence is the shard engine's Options.Fence: two atomic loads and a read
// of the monotonic clock on the writer's path; only a refusal costs more.
func (s *shard) fence() error {
	if !s.revoked.Load() && s.lease.valid() {
		return nil
	}
	s.m.stats.fenceRefusals.Add(1)
	return s.notOwner()
}

// notOwner is the error of a refused call: it names the member and its
// epoch, and the new owner when the view knows one.
func (s *shard) notOwner() error {
	why := "its lease is not confirmed"
	if s.revoked.Load() {
		why = "it no longer owns the shard"
	}
	if o, ok := s.m.view.owner(s.n); ok && o.key != s.elect.Key() {
		return fmt.Errorf("%w: fleet: shard %d: member %s (epoch %d): %s; owner now %s (epoch %d)",
			ringwal.ErrNotOwner, s.n, s.m.o.Node, s.epoch, why, o.node, o.rev)
	}
	return fmt.Errorf("%w: fleet: shard %d: member %s (epoch %d): %s", ringwal.ErrNotOwner, s.n, s.m.o.Node, s.epoch, why)
}

func (m *Member) shardDir(n int) string { return filepath.Join(m.o.Dir, fmt.Sprintf("shard-%03d", n)) }

// open runs on its own goroutine once the member won shard s: it waits
// for the owner file, claims the epoch, opens the engine and makes the
// shard serving, or, if any step fails for good, lets it go.
func (s *shard) open() {
	m := s.m
	err := s.openFiles()
	if err != nil {
		close(s.opened)
		if s.ctx.Err() == nil {
			m.o.Logger.Error("fleet: cannot open a won shard; giving it up", "shard", s.n, "epoch", s.epoch, "err", err)
		}
		m.releaseShard(s, true)
		return
	}
	m.mu.Lock()
	if s.state.Load() != shardOpening {
		// Released while it opened: the releaser, waiting for opened,
		// closes the engine.
		m.mu.Unlock()
		close(s.opened)
		return
	}
	s.state.Store(shardServing)
	for c := range m.consumers {
		s.startRun(c)
	}
	m.mu.Unlock()
	close(s.opened)
	m.stats.won.Add(1)
	m.o.Logger.Info("fleet: serving shard", "shard", s.n, "epoch", s.epoch)
	m.event(event{kind: eventOpened, shard: s.n, node: m.o.Node, epoch: s.epoch})
	m.kick()
}

// openFiles takes the owner file (retrying while a predecessor holds it),
// claims the epoch and opens the engine (retrying while the directory is
// locked: a non-fleet opener, or a predecessor's engine still closing).
func (s *shard) openFiles() error {
	path := s.m.shardDir(s.n)
	for {
		f, err := lockOwnerFile(path + ".owner")
		if err == nil {
			s.file = f
			break
		}
		if !errors.Is(err, errOwnerBusy) {
			return err
		}
		if !sleepCtx(s.ctx, 50*time.Millisecond) {
			return s.ctx.Err()
		}
	}
	if err := s.file.claim(s.epoch, s.m.o.Node); err != nil {
		return err
	}
	eo := s.m.o.Engine
	eo.Fence = s.fence
	for {
		e, err := ringwal.Open(path, eo)
		if err == nil {
			s.eng = e
			return nil
		}
		if !errors.Is(err, ringwal.ErrLocked) {
			return err
		}
		if !sleepCtx(s.ctx, 50*time.Millisecond) {
			return s.ctx.Err()
		}
	}
}

// engine returns the shard's engine if it is serving.
func (s *shard) engine() (*ringwal.Engine, bool) {
	if s.state.Load() != shardServing {
		return nil, false
	}
	return s.eng, true
}

// releaseShard lets s go: it stops its consumers, closes its engine,
// releases its owner file and, if resign and the lease still holds,
// deletes its election key so that another member may win it at once
// (a clean handover). Without resign (the lease is gone) etcd deleted
// the key already. Safe to call more than once: the first call does it.
func (m *Member) releaseShard(s *shard, resign bool) {
	m.mu.Lock()
	if s.state.Load() == shardLeaving {
		m.mu.Unlock()
		return
	}
	s.state.Store(shardLeaving)
	s.cancel()
	m.mu.Unlock()

	if !resign {
		// Nothing more is acknowledged for it from here on. On a clean
		// handover the engine acknowledges what its consumers settle
		// while they stop, so the fence stays open until it is closed.
		s.revoked.Store(true)
	}
	s.runs.Wait()
	<-s.opened // the opener returned: s.eng and s.file are settled
	var cerr error
	if s.eng != nil {
		cerr = s.eng.Close()
	}
	s.revoked.Store(true)
	if s.file != nil {
		_ = s.file.release()
	}
	m.event(event{kind: eventClosed, shard: s.n, node: m.o.Node, epoch: s.epoch})
	if resign && s.lease.valid() {
		ctx, cancel := context.WithTimeout(context.Background(), m.o.LeaseTTL)
		if err := s.elect.Resign(ctx); err != nil {
			m.o.Logger.Warn("fleet: resigning a shard", "shard", s.n, "err", err)
		}
		cancel()
	}
	if cerr != nil && !errors.Is(cerr, ringwal.ErrNotOwner) {
		m.o.Logger.Warn("fleet: closing a shard's engine", "shard", s.n, "err", cerr)
	}
	m.mu.Lock()
	if m.local[s.n] == s {
		delete(m.local, s.n)
	}
	m.mu.Unlock()
	m.stats.released.Add(1)
	m.o.Logger.Info("fleet: released shard", "shard", s.n, "epoch", s.epoch, "resigned", resign)
	m.kick()
}
