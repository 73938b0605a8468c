package admin

// The console's schedule page and actions: every schedule with its spec,
// queue, next and last tick, last outcome and counts; pausing, resuming,
// triggering and removing one (after a confirmation). Schedule names
// travel in form fields, never in the path, as keys and queues do.

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ringwal/ringwal"
)

// schedulesView is the schedules page's data.
type schedulesView struct {
	Schedules []ScheduleView
	Paused    int // how many are paused
	Now       time.Time
}

func (h *handler) schedulesPage(w http.ResponseWriter, r *http.Request) {
	infos := h.e.Schedules()
	if engineClosed(h.e) {
		h.failPage(w, r, ringwal.ErrClosed)
		return
	}
	v := schedulesView{Now: h.now()}
	for _, s := range NewScheduleViews(infos) {
		if s.Paused {
			v.Paused++
		}
		v.Schedules = append(v.Schedules, s)
	}
	q := r.URL.Query()
	flash := flashes[q.Get("done")]
	if q.Get("done") == "schedule-triggered" {
		if id, err := strconv.ParseUint(q.Get("run"), 10, 64); err == nil {
			flash = fmt.Sprintf("Triggered: run #%d is enqueued; the schedule's next tick is unchanged.", id)
		}
	}
	h.render(w, r, http.StatusOK, "schedules", page{Title: "Schedules", Nav: "schedules", Flash: flash, Data: v})
}

// formSchedule reads the form's schedule and returns it; false when it
// answered the request (400 for none, 404 for an unknown one).
func (h *handler) formSchedule(w http.ResponseWriter, r *http.Request) (ringwal.ScheduleInfo, bool) {
	name := r.PostForm.Get("schedule")
	if name == "" {
		h.errorPage(w, r, http.StatusBadRequest, "The form names no schedule.")
		return ringwal.ScheduleInfo{}, false
	}
	in, ok := scheduleInfo(h.e, name)
	if !ok {
		if engineClosed(h.e) {
			h.failPage(w, r, ringwal.ErrClosed)
			return in, false
		}
		h.errorPage(w, r, http.StatusNotFound, "No schedule "+quoteSchedule(name)+".")
		return in, false
	}
	return in, true
}

// scheduleFailPage answers an engine error of a schedule action as
// failPage does, and a run refused by its DedupID with 409.
func (h *handler) scheduleFailPage(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ringwal.ErrDuplicate) {
		h.errorPage(w, r, http.StatusConflict, err.Error()+": an earlier run holds the message's DedupID.")
		return
	}
	h.failPage(w, r, err)
}

func (h *handler) pauseScheduleAction(w http.ResponseWriter, r *http.Request) {
	in, ok := h.formSchedule(w, r)
	if !ok {
		return
	}
	if err := h.e.PauseSchedule(in.Name); err != nil {
		h.scheduleFailPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console paused a schedule", "schedule", in.Name)
	seeOther(w, r, "schedules?done=schedule-paused")
}

func (h *handler) resumeScheduleAction(w http.ResponseWriter, r *http.Request) {
	in, ok := h.formSchedule(w, r)
	if !ok {
		return
	}
	if err := h.e.ResumeSchedule(in.Name); err != nil {
		h.scheduleFailPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console resumed a schedule", "schedule", in.Name)
	seeOther(w, r, "schedules?done=schedule-resumed")
}

// triggerScheduleAction runs a schedule once now; the page it redirects
// to names the run.
func (h *handler) triggerScheduleAction(w http.ResponseWriter, r *http.Request) {
	in, ok := h.formSchedule(w, r)
	if !ok {
		return
	}
	id, err := h.e.TriggerSchedule(in.Name)
	if err != nil {
		h.scheduleFailPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console triggered a schedule", "schedule", in.Name, "id", id)
	seeOther(w, r, "schedules?done=schedule-triggered&run="+strconv.FormatUint(id, 10))
}

// removeScheduleAction removes a schedule once confirmed: without
// confirm=yes it answers the confirmation page, whose form posts again
// with it.
func (h *handler) removeScheduleAction(w http.ResponseWriter, r *http.Request) {
	in, ok := h.formSchedule(w, r)
	if !ok {
		return
	}
	if r.PostForm.Get("confirm") != "yes" {
		v := NewScheduleView(in)
		h.render(w, r, http.StatusOK, "scheduleremove", page{Title: "Remove schedule " + v.Name, Nav: "schedules", Data: v})
		return
	}
	if err := h.e.RemoveSchedule(in.Name); err != nil {
		h.scheduleFailPage(w, r, err)
		return
	}
	h.opts.Logger.Info("ringwal: admin console removed a schedule", "schedule", in.Name)
	seeOther(w, r, "schedules?done=schedule-removed")
}
