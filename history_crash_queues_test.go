package ringwal_test

// TestHistorySurvivesCrash's queues: the child enqueues into and dequeues
// from the history tests' queues and publishes to their topic; after the
// crash the parent checks that every message is in its own queue, that a
// publish kept all its copies or none, and that each queue delivers only
// its own messages.

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// historyPublished marks a Publish copy's payload.
const historyPublished = "t"

// tryDequeue is TryDequeue of queue q (the engine's for the default
// queue, the handle's otherwise); a message of another queue fails the
// child, and a Publish copy is reported (L) before anything settles it.
func (c *historyChild) tryDequeue(q string) (ringwal.Delivery, bool) {
	var d ringwal.Delivery
	var ok bool
	if q == "" {
		d, ok = c.e.TryDequeue()
	} else {
		d, ok = c.e.Queue(q).TryDequeue()
	}
	if !ok {
		return d, false
	}
	c.took(q, d)
	return d, true
}

// publish publishes a message to historyTopic and reports each copy
// (an E line in its queue) once Publish returned.
func (c *historyChild) publish(ctx context.Context, name string) {
	m := ringwal.Message{Payload: []byte(historyPublished + name)}
	ids, err := c.e.Publish(ctx, historyTopic, m)
	if err != nil || len(ids) != len(historyTopicQueues) {
		childFail("publish %s: %v, %v", m.Payload, ids, err)
	}
	for i, q := range historyTopicQueues {
		c.enqueuedIn(ids[i], m, q, 0, nil, false)
	}
}

func undash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// copyOf notes that id is a copy of the Publish of payload in queue q.
func (r *historyCrashReport) copyOf(id ringwal.ID, payload, q string) {
	if !strings.HasPrefix(payload, historyPublished) {
		return
	}
	byQ := r.copies[payload]
	if byQ == nil {
		byQ = map[string][]ringwal.ID{}
		r.copies[payload] = byQ
	}
	byQ[q] = append(byQ[q], id)
}

// checkCopies checks the Publish copies found after the crash (found:
// every ID Get found): each is in a queue bound to the topic, one per
// queue, and a publish with a copy has one in every bound queue, but for
// a copy the child reported (E or L) whose reported calls allow it to be
// gone (acked or cancelled). A publish the crash cut has no copy. It
// returns how many publishes have copies.
func (r *historyCrashReport) checkCopies(found map[ringwal.ID]ringwal.Info, fail func(string, ...any)) int {
	byPayload := map[string]map[string][]ringwal.ID{}
	for id, info := range found {
		p := string(info.Message.Payload)
		if !strings.HasPrefix(p, historyPublished) {
			continue
		}
		if byPayload[p] == nil {
			byPayload[p] = map[string][]ringwal.ID{}
		}
		byPayload[p][info.Message.Queue] = append(byPayload[p][info.Message.Queue], id)
	}
	bound := map[string]bool{}
	for _, q := range historyTopicQueues {
		bound[q] = true
	}
	payloads := make([]string, 0, len(byPayload))
	for p := range byPayload {
		payloads = append(payloads, p)
	}
	sort.Strings(payloads)
	for _, p := range payloads {
		byQ := byPayload[p]
		for q, ids := range byQ {
			if !bound[q] || len(ids) > 1 {
				fail("the publish %s has copies %v in queue %q after the crash, which takes one copy if bound (bound: %q)",
					p, ids, q, historyTopicQueues)
			}
		}
		for _, q := range historyTopicQueues {
			if len(byQ[q]) > 0 {
				continue
			}
			gone := false
			for _, id := range r.copies[p][q] {
				if m := r.msgs[id]; m != nil && m.allowed()['a'] {
					gone = true
				}
			}
			if !gone {
				fail("the publish %s has copies %v after the crash but none in queue %q, and the child settled none there (reported %v)",
					p, byQ, q, r.copies[p])
			}
		}
	}
	return len(byPayload)
}

// drainQueues leases and acks what every queue delivers until nothing is
// live: each delivery must be a message Get found live after the crash
// (got 'l', then 'x'), of the queue that delivered it. It returns how many
// were delivered.
func drainQueues(t *testing.T, e *ringwal.Engine, got map[ringwal.ID]byte, found map[ringwal.ID]ringwal.Info,
	fail func(string, ...any)) int {
	delivered := 0
	deadline := time.Now().Add(historySettle)
	for {
		more := false
		for _, q := range historyQueues {
			var d ringwal.Delivery
			var ok bool
			if q == "" {
				d, ok = e.TryDequeue()
			} else {
				d, ok = e.Queue(q).TryDequeue()
			}
			if !ok {
				continue
			}
			more = true
			delivered++
			if got[d.ID] != 'l' {
				fail("ID %d delivered after the crash, but Get said %s", d.ID, outcomeNames[got[d.ID]])
			}
			if d.Message.Queue != q || found[d.ID].Message.Queue != q {
				fail("ID %d delivered by queue %q after the crash, but the delivery names queue %q and Get named %q",
					d.ID, q, d.Message.Queue, found[d.ID].Message.Queue)
			}
			got[d.ID] = 'x'
			require.NoError(t, e.Ack(d.Lease))
		}
		if more {
			continue
		}
		if s := e.Stats(); s.Pending+s.Delayed+s.Leased == 0 {
			return delivered
		}
		require.False(t, time.Now().After(deadline), "not drained: %+v by queue %v", counts(e.Stats()), queueCounts(e.Stats()))
		time.Sleep(time.Millisecond)
	}
}
