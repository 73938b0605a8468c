package ringwal

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The record's size is the engine's memory per queued message (see
// BenchmarkMemoryPerMessage): a field added here costs every message.
func TestRecordIsOneHundredTwentyBytes(t *testing.T) {
	assert.EqualValues(t, 120, unsafe.Sizeof(rec{}))
}

func TestRecordKeepsEveryMessageField(t *testing.T) {
	for _, m := range []Message{
		{},
		{Key: "k", Payload: []byte("p"), Priority: Critical},
		{Payload: []byte{}}, // empty, not nil
		{DedupID: "d", Key: "k", Priority: Background, Payload: []byte{0}, Headers: map[string]string{"a": "b"},
			Delay: time.Second, Deadline: time.Unix(0, 42), TTL: time.Minute, MaxAttempts: 3},
	} {
		var r rec
		r.fill(&m, 0, 1000, 0, 0, nil, nil)
		got := r.message()
		assert.Equal(t, m, got)
		assert.Equal(t, m.Payload == nil, got.Payload == nil, "nil and empty payloads stay apart")
		assert.Equal(t, needsMore(&m), r.more != nil, "options only when set")
		if m.TTL > 0 {
			assert.EqualValues(t, 1000+int64(m.TTL), r.expiresAt())
		}
		var u unacked
		r.keepFor(&u)
		assert.Equal(t, m, u.message(), "a put-back copy gives the same message")
	}
}

// A slot's generation wraps past 2^32-1 without ever naming the zero
// Lease: a message leased at the wrap can be acked.
func TestLeaseAtGenerationWrapSettles(t *testing.T) {
	e := openEngine(t, "", Options{MaxMessages: 8})
	for slot := 0; slot < e.slab.size(); slot++ {
		r := e.slab.at(uint32(slot))
		r.word.Store(uint64(makeWord(^uint32(0)-1, 0, stFree)))
	}
	_, err := e.TryEnqueue(Message{Payload: []byte("x")}) // published at 2^32-1
	require.NoError(t, err)
	d, ok := e.TryDequeue() // leased at the next generation
	require.True(t, ok)
	rf, ours := e.leaseKey.ref(d.Lease)
	require.True(t, ours)
	require.NotZero(t, rf.gen, "generation 0 is never a live one")
	require.NoError(t, e.Ack(d.Lease))
	assert.Equal(t, 0, e.Stats().Leased)
}
