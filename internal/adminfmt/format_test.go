package adminfmt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

func TestFormatsAgreeForConsoleAndCLI(t *testing.T) {
	assert.Equal(t, "0", Count(0))
	assert.Equal(t, "12,345", Count(12345))
	assert.Equal(t, "-1,234,567", Count(int64(-1234567)))
	assert.Equal(t, "0 B", ByteSize(int64(-5)))
	assert.Equal(t, "1.5 MiB", ByteSize(uint64(3<<19)))
	assert.Equal(t, "1.23ms", Duration(1234*time.Microsecond))
	assert.Equal(t, "3m0s", Duration(3*time.Minute+200*time.Millisecond))
}

func TestParseUntilAndStates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	u, err := ParseUntil("90m", now)
	require.NoError(t, err)
	assert.Equal(t, now.Add(90*time.Minute), u)
	_, err = ParseUntil("2025-01-01T00:00:00Z", now)
	assert.Error(t, err, "in the past")
	u, err = ParseUntil("", now)
	require.NoError(t, err)
	assert.True(t, u.IsZero(), "until resumed")

	st, err := ParseStates([]string{"pending,held", "Leased"})
	require.NoError(t, err)
	assert.Equal(t, []ringwal.State{ringwal.Pending, ringwal.Held, ringwal.Leased}, st)
	_, err = ParseStates([]string{"dead"})
	assert.ErrorContains(t, err, "dead letters are not live messages")
}
