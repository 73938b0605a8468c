package admin

// The schedules' vocabulary: the view of a schedule (ringwal.ScheduleInfo)
// that the admin API, its Client, the console and cmd/ringwal share, and
// how a schedule is named in a path.

import (
	"strconv"
	"strings"
	"time"

	"github.com/ringwal/ringwal"
)

// Overlap and catch-up names in ScheduleView.
const (
	OverlapAllow = "allow" // ringwal.OverlapAllow: every tick runs
	OverlapSkip  = "skip"  // ringwal.OverlapSkip: a tick is skipped while the previous run is live

	CatchUpSkip = "skip" // ringwal.CatchUpSkip: missed ticks are skipped
	CatchUpOne  = "one"  // ringwal.CatchUpOne: one run for all the missed ticks
	CatchUpAll  = "all"  // ringwal.CatchUpAll: each missed tick runs, at most max_catch_up
)

// ScheduleView is one schedule (GET /api/schedules): its definition
// (ringwal.Schedule) and its state (ringwal.ScheduleInfo). Queue is the
// admin name of the queue its runs go to (DefaultQueue for the default
// queue); Message is what each run enqueues (besides the two headers
// every run carries, ringwal.ScheduleHeader and ringwal.TickHeader).
// NextAt is absent while the schedule is paused or when its spec never
// fires again; LastAt is the last tick run or skipped, LastID the last
// run's message (a TriggerSchedule's included), both absent before the
// first. LastError says why the last tick did not run (a full queue, the
// previous run still live, a log failure), absent after a run.
type ScheduleView struct {
	Name          string      `json:"name"`
	Spec          string      `json:"spec"`
	Queue         string      `json:"queue"`
	Message       MessageView `json:"message"`
	Overlap       string      `json:"overlap"`  // OverlapAllow or OverlapSkip
	CatchUp       string      `json:"catch_up"` // CatchUpSkip, CatchUpOne or CatchUpAll
	MaxCatchUp    int         `json:"max_catch_up"`
	JitterSeconds float64     `json:"jitter_seconds"`
	Paused        bool        `json:"paused"`
	NextAt        time.Time   `json:"next_at,omitzero"`
	LastAt        time.Time   `json:"last_at,omitzero"`
	LastID        ringwal.ID  `json:"last_id,omitempty"`
	Runs          uint64      `json:"runs"`
	Skipped       uint64      `json:"skipped"`
	LastError     string      `json:"last_error,omitempty"`
}

// NewScheduleView returns in's view. MaxCatchUp is the bound in force
// (the engine's 100 for a declared 0).
func NewScheduleView(in ringwal.ScheduleInfo) ScheduleView {
	v := ScheduleView{Name: in.Name, Spec: in.Spec, Queue: AdminQueueName(in.Message.Queue),
		Message: NewMessageView(in.Message), Overlap: OverlapAllow, CatchUp: CatchUpSkip,
		MaxCatchUp: in.MaxCatchUp, JitterSeconds: in.Jitter.Seconds(), Paused: in.Paused,
		NextAt: in.Next, LastAt: in.Last, LastID: in.LastID, Runs: in.Runs, Skipped: in.Skipped,
		LastError: in.LastError}
	if in.Overlap == ringwal.OverlapSkip {
		v.Overlap = OverlapSkip
	}
	switch in.CatchUp {
	case ringwal.CatchUpOne:
		v.CatchUp = CatchUpOne
	case ringwal.CatchUpAll:
		v.CatchUp = CatchUpAll
	}
	if v.MaxCatchUp == 0 {
		v.MaxCatchUp = defaultMaxCatchUp
	}
	return v
}

// defaultMaxCatchUp is ringwal.Schedule.MaxCatchUp's zero value.
const defaultMaxCatchUp = 100

// NewScheduleViews returns the views of infos (Engine.Schedules: by
// name), never nil.
func NewScheduleViews(infos []ringwal.ScheduleInfo) []ScheduleView {
	out := make([]ScheduleView, len(infos))
	for i, in := range infos {
		out[i] = NewScheduleView(in)
	}
	return out
}

// Outcome is the last tick's outcome in words: the last error when the
// last tick did not run (without the engine's `schedule "name": `
// prefix, which the schedule's row says already), "ran #ID" after a run,
// "" before any.
func (v ScheduleView) Outcome() string {
	switch {
	case v.LastError != "":
		return strings.TrimPrefix(v.LastError, "schedule "+quoteSchedule(v.Name)+": ")
	case v.LastID != 0:
		return "ran #" + strconv.FormatUint(v.LastID, 10)
	}
	return ""
}

// FindSchedule returns the view of the schedule called name among vs.
func FindSchedule(vs []ScheduleView, name string) (ScheduleView, bool) {
	for _, v := range vs {
		if v.Name == name {
			return v, true
		}
	}
	return ScheduleView{Name: name}, false
}

// SchedulePath escapes a schedule's name as one URL path segment, for
// /api/schedules/{name}/..., as KeyPath escapes a key.
func SchedulePath(name string) string { return KeyPath(name) }

// scheduleInfo returns the schedule called name, if any.
func scheduleInfo(e *ringwal.Engine, name string) (ringwal.ScheduleInfo, bool) {
	for _, in := range e.Schedules() {
		if in.Name == name {
			return in, true
		}
	}
	return ringwal.ScheduleInfo{}, false
}

// quoteSchedule names a schedule in an error message.
func quoteSchedule(name string) string { return strconv.Quote(name) }
