package ringwal_test

// The model TestCrashRichRecovery checks a reopened engine against: what
// the child's acknowledged calls (its report lines) allow each ID to be.

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

// richEvent is one reported call on a message.
type richEvent struct {
	op      byte // 'A', 'N', 'Z', 'R', 'F', 'V', 'P'
	intent  bool // a "?" line: the call was made, its result unknown
	perm    bool
	attempt int
	note    string
	cat     classify.Category
	line    string
}

// richMsg is what the child reported about one ID.
type richMsg struct {
	enqueued            bool
	dedup, key, payload string
	ttl                 bool // or unknown: no E line
	abandoned           bool // some lease of it may have expired
	events              []richEvent
}

// richWant is one outcome the model allows for an ID after reopen.
type richWant struct {
	kind        byte // 'a' absent, 'l' live (pending or delayed), 'd' dead
	minAttempts int
	cat         classify.Category
	reviewed    bool
	note        string
	attempts    int // dead: -1 unknown
}

func (w richWant) String() string {
	switch w.kind {
	case 'a':
		return "absent"
	case 'l':
		return fmt.Sprintf("live(attempts>=%d)", w.minAttempts)
	}
	return fmt.Sprintf("dead(%v, attempts %d, reviewed %v %q)", w.cat, w.attempts, w.reviewed, w.note)
}

// richApply is the model's step: the outcomes after ev from those before.
func richApply(states []richWant, ev richEvent) []richWant {
	switch ev.op {
	case 'A', 'P':
		return []richWant{{kind: 'a'}}
	case 'N':
		switch {
		case ev.perm:
			return []richWant{{kind: 'd', cat: classify.Permanent, attempts: ev.attempt}}
		case ev.attempt >= richTransientMax:
			return []richWant{{kind: 'd', cat: classify.Transient, attempts: ev.attempt}}
		}
		return []richWant{{kind: 'l', minAttempts: ev.attempt}}
	case 'R':
		return []richWant{{kind: 'l'}}
	case 'V':
		var out []richWant
		for _, s := range states {
			if s.kind == 'd' && s.cat == ev.cat {
				s.reviewed, s.note = true, ev.note
				out = append(out, s)
			}
		}
		if len(out) == 0 { // dead-lettered by the engine (TTL, lease expiry)
			out = []richWant{{kind: 'd', cat: ev.cat, reviewed: true, note: ev.note, attempts: -1}}
		}
		return out
	}
	return states // 'Z', 'F'
}

// richClose adds what the engine may have done on its own to a live
// message: dead-letter it as Expired (TTL) or Timeout (an expired lease).
func richClose(states []richWant, m *richMsg) []richWant {
	out := append([]richWant(nil), states...)
	for _, s := range states {
		if s.kind != 'l' {
			continue
		}
		if m.ttl {
			out = append(out, richWant{kind: 'd', cat: classify.Expired, attempts: -1})
		}
		if m.abandoned {
			out = append(out, richWant{kind: 'd', cat: classify.Timeout, attempts: -1})
		}
	}
	return out
}

// allowed returns the outcomes the acknowledged calls allow for m.
func (m *richMsg) allowed() []richWant {
	states := []richWant{{kind: 'l'}}
	var inflight *richEvent
	for i := range m.events {
		ev := &m.events[i]
		if ev.intent {
			inflight = ev
			continue
		}
		inflight = nil
		states = richApply(states, *ev)
	}
	out := richClose(states, m)
	if inflight != nil {
		out = append(out, richClose(richApply(states, *inflight), m)...)
	}
	return out
}

// richGot is what the reopened engine says of an ID.
type richGot struct {
	kind     byte
	state    ringwal.State
	attempts int
	cat      classify.Category
	reviewed bool
	note     string
}

func (g richGot) String() string {
	switch g.kind {
	case 'a':
		return "absent"
	case 'l':
		return fmt.Sprintf("%v(attempts %d)", g.state, g.attempts)
	}
	return fmt.Sprintf("dead(%v, attempts %d, reviewed %v %q)", g.cat, g.attempts, g.reviewed, g.note)
}

func (w richWant) matches(g richGot) bool {
	if w.kind != g.kind {
		return false
	}
	switch w.kind {
	case 'l':
		return g.attempts >= w.minAttempts
	case 'd':
		return g.cat == w.cat && g.reviewed == w.reviewed && (!w.reviewed || g.note == w.note) &&
			(w.attempts < 0 || g.attempts == w.attempts)
	}
	return true
}

// richReport reads the child's lines.
type richReport struct {
	mu          sync.Mutex
	msgs        map[ringwal.ID]*richMsg
	bad         []string
	checkpoints int
	lines       int
	maxID       ringwal.ID
}

func (r *richReport) msg(id ringwal.ID) *richMsg {
	m := r.msgs[id]
	if m == nil {
		m = &richMsg{ttl: true} // unknown until its E line
		r.msgs[id] = m
	}
	r.maxID = max(r.maxID, id)
	return m
}

func (r *richReport) parse(text string) {
	r.lines++
	f := strings.Fields(text)
	if len(f) == 0 {
		return
	}
	if f[0] == "X" {
		r.bad = append(r.bad, text)
		return
	}
	intent := f[0] == "?"
	if intent {
		f = f[1:]
		if len(f) == 0 {
			r.bad = append(r.bad, "malformed: "+text)
			return
		}
	}
	if f[0] == "C" {
		if !intent {
			r.checkpoints++
		}
		return
	}
	if len(f) < 2 {
		r.bad = append(r.bad, "malformed: "+text)
		return
	}
	n, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		r.bad = append(r.bad, "malformed: "+text)
		return
	}
	id := n
	m := r.msg(id)
	ev := richEvent{op: f[0][0], intent: intent, line: text}
	switch {
	case f[0] == "E" && len(f) == 6 && !intent:
		if m.enqueued {
			r.bad = append(r.bad, "ID returned twice: "+text)
		}
		m.enqueued, m.ttl, m.payload = true, f[3] == "1", f[5]
		if f[2] != "-" {
			m.dedup = f[2]
		}
		if f[4] != "-" {
			m.key = f[4]
		}
		return
	case f[0] == "Z" && len(f) == 2:
		m.abandoned = true
	case (f[0] == "A" || f[0] == "R" || f[0] == "F" || f[0] == "P") && len(f) == 2:
	case f[0] == "N" && len(f) == 4:
		ev.perm = f[2] == "permanent"
		if ev.attempt, err = strconv.Atoi(f[3]); err != nil {
			r.bad = append(r.bad, "malformed: "+text)
			return
		}
	case f[0] == "V" && len(f) == 4:
		ev.note = f[2]
		if ev.cat, err = classify.ParseCategory(f[3]); err != nil {
			r.bad = append(r.bad, "malformed: "+text)
			return
		}
	default:
		r.bad = append(r.bad, "malformed: "+text)
		return
	}
	m.events = append(m.events, ev)
}
