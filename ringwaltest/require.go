package ringwaltest

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ringwal/ringwal"
)

// Match says which enqueued messages a Require function looks for. Its
// zero value matches every live message; each set field narrows it.
type Match struct {
	// Queue is the message's queue; "" matches every queue (as
	// ringwal.Filter.Queue: to require the default queue, use Where).
	Queue string
	// Key is the message's key; "" matches any key.
	Key string
	// Payload, when not nil, must equal the message's payload byte for
	// byte ([]byte{} matches an empty payload only).
	Payload []byte
	// Headers must each be present on the message with this value; the
	// message may carry others.
	Headers map[string]string
	// DedupID is the message's DedupID; "" matches any.
	DedupID string
	// States the message must be in; empty matches every live state.
	States []ringwal.State
	// Where, when not nil, must also report true.
	Where func(ringwal.Info) bool
}

// matches reports whether info passes the fields Engine.Messages' Filter
// does not check.
func (m *Match) matches(info *ringwal.Info) bool {
	msg := &info.Message
	if m.Payload != nil && !bytes.Equal(m.Payload, msg.Payload) {
		return false
	}
	for k, v := range m.Headers {
		if got, ok := msg.Headers[k]; !ok || got != v {
			return false
		}
	}
	if m.DedupID != "" && msg.DedupID != m.DedupID {
		return false
	}
	return m.Where == nil || m.Where(*info)
}

// String describes m for a failure message.
func (m Match) String() string {
	var parts []string
	if m.Queue != "" {
		parts = append(parts, fmt.Sprintf("queue %q", m.Queue))
	}
	if m.Key != "" {
		parts = append(parts, fmt.Sprintf("key %q", m.Key))
	}
	if m.Payload != nil {
		parts = append(parts, fmt.Sprintf("payload %q", m.Payload))
	}
	if len(m.Headers) > 0 {
		keys := slices.Sorted(maps.Keys(m.Headers))
		hs := make([]string, len(keys))
		for i, k := range keys {
			hs[i] = fmt.Sprintf("%s=%q", k, m.Headers[k])
		}
		parts = append(parts, "headers "+strings.Join(hs, " "))
	}
	if m.DedupID != "" {
		parts = append(parts, fmt.Sprintf("dedup ID %q", m.DedupID))
	}
	if len(m.States) > 0 {
		parts = append(parts, fmt.Sprintf("state in %v", m.States))
	}
	if m.Where != nil {
		parts = append(parts, "Where")
	}
	if len(parts) == 0 {
		return "any message"
	}
	return strings.Join(parts, ", ")
}

// find returns the live messages of e that match m, in Engine.Messages'
// order.
func find(e *ringwal.Engine, m *Match) (found []ringwal.Info) {
	filter := ringwal.Filter{Queue: m.Queue, Key: m.Key, States: m.States}
	for info := range e.Messages(filter) {
		if m.matches(&info) {
			found = append(found, info)
		}
	}
	return found
}

// everything returns every live message of e, for a failure message: the
// zero Match matches them all.
func everything(e *ringwal.Engine) []ringwal.Info { return find(e, &Match{}) }

// maxListed bounds how many messages a failure lists.
const maxListed = 10

// describe lists infos, one a line, for a failure message.
func describe(infos []ringwal.Info) string {
	if len(infos) == 0 {
		return "\n\t(none)"
	}
	var b strings.Builder
	for i, in := range infos {
		if i == maxListed {
			fmt.Fprintf(&b, "\n\t... and %d more", len(infos)-maxListed)
			break
		}
		fmt.Fprintf(&b, "\n\tID %d: %s, queue %q, key %q, payload %q", in.ID, in.State, in.Message.Queue, in.Message.Key, in.Message.Payload)
		if len(in.Message.Headers) > 0 {
			fmt.Fprintf(&b, ", headers %v", in.Message.Headers)
		}
		if in.Message.DedupID != "" {
			fmt.Fprintf(&b, ", dedup ID %q", in.Message.DedupID)
		}
	}
	return b.String()
}

// RequireEnqueued requires exactly one live message of e to match m and
// returns it; otherwise it fails the test (t.Fatalf), listing what matched
// or, when nothing did, what the engine holds. Live means Pending,
// Delayed, Leased or Held: an acked message is gone, and a dead letter is
// read with Engine.DeadLetters. Expecting several alike, use
// RequireEnqueuedN.
func RequireEnqueued(tb testing.TB, e *ringwal.Engine, m Match) ringwal.Info {
	tb.Helper()
	found := find(e, &m)
	switch len(found) {
	case 1:
		return found[0]
	case 0:
		live := everything(e)
		tb.Fatalf("ringwaltest: no live message matches %s; the engine holds %d:%s", m, len(live), describe(live))
	default:
		tb.Fatalf("ringwaltest: %d live messages match %s, want 1:%s", len(found), m, describe(found))
	}
	return ringwal.Info{}
}

// RequireEnqueuedN requires exactly n live messages of e to match m and
// returns them in Engine.Messages' order (enqueue order, or delivery order
// for an ordered key named by m.Key); otherwise it fails the test.
func RequireEnqueuedN(tb testing.TB, e *ringwal.Engine, m Match, n int) []ringwal.Info {
	tb.Helper()
	found := find(e, &m)
	if len(found) != n {
		if len(found) == 0 {
			live := everything(e)
			tb.Fatalf("ringwaltest: no live message matches %s, want %d; the engine holds %d:%s", m, n, len(live), describe(live))
		} else {
			tb.Fatalf("ringwaltest: %d live messages match %s, want %d:%s", len(found), m, n, describe(found))
		}
		return nil
	}
	return found
}

// RequireNotEnqueued requires no live message of e to match m; otherwise
// it fails the test, listing those that do.
func RequireNotEnqueued(tb testing.TB, e *ringwal.Engine, m Match) {
	tb.Helper()
	if found := find(e, &m); len(found) > 0 {
		tb.Fatalf("ringwaltest: %d live messages match %s, want none:%s", len(found), m, describe(found))
	}
}
