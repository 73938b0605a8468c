package ringwal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
)

func TestStatsKeysCarryTheirBreakers(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{})
	mustEnqueue(t, e, ringwal.Message{Key: "up", Payload: []byte("ok")})
	d, ok := e.TryDequeue()
	require.True(t, ok)
	require.NoError(t, e.Ack(d.Lease))
	mustEnqueue(t, e, ringwal.Message{Key: "down", Payload: []byte("x"), MaxAttempts: 100})
	for i := 0; i < 20; i++ {
		if st := e.Stats(); len(st.Breakers) == 2 && st.Breakers[0].State != breaker.Closed {
			break
		}
		ctx, cancel := context.WithTimeout(ctxBG, 10*time.Second)
		d, err := e.Dequeue(ctx)
		cancel()
		require.NoError(t, err)
		require.NoError(t, e.Nack(d.Lease, classify.Mark(errors.New("503"), classify.Transient)))
		fake.Advance(time.Minute)
	}
	s := e.Stats()
	require.Len(t, s.Breakers, 2)
	require.NotEqual(t, breaker.Closed, s.Breakers[0].State, "down's breaker opened")
	byKey := map[string]ringwal.KeyStats{}
	for _, k := range s.Keys {
		byKey[k.Key] = k
	}
	k, ok := byKey["down"]
	require.True(t, ok, "a key whose breaker opened is in Stats.Keys")
	assert.Equal(t, s.Breakers[0], k.Breaker, "the same data as Stats.Breakers")
	_, ok = byKey["up"]
	assert.False(t, ok, "a key with nothing but a closed breaker is not")
}

func TestTierUtilizationByPriority(t *testing.T) {
	e, _ := memEngine(t, ringwal.Options{TierCapacity: 64})
	for i := 0; i < 16; i++ {
		mustEnqueue(t, e, ringwal.Message{Priority: ringwal.Critical})
	}
	mustEnqueue(t, e, ringwal.Message{Priority: ringwal.Low})
	s := e.Stats()
	assert.Equal(t, s.TierUtilization[0], s.TierUtilizationOf(ringwal.Critical))
	assert.InDelta(t, 16.0/64, s.TierUtilizationOf(ringwal.Critical), 1e-9)
	assert.InDelta(t, 1.0/64, s.TierUtilizationOf(ringwal.Low), 1e-9)
	assert.Zero(t, s.TierUtilizationOf(ringwal.Background))
	assert.Zero(t, s.TierUtilizationOf(ringwal.Priority(7)), "out of range")
}
