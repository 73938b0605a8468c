package admin

// The JSON API of queues: the list with each queue's counts, one queue,
// and pausing, resuming and deleting one. A {queue} in a path is the
// queue's admin name (DefaultQueue for the default queue), one escaped
// path segment (QueuePath).

import (
	"errors"
	"net/http"
	"time"

	"github.com/ringwal/ringwal"
)

// QueueActionView answers a queue's pause, resume or delete: Queue is its
// admin name, Status paused, resumed or deleted. Paused and PausedUntil
// say the pause in force after the action (a pause never shortens a
// longer one); PausedUntil is null when there is none or it lasts until
// resumed.
type QueueActionView struct {
	Queue       string     `json:"queue"`
	Status      string     `json:"status"`
	Paused      bool       `json:"paused"`
	PausedUntil *time.Time `json:"paused_until"`
}

// queues answers GET /api/queues: every declared queue, the default first,
// then by name, with its counts.
func (h *handler) queues(w http.ResponseWriter, r *http.Request) {
	infos := h.e.Queues()
	s := h.e.Stats()
	if s.Closed {
		h.fail(w, r, ringwal.ErrClosed)
		return
	}
	h.reply(w, http.StatusOK, NewQueueViews(infos, s))
}

// pathQueue returns the declared queue the {queue} path segment names,
// or answers 404 (503 once the engine is closed).
func (h *handler) pathQueue(w http.ResponseWriter, r *http.Request) (ringwal.QueueInfo, bool) {
	name := EngineQueueName(r.PathValue("queue"))
	in, ok := queueInfo(h.e, name)
	if !ok {
		if engineClosed(h.e) {
			h.fail(w, r, ringwal.ErrClosed)
			return in, false
		}
		replyError(w, http.StatusNotFound, "no queue "+quoteQueue(name))
		return in, false
	}
	return in, true
}

// quoteQueue names a queue in an error message.
func quoteQueue(name string) string {
	if name == "" {
		return "default (" + DefaultQueue + ")"
	}
	return `"` + name + `"`
}

// queue answers GET /api/queues/{queue}: one queue's QueueView.
func (h *handler) queue(w http.ResponseWriter, r *http.Request) {
	in, ok := h.pathQueue(w, r)
	if !ok {
		return
	}
	// A named queue's counts read its own stripe; the default queue's
	// totals are the engine's less the named ones' (a Stats).
	h.reply(w, http.StatusOK, NewQueueView(in, h.e.Queue(in.Name).Stats()))
}

// queueState answers a queue action with the queue's pause after it.
func (h *handler) queueState(w http.ResponseWriter, name, status string) {
	v := QueueActionView{Queue: AdminQueueName(name), Status: status}
	if in, ok := queueInfo(h.e, name); ok {
		v.Paused = in.Paused
		if in.Paused && !in.PausedUntil.IsZero() {
			t := in.PausedUntil
			v.PausedUntil = &t
		}
	}
	h.reply(w, http.StatusOK, v)
}

// pauseQueue answers POST /api/queues/{queue}/pause. Only a declared
// queue is paused: Queue.Pause would declare an unknown name, and an
// operator's typo should not make a queue.
func (h *handler) pauseQueue(w http.ResponseWriter, r *http.Request) {
	in, ok := h.pathQueue(w, r)
	if !ok {
		return
	}
	until, ok := h.pauseUntil(w, r)
	if !ok {
		return
	}
	if err := h.e.Queue(in.Name).Pause(until); err != nil {
		h.fail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin paused a queue", "queue", AdminQueueName(in.Name), "until", until)
	h.queueState(w, in.Name, "paused")
}

func (h *handler) resumeQueue(w http.ResponseWriter, r *http.Request) {
	in, ok := h.pathQueue(w, r)
	if !ok {
		return
	}
	if err := h.e.Queue(in.Name).Resume(); err != nil {
		h.fail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin resumed a queue", "queue", AdminQueueName(in.Name))
	h.queueState(w, in.Name, "resumed")
}

// deleteQueue answers POST /api/queues/{queue}/delete: 409 with the
// counts while the queue holds live messages or dead letters, 400 for the
// default queue, 404 for an unknown one.
func (h *handler) deleteQueue(w http.ResponseWriter, r *http.Request) {
	name := EngineQueueName(r.PathValue("queue"))
	if err := h.e.DeleteQueue(name); err != nil {
		if isRefusal(name, err) {
			replyError(w, http.StatusConflict, err.Error())
			return
		}
		h.fail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin deleted a queue", "queue", name)
	h.reply(w, http.StatusOK, QueueActionView{Queue: name, Status: "deleted"})
}

// isRefusal reports whether err is DeleteQueue refusing a named queue that
// is not empty: for a named queue, the only ErrInvalid it returns.
func isRefusal(name string, err error) bool {
	return name != "" && errors.Is(err, ringwal.ErrInvalid)
}
