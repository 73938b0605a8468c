package admin

// The Client's schedule controls: the schedules, one schedule, and
// pausing, resuming, triggering and removing one.

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/ringwal/ringwal"
)

// Schedules returns every schedule by name, each with its spec, message,
// options and state (GET /api/schedules).
func (c *Client) Schedules(ctx context.Context) ([]ScheduleView, error) {
	var v []ScheduleView
	return v, c.do(ctx, http.MethodGet, "/api/schedules", nil, nil, &v)
}

// Schedule returns the named schedule's view (GET
// /api/schedules/{schedule}). An unknown name is ringwal.ErrNotFound.
func (c *Client) Schedule(ctx context.Context, name string) (ScheduleView, error) {
	var v ScheduleView
	return v, c.do(ctx, http.MethodGet, "/api/schedules/"+SchedulePath(name), nil, nil, &v)
}

// PauseSchedule stops the named schedule's ticks until ResumeSchedule
// (POST /api/schedules/{schedule}/pause). An unknown name is
// ringwal.ErrNotFound.
func (c *Client) PauseSchedule(ctx context.Context, name string) error {
	var v ScheduleActionView
	return c.do(ctx, http.MethodPost, "/api/schedules/"+SchedulePath(name)+"/pause", nil, nil, &v)
}

// ResumeSchedule restarts the named schedule's ticks from now: ticks
// that passed while it was paused do not run (POST
// /api/schedules/{schedule}/resume).
func (c *Client) ResumeSchedule(ctx context.Context, name string) error {
	var v ScheduleActionView
	return c.do(ctx, http.MethodPost, "/api/schedules/"+SchedulePath(name)+"/resume", nil, nil, &v)
}

// TriggerSchedule runs the named schedule once now and returns the run's
// ID (POST /api/schedules/{schedule}/trigger); its next tick stays as it
// was. A full queue is an error wrapping ringwal.ErrFull; a run its
// message's DedupID refuses (an earlier run holds it) one wrapping
// ErrConflict and ringwal.ErrDuplicate; an unknown name
// ringwal.ErrNotFound.
func (c *Client) TriggerSchedule(ctx context.Context, name string) (ringwal.ID, error) {
	var v ScheduleActionView
	err := c.do(ctx, http.MethodPost, "/api/schedules/"+SchedulePath(name)+"/trigger", nil, nil, &v)
	var ae *Error
	if errors.As(err, &ae) && ae.Status == http.StatusConflict && !errors.Is(ae.err, ErrProtocol) {
		ae.err = fmt.Errorf("%w (%w)", ErrConflict, ringwal.ErrDuplicate)
	}
	return v.ID, err
}

// RemoveSchedule removes the named schedule (POST
// /api/schedules/{schedule}/remove); a run already enqueued stays. An
// unknown name is ringwal.ErrNotFound.
func (c *Client) RemoveSchedule(ctx context.Context, name string) error {
	var v ScheduleActionView
	return c.do(ctx, http.MethodPost, "/api/schedules/"+SchedulePath(name)+"/remove", nil, nil, &v)
}
