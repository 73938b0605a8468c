package fleet

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ringwal/ringwal"
)

// Calls on one message or schedule go to the shard that holds it: here,
// or its owner over HTTP; while the shard has no owner they wait for one,
// 3 × LeaseTTL at most.

// onShard runs local on shard n if it serves here, else remote with the
// owner's node, retrying while ownership moves.
func (m *Member) onShard(n int, local func(*ringwal.Engine) error, remote func(ctx context.Context, node string) error) error {
	if n < 0 || n >= m.shards {
		return invalidf("shard %d outside 0 to %d", n, m.shards-1)
	}
	ctx, cancel := context.WithTimeout(m.ctx, 3*m.o.LeaseTTL)
	defer cancel()
	for attempt := 1; ; attempt++ {
		var err error
		if m.isClosing() {
			return ErrClosed
		}
		if _, e, ok := m.localShard(n); ok {
			err = local(e)
		} else if o, ok := m.view.owner(n); ok && o.node != m.o.Node {
			err = remote(ctx, o.node)
		} else {
			err = fmt.Errorf("%w: fleet: shard %d has no owner yet", ringwal.ErrNotOwner, n)
		}
		if err == nil || !retryable(err) {
			return err
		}
		if !sleepCtx(ctx, min(time.Duration(attempt)*10*time.Millisecond, 100*time.Millisecond)) {
			return err
		}
	}
}

func (m *Member) remoteURL(node, path string) (string, error) {
	base, ok := m.view.advertise(node)
	if !ok {
		return "", fmt.Errorf("%w: fleet: member %s is not in the view", errUnreachable, node)
	}
	return base + path, nil
}

func messagePath(id ID) string {
	return "/fleet/v1/messages/" + strconv.Itoa(id.Shard) + "/" + strconv.FormatUint(uint64(id.ID), 10)
}

// Get returns the message id names, as its shard's Engine.Get does.
func (m *Member) Get(id ID) (ringwal.Info, error) {
	var info ringwal.Info
	err := m.onShard(id.Shard, func(e *ringwal.Engine) error {
		var err error
		info, err = e.Get(id.ID)
		return err
	}, func(ctx context.Context, node string) error {
		base, err := m.remoteURL(node, "")
		if err != nil {
			return err
		}
		return m.call(ctx, base, messagePath(id), nil, &info)
	})
	return info, err
}

// Cancel cancels the message id names, as its shard's Engine.Cancel does.
func (m *Member) Cancel(id ID) error {
	return m.onShard(id.Shard, func(e *ringwal.Engine) error {
		return e.Cancel(id.ID)
	}, func(ctx context.Context, node string) error {
		base, err := m.remoteURL(node, "")
		if err != nil {
			return err
		}
		return m.call(ctx, base, messagePath(id)+"/cancel", struct{}{}, nil)
	})
}

// AddSchedule adds (or replaces) s in the shard its Name hashes to, as
// that shard's Engine.AddSchedule does. The shard's log keeps it, so it
// moves with the shard: whoever owns the shard runs it, once per tick in
// the whole fleet, across failovers (a tick the dying owner ran but
// whose enqueue it did not acknowledge runs again: at least once). Its
// Message is enqueued in that shard, whatever its Key.
func (m *Member) AddSchedule(s ringwal.Schedule) error {
	if s.Name == "" {
		return invalidf("AddSchedule: empty Name")
	}
	n := shardOf(s.Name, m.shards)
	return m.onShard(n, func(e *ringwal.Engine) error {
		return e.AddSchedule(s)
	}, func(ctx context.Context, node string) error {
		base, err := m.remoteURL(node, "")
		if err != nil {
			return err
		}
		return m.call(ctx, base, "/fleet/v1/schedules/"+strconv.Itoa(n), s, nil)
	})
}
