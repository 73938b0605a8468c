package ringwal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

func TestPauseKeyPastMaxPausedKeysIsErrFull(t *testing.T) {
	e, fake := memEngine(t, ringwal.Options{MaxPausedKeys: 2})
	until := fake.Now().Add(time.Hour)
	require.NoError(t, e.PauseKey("a", until))
	require.NoError(t, e.PauseKey("b", time.Time{}))
	err := e.PauseKey("c", until)
	assert.ErrorIs(t, err, ringwal.ErrFull)
	assert.ErrorContains(t, err, "MaxPausedKeys")
	assert.NoError(t, e.PauseKey("a", until.Add(time.Hour)), "extending a pause in force takes no new place")

	paused, end := e.KeyPause("a")
	assert.True(t, paused)
	assert.True(t, end.Equal(until.Add(time.Hour)))
	paused, end = e.KeyPause("b")
	assert.True(t, paused)
	assert.True(t, end.IsZero(), "until resumed")
	paused, _ = e.KeyPause("c")
	assert.False(t, paused)

	require.NoError(t, e.ResumeKey("a"))
	assert.NoError(t, e.PauseKey("c", until), "a resume frees a place")
	paused, _ = e.KeyPause("")
	assert.False(t, paused)
	require.NoError(t, e.Pause(time.Time{}))
	paused, end = e.KeyPause("")
	assert.True(t, paused)
	assert.True(t, end.IsZero())
}
