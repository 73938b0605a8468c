package ringwal

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
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
