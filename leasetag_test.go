package ringwal_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/internal/enginetest"
)

// A lease belongs to the engine that handed it out. Two fresh engines put
// their first message in the same slot at the same generation, so a lease
// that named only the slot and generation would settle the other engine's
// message.
func TestALeaseOfAnotherEngineIsStale(t *testing.T) {
	settle := []struct {
		name string
		call func(e *ringwal.Engine, l ringwal.Lease) error
	}{
		{"Ack", func(e *ringwal.Engine, l ringwal.Lease) error { return e.Ack(l) }},
		{"Nack", func(e *ringwal.Engine, l ringwal.Lease) error { return e.Nack(l, errors.New("x")) }},
		{"Extend", func(e *ringwal.Engine, l ringwal.Lease) error { return e.Extend(l, 1) }},
		{"AckBatch", func(e *ringwal.Engine, l ringwal.Lease) error { return e.AckBatch([]ringwal.Lease{l}) }},
	}
	for _, tc := range settle {
		t.Run(tc.name, func(t *testing.T) {
			a := enginetest.Open(t, "", ringwal.Options{})
			b := enginetest.Open(t, "", ringwal.Options{})
			idA, err := a.TryEnqueue(ringwal.Message{Payload: []byte("a")})
			require.NoError(t, err)
			idB, err := b.TryEnqueue(ringwal.Message{Payload: []byte("b")})
			require.NoError(t, err)
			require.Equal(t, idA, idB, "precondition: both engines' messages have the same ID")
			da := enginetest.Dequeue(t, a)
			db := enginetest.Dequeue(t, b)

			assert.ErrorIs(t, tc.call(b, da.Lease), ringwal.ErrStaleLease)

			info, err := b.Get(idB)
			require.NoError(t, err)
			assert.Equal(t, ringwal.Leased, info.State, "B's message is untouched")
			assert.Equal(t, 1, info.Attempts)
			assert.NoError(t, b.Ack(db.Lease), "B's own lease still settles it")
			assert.NoError(t, a.Ack(da.Lease), "A's lease still settles A's message")
		})
	}
}

// Engines opened one after another each refuse the others' leases, however
// many are open (the engine tags wrap after 63).
func TestLeasesOfManyEnginesAreTheirOwn(t *testing.T) {
	const n = 70
	engines := make([]*ringwal.Engine, n)
	leases := make([]ringwal.Lease, n)
	for i := range engines {
		engines[i] = enginetest.Open(t, "", ringwal.Options{MaxMessages: 16})
		_, err := engines[i].TryEnqueue(ringwal.Message{})
		require.NoError(t, err)
		leases[i] = enginetest.Dequeue(t, engines[i]).Lease
	}
	for i, e := range engines {
		for j, l := range leases {
			if i != j {
				require.ErrorIs(t, e.Extend(l, 1), ringwal.ErrStaleLease, "engine %d, lease of engine %d", i, j)
			}
		}
	}
	for i, e := range engines {
		assert.NoError(t, e.Ack(leases[i]))
	}
}

func TestStaleLease(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{Policies: fastPolicies(5)})
	enqueueP(t, e, ringwal.Normal, "a")
	d := dequeue(t, e)
	require.NoError(t, e.Ack(d.Lease))
	assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease, "Ack twice")
	assert.ErrorIs(t, e.Nack(d.Lease, errors.New("x")), ringwal.ErrStaleLease, "Nack after Ack")
	assert.ErrorIs(t, e.Extend(d.Lease, time.Second), ringwal.ErrStaleLease, "Extend after Ack")

	enqueueP(t, e, ringwal.Normal, "b")
	d = dequeue(t, e)
	require.NoError(t, e.Nack(d.Lease, transient("x")))
	assert.ErrorIs(t, e.Ack(d.Lease), ringwal.ErrStaleLease, "Ack after Nack")
	assert.ErrorIs(t, e.Nack(d.Lease, transient("x")), ringwal.ErrStaleLease, "Nack twice")

	// The slot of an acked record is reused: an old lease must not touch
	// the new occupant.
	var old []ringwal.Lease
	for i := 0; i < 50; i++ {
		enqueueP(t, e, ringwal.High, "c")
		d := dequeue(t, e)
		require.NoError(t, e.Ack(d.Lease))
		old = append(old, d.Lease)
	}
	id := enqueueP(t, e, ringwal.High, "new")
	dn := dequeue(t, e)
	for _, l := range old {
		assert.ErrorIs(t, e.Ack(l), ringwal.ErrStaleLease)
	}
	info, err := e.Get(id)
	require.NoError(t, err)
	assert.Equal(t, ringwal.Leased, info.State, "old leases did not ack the slot's new message")
	assert.NoError(t, e.Ack(dn.Lease))

	assert.NotPanics(t, func() {
		err := e.Ack(ringwal.Lease{})
		assert.True(t, errors.Is(err, ringwal.ErrStaleLease) || errors.Is(err, ringwal.ErrInvalid),
			"Ack of the zero Lease: %v", err)
	})
}
