package ringwal

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal/classify"
)

// A message redriven while a checkpoint runs, so that the snapshot sees
// it live again but its Redrive's records land after the snapshot's cut,
// and then dead-lettered again, is a dead letter after a reopen (replay
// once took the Redrive for one logged ahead of its dead-letter record,
// and dropped the later dead-lettering).
func TestRedriveAcrossACheckpointThenDeadAgainStaysDead(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	permanent := classify.Mark(errors.New("rejected"), classify.Permanent)
	id, err := e.TryEnqueue(Message{Payload: []byte("x")})
	require.NoError(t, err)
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Nack(d.Lease, permanent))

	release := holdWriter(t, e)
	redriven := make(chan error, 1)
	go func() { redriven <- e.Redrive(id) }()
	// The Redrive takes it out of the store, and its records wait in the
	// batch being filled: whenever the checkpoint takes its cut, it is the
	// held batch's, before the Redrive's; the snapshot, taken once the
	// writer goes on, sees the message live.
	require.Eventually(t, func() bool { return e.dead.Len() == 0 }, 10*time.Second, 100*time.Microsecond)
	checkpointed := make(chan error, 1)
	go func() { checkpointed <- e.Checkpoint() }()
	release()
	require.NoError(t, <-redriven)
	require.NoError(t, <-checkpointed)

	drain := func() Delivery {
		for {
			d, ok := e.TryDequeue()
			require.True(t, ok)
			if d.ID == id {
				return d
			}
			require.NoError(t, e.Ack(d.Lease))
		}
	}
	require.NoError(t, e.Nack(drain().Lease, permanent))
	require.NoError(t, e.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, Dead, info.State, "%+v", info)
}
