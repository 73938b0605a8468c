package admin

// The JSON API of schedules: the list, one schedule, and pausing,
// resuming, triggering and removing one. A {schedule} in a path is the
// schedule's name, one escaped path segment (SchedulePath).

import (
	"errors"
	"net/http"
	"time"

	"github.com/ringwal/ringwal"
)

// ScheduleActionView answers a schedule's pause, resume, trigger or
// remove: Status is paused, resumed, triggered or removed; Paused and
// NextAt are the schedule's after the action (NextAt absent while it is
// paused, and after a removal); ID is the run a trigger enqueued.
type ScheduleActionView struct {
	Schedule string     `json:"schedule"`
	Status   string     `json:"status"`
	Paused   bool       `json:"paused"`
	NextAt   time.Time  `json:"next_at,omitzero"`
	ID       ringwal.ID `json:"id,omitempty"`
}

// schedules answers GET /api/schedules: every schedule, by name.
func (h *handler) schedules(w http.ResponseWriter, r *http.Request) {
	infos := h.e.Schedules()
	if engineClosed(h.e) {
		h.fail(w, r, ringwal.ErrClosed)
		return
	}
	h.reply(w, http.StatusOK, NewScheduleViews(infos))
}

// pathSchedule returns the schedule the {schedule} path segment names, or
// answers 404 (503 once the engine is closed).
func (h *handler) pathSchedule(w http.ResponseWriter, r *http.Request) (ringwal.ScheduleInfo, bool) {
	name := r.PathValue("schedule")
	in, ok := scheduleInfo(h.e, name)
	if !ok {
		if engineClosed(h.e) {
			h.fail(w, r, ringwal.ErrClosed)
			return in, false
		}
		replyError(w, http.StatusNotFound, "no schedule "+quoteSchedule(name))
		return in, false
	}
	return in, true
}

// schedule answers GET /api/schedules/{schedule}: one ScheduleView.
func (h *handler) schedule(w http.ResponseWriter, r *http.Request) {
	in, ok := h.pathSchedule(w, r)
	if !ok {
		return
	}
	h.reply(w, http.StatusOK, NewScheduleView(in))
}

// scheduleState answers a schedule action with the schedule after it.
func (h *handler) scheduleState(w http.ResponseWriter, name, status string, id ringwal.ID) {
	v := ScheduleActionView{Schedule: name, Status: status, ID: id}
	if in, ok := scheduleInfo(h.e, name); ok {
		v.Paused, v.NextAt = in.Paused, in.Next
	}
	h.reply(w, http.StatusOK, v)
}

// scheduleFail answers an engine error of a schedule action: fail's
// statuses, and 409 for a trigger whose run the message's DedupID refuses
// (an earlier run holds it).
func (h *handler) scheduleFail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ringwal.ErrDuplicate) {
		replyError(w, http.StatusConflict, err.Error())
		return
	}
	h.fail(w, r, err)
}

// pauseSchedule answers POST /api/schedules/{schedule}/pause.
func (h *handler) pauseSchedule(w http.ResponseWriter, r *http.Request) {
	in, ok := h.pathSchedule(w, r)
	if !ok {
		return
	}
	if err := h.e.PauseSchedule(in.Name); err != nil {
		h.scheduleFail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin paused a schedule", "schedule", in.Name)
	h.scheduleState(w, in.Name, "paused", 0)
}

// resumeSchedule answers POST /api/schedules/{schedule}/resume.
func (h *handler) resumeSchedule(w http.ResponseWriter, r *http.Request) {
	in, ok := h.pathSchedule(w, r)
	if !ok {
		return
	}
	if err := h.e.ResumeSchedule(in.Name); err != nil {
		h.scheduleFail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin resumed a schedule", "schedule", in.Name)
	h.scheduleState(w, in.Name, "resumed", 0)
}

// triggerSchedule answers POST /api/schedules/{schedule}/trigger with the
// run's ID: 503 with Retry-After when the queue is full (ringwal.ErrFull),
// 409 when the message's DedupID refuses the run.
func (h *handler) triggerSchedule(w http.ResponseWriter, r *http.Request) {
	in, ok := h.pathSchedule(w, r)
	if !ok {
		return
	}
	id, err := h.e.TriggerSchedule(in.Name)
	if err != nil {
		h.scheduleFail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin triggered a schedule", "schedule", in.Name, "id", id)
	h.scheduleState(w, in.Name, "triggered", id)
}

// removeSchedule answers POST /api/schedules/{schedule}/remove.
func (h *handler) removeSchedule(w http.ResponseWriter, r *http.Request) {
	in, ok := h.pathSchedule(w, r)
	if !ok {
		return
	}
	if err := h.e.RemoveSchedule(in.Name); err != nil {
		h.scheduleFail(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin removed a schedule", "schedule", in.Name)
	h.reply(w, http.StatusOK, ScheduleActionView{Schedule: in.Name, Status: "removed"})
}
