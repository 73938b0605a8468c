package admin

// The JSON API of the engine's history (Engine.History and
// Engine.QueueHistory), and the Client's methods that read it. The history
// holds per-interval samples of the engine's counters for the last day.
// They are 10 s apart for the last 15 minutes, 1 min for 2 hours, and
// 10 min before.

import (
	"context"
	"net/http"
	"time"

	"github.com/ringwal/ringwal"
)

// HistorySampleView is a ringwal.HistorySample: what happened in the
// interval from Start, LengthSeconds long (counts, not rates: a rate is a
// count divided by LengthSeconds), and the counts at its end. The counts
// by state (Pending, Delayed, Leased, Held) are kept only when Counted:
// the engine counts by state from the first Stats on.
type HistorySampleView struct {
	Start         time.Time `json:"start"`
	LengthSeconds float64   `json:"length_seconds"`
	Enqueued      uint64    `json:"enqueued"`
	Acked         uint64    `json:"acked"`
	DeadLettered  uint64    `json:"dead_lettered"`
	Retried       uint64    `json:"retried"`
	// DeadLetteredByCategory splits DeadLettered by category name (the
	// engine's samples; absent when none).
	DeadLetteredByCategory map[string]uint64 `json:"dead_lettered_by_category,omitempty"`
	Live                   int               `json:"live"`
	Dead                   int               `json:"dead"`
	Counted                bool              `json:"counted"`
	Pending                int               `json:"pending"`
	Delayed                int               `json:"delayed"`
	Leased                 int               `json:"leased"`
	Held                   int               `json:"held"`
	// WaitP95Seconds estimates the 95th percentile of the wait of the
	// messages dequeued in the interval (0: none was measured).
	WaitP95Seconds float64 `json:"wait_p95_seconds"`
}

// NewHistorySampleView returns s's view.
func NewHistorySampleView(s ringwal.HistorySample) HistorySampleView {
	v := HistorySampleView{
		Start: s.Start, LengthSeconds: s.Length.Seconds(),
		Enqueued: s.Enqueued, Acked: s.Acked, DeadLettered: s.DeadLettered, Retried: s.Retried,
		Live: s.Live, Dead: s.Dead, Counted: s.Counted,
		Pending: s.Pending, Delayed: s.Delayed, Leased: s.Leased, Held: s.Held,
		WaitP95Seconds: s.WaitP95.Seconds(),
	}
	for c, n := range s.DeadLetteredByCategory {
		if v.DeadLetteredByCategory == nil {
			v.DeadLetteredByCategory = make(map[string]uint64, len(s.DeadLetteredByCategory))
		}
		v.DeadLetteredByCategory[c.String()] = n
	}
	return v
}

// HistoryView answers GET /api/history (the engine's samples) and GET
// /api/queues/{queue}/history (one queue's). Samples are oldest first.
type HistoryView struct {
	// Queue is the queue's admin name; absent for the engine's history.
	Queue string `json:"queue,omitempty"`
	// Followed is false for a queue the engine keeps no history of (it
	// follows the default queue and the first 16 named queues declared
	// when it samples); always true for the engine.
	Followed bool                `json:"followed"`
	Samples  []HistorySampleView `json:"samples"`
}

// NewHistoryView returns the view of samples (nil: not followed).
func NewHistoryView(queue string, samples []ringwal.HistorySample, followed bool) HistoryView {
	v := HistoryView{Queue: queue, Followed: followed, Samples: make([]HistorySampleView, len(samples))}
	for i, s := range samples {
		v.Samples[i] = NewHistorySampleView(s)
	}
	return v
}

// registerHistory adds the history routes to the API's mux.
func (h *handler) registerHistory() {
	h.mux.HandleFunc("GET /api/history", h.history)
	h.mux.HandleFunc("GET /api/queues/{queue}/history", h.queueHistory)
}

// history answers GET /api/history: the engine's samples.
func (h *handler) history(w http.ResponseWriter, r *http.Request) {
	if engineClosed(h.e) {
		h.fail(w, r, ringwal.ErrClosed)
		return
	}
	h.reply(w, http.StatusOK, NewHistoryView("", h.e.History(), true))
}

// queueHistory answers GET /api/queues/{queue}/history: a declared
// queue's samples (404 for an undeclared one; 503 once closed, as the
// engine's history).
func (h *handler) queueHistory(w http.ResponseWriter, r *http.Request) {
	if engineClosed(h.e) {
		h.fail(w, r, ringwal.ErrClosed)
		return
	}
	in, ok := h.pathQueue(w, r)
	if !ok {
		return
	}
	samples := h.e.QueueHistory(in.Name)
	h.reply(w, http.StatusOK, NewHistoryView(AdminQueueName(in.Name), samples, samples != nil))
}

// History returns the engine's history, oldest first (GET /api/history).
func (c *Client) History(ctx context.Context) (HistoryView, error) {
	var v HistoryView
	return v, c.do(ctx, http.MethodGet, "/api/history", nil, nil, &v)
}

// QueueHistory returns one queue's history, oldest first (GET
// /api/queues/{queue}/history); name "" or DefaultQueue is the default
// queue. An undeclared name is ringwal.ErrNotFound; a queue the engine
// does not follow has Followed false and no samples.
func (c *Client) QueueHistory(ctx context.Context, name string) (HistoryView, error) {
	var v HistoryView
	return v, c.do(ctx, http.MethodGet, "/api/queues/"+QueuePath(name)+"/history", nil, nil, &v)
}
