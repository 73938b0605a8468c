package ringwaltest_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
	"github.com/ringwal/ringwal/ringwaltest"
)

// enqueueFixture fills an engine with messages each Match field can tell
// apart, and returns their IDs by name.
func enqueueFixture(tb testing.TB, h *ringwaltest.Harness) map[string]ringwal.ID {
	ids := map[string]ringwal.ID{}
	for name, m := range map[string]ringwal.Message{
		"welcome": {Queue: "emails", Key: "smtp", Payload: []byte("welcome ann"), Headers: map[string]string{"tenant": "a", "lang": "en"}},
		"receipt": {Queue: "emails", Key: "smtp", Payload: []byte("receipt 7"), Headers: map[string]string{"tenant": "b"}, DedupID: "receipt-7"},
		"hook":    {Key: "hooks.example.com", Payload: []byte(`{"paid":7}`), Delay: time.Minute},
		"empty":   {Key: "hooks.example.com", Payload: []byte{}},
	} {
		id, err := h.TryEnqueue(m)
		require.NoError(tb, err)
		ids[name] = id
	}
	return ids
}

func TestRequireEnqueuedFindsExactlyTheMatchingMessage(t *testing.T) {
	h := ringwaltest.New(t, ringwaltest.Options{})
	ids := enqueueFixture(t, h)
	tests := []struct {
		name string
		m    ringwaltest.Match
		want string
	}{
		{name: "payload", m: ringwaltest.Match{Payload: []byte("receipt 7")}, want: "receipt"},
		{name: "empty payload", m: ringwaltest.Match{Payload: []byte{}}, want: "empty"},
		{name: "queue and header", m: ringwaltest.Match{Queue: "emails", Headers: map[string]string{"tenant": "a"}}, want: "welcome"},
		{name: "two headers", m: ringwaltest.Match{Headers: map[string]string{"tenant": "a", "lang": "en"}}, want: "welcome"},
		{name: "dedup ID", m: ringwaltest.Match{DedupID: "receipt-7"}, want: "receipt"},
		{name: "key and state", m: ringwaltest.Match{Key: "hooks.example.com", States: []ringwal.State{ringwal.Delayed}}, want: "hook"},
		{name: "where", m: ringwaltest.Match{Where: func(i ringwal.Info) bool { return i.Message.Queue == "" && len(i.Message.Payload) > 0 }}, want: "hook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := ringwaltest.RequireEnqueued(t, h.Engine, tt.m)
			assert.Equal(t, ids[tt.want], info.ID)
		})
	}
}

func TestRequireEnqueuedFailsOnNoneOrSeveral(t *testing.T) {
	tests := []struct {
		name     string
		m        ringwaltest.Match
		failure  []string // substrings of the one failure
		listsAll bool     // the failure lists every live message
	}{
		{name: "no such payload", m: ringwaltest.Match{Payload: []byte("nope")},
			failure: []string{`no live message matches payload "nope"; the engine holds 4:`}, listsAll: true},
		{name: "header value differs", m: ringwaltest.Match{Headers: map[string]string{"tenant": "c"}},
			failure: []string{`headers tenant="c"`}},
		{name: "header absent", m: ringwaltest.Match{Headers: map[string]string{"region": "eu"}},
			failure: []string{"no live message matches"}},
		{name: "wrong queue", m: ringwaltest.Match{Queue: "sms"}, failure: []string{`queue "sms"`}},
		{name: "wrong state", m: ringwaltest.Match{Payload: []byte(`{"paid":7}`), States: []ringwal.State{ringwal.Pending}},
			failure: []string{"state in [pending]"}},
		{name: "where refuses", m: ringwaltest.Match{Where: func(ringwal.Info) bool { return false }}, failure: []string{"Where"}},
		{name: "two match", m: ringwaltest.Match{Queue: "emails"},
			failure: []string{`2 live messages match queue "emails", want 1:`, "welcome ann", "receipt 7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, completed := runRecorded(func(tb testing.TB) {
				h := ringwaltest.New(tb, ringwaltest.Options{})
				enqueueFixture(tb, h)
				h.RequireEnqueued(tt.m)
			})
			assert.False(t, completed, "RequireEnqueued stops the test")
			require.Len(t, r.failures, 1)
			for _, s := range tt.failure {
				assert.Contains(t, r.failures[0], s)
			}
			if tt.listsAll {
				for _, p := range []string{"welcome ann", "receipt 7", `{\"paid\":7}`, `dedup ID "receipt-7"`, "delayed"} {
					assert.Contains(t, r.failures[0], p)
				}
			}
			assert.Positive(t, r.helpers, "t.Helper was called")
		})
	}
}

func TestRequireEnqueuedNCountsTheMatches(t *testing.T) {
	h := ringwaltest.New(t, ringwaltest.Options{})
	ids := enqueueFixture(t, h)
	got := h.RequireEnqueuedN(ringwaltest.Match{Queue: "emails", Key: "smtp"}, 2)
	require.Len(t, got, 2)
	assert.ElementsMatch(t, []ringwal.ID{ids["welcome"], ids["receipt"]}, []ringwal.ID{got[0].ID, got[1].ID})

	for _, n := range []int{0, 1, 3} {
		r, completed := runRecorded(func(tb testing.TB) {
			h := ringwaltest.New(tb, ringwaltest.Options{})
			enqueueFixture(tb, h)
			h.RequireEnqueuedN(ringwaltest.Match{Queue: "emails"}, n)
		})
		assert.False(t, completed, "n=%d", n)
		require.Len(t, r.failures, 1, "n=%d", n)
		assert.Contains(t, r.failures[0], "2 live messages match")
	}
	r, completed := runRecorded(func(tb testing.TB) {
		h := ringwaltest.New(tb, ringwaltest.Options{})
		h.RequireEnqueuedN(ringwaltest.Match{Queue: "emails"}, 2)
	})
	assert.False(t, completed)
	require.Len(t, r.failures, 1)
	assert.Contains(t, r.failures[0], "no live message matches queue \"emails\", want 2; the engine holds 0:\n\t(none)")
}

func TestRequireNotEnqueued(t *testing.T) {
	h := ringwaltest.New(t, ringwaltest.Options{})
	enqueueFixture(t, h)
	h.RequireNotEnqueued(ringwaltest.Match{Queue: "sms"})
	h.RequireNotEnqueued(ringwaltest.Match{Key: "smtp", States: []ringwal.State{ringwal.Delayed}})

	r, completed := runRecorded(func(tb testing.TB) {
		h := ringwaltest.New(tb, ringwaltest.Options{})
		enqueueFixture(tb, h)
		h.RequireNotEnqueued(ringwaltest.Match{DedupID: "receipt-7"})
	})
	assert.False(t, completed)
	require.Len(t, r.failures, 1)
	assert.Contains(t, r.failures[0], `1 live messages match dedup ID "receipt-7", want none:`)
}

// Advance returns once the engine has done what came due: a delayed
// message is Pending the moment it returns, with no polling.
func TestAdvanceMakesWhatCameDueReadyBeforeItReturns(t *testing.T) {
	h := ringwaltest.New(t, ringwaltest.Options{})
	_, err := h.TryEnqueue(ringwal.Message{Payload: []byte("later"), Delay: time.Minute})
	require.NoError(t, err)
	later := ringwaltest.Match{Payload: []byte("later")}

	h.Advance(59 * time.Second)
	assert.Equal(t, ringwal.Delayed, h.RequireEnqueued(later).State)
	h.Advance(time.Second)
	assert.Equal(t, ringwal.Pending, h.RequireEnqueued(later).State)
	d, ok := h.TryDequeue()
	require.True(t, ok)
	assert.Equal(t, "later", string(d.Message.Payload))
}

func TestAdvanceFailsWhenTheEngineIsClosed(t *testing.T) {
	var fake *clock.Fake
	r, completed := runRecorded(func(tb testing.TB) {
		h := ringwaltest.New(tb, ringwaltest.Options{Wait: 50 * time.Millisecond})
		fake = h.Clock
		require.NoError(tb, h.Close())
		h.Advance(time.Second)
	})
	assert.False(t, completed)
	require.Len(t, r.failures, 1)
	assert.Contains(t, r.failures[0], "did not arm its timer again within 50ms")
	assert.Zero(t, fake.Waiters(), "the timer that released the wait is stopped")
}

func TestAdvanceRefusesToGoBack(t *testing.T) {
	r, completed := runRecorded(func(tb testing.TB) {
		h := ringwaltest.New(tb, ringwaltest.Options{})
		h.Advance(-time.Second)
	})
	assert.False(t, completed)
	require.Len(t, r.failures, 1)
	assert.Contains(t, r.failures[0], "never goes back")
}

func TestNewUsesTheFakeClockItIsGivenAndRefusesAnyOther(t *testing.T) {
	fake := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h := ringwaltest.New(t, ringwaltest.Options{Engine: ringwal.Options{Clock: fake}})
	assert.Same(t, fake, h.Clock)

	start := time.Date(2031, 6, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, start, ringwaltest.New(t, ringwaltest.Options{Start: start}).Clock.Now())

	r, completed := runRecorded(func(tb testing.TB) {
		ringwaltest.New(tb, ringwaltest.Options{Engine: ringwal.Options{Clock: clock.Real()}})
	})
	assert.False(t, completed)
	require.Len(t, r.failures, 1)
	assert.Contains(t, r.failures[0], "needs a *clock.Fake")
}

func TestNewClosesTheEngineWhenTheTestEnds(t *testing.T) {
	var h *ringwaltest.Harness
	r, completed := runRecorded(func(tb testing.TB) { h = ringwaltest.New(tb, ringwaltest.Options{}) })
	require.True(t, completed)
	assert.Empty(t, r.failures)
	_, err := h.TryEnqueue(ringwal.Message{})
	assert.ErrorIs(t, err, ringwal.ErrClosed)
}

// TestRootImportsNeitherRingwaltestNorTesting: the helpers for users'
// tests stay out of every program that uses the engine.
func TestRootImportsNeitherRingwaltestNorTesting(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/ringwal/ringwal").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		assert.NotEqual(t, "testing", dep)
		assert.NotEqual(t, "github.com/ringwal/ringwal/ringwaltest", dep)
	}
}
