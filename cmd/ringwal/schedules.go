package main

// The schedule controls on the command line: schedules
// list|pause|resume|trigger|remove, on a stopped engine's directory or,
// with --addr, a running engine, with the same output. Schedules are
// added by the application (Engine.AddSchedule); the command line
// operates them.

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
)

// scheduleSource is the schedule controls a source offers. An unknown
// name is ringwal.ErrNotFound.
type scheduleSource interface {
	schedules(ctx context.Context) ([]admin.ScheduleView, error)
	// pauseSchedule, resumeSchedule and triggerSchedule return the
	// schedule after the action; trigger also the run's ID.
	pauseSchedule(ctx context.Context, name string) (admin.ScheduleView, error)
	resumeSchedule(ctx context.Context, name string) (admin.ScheduleView, error)
	triggerSchedule(ctx context.Context, name string) (ringwal.ID, admin.ScheduleView, error)
	removeSchedule(ctx context.Context, name string) error
}

func (l *localSource) schedules(context.Context) ([]admin.ScheduleView, error) {
	return admin.NewScheduleViews(l.e.Schedules()), nil
}

// schedule returns the view of the schedule called name, or an error
// wrapping ringwal.ErrNotFound that names it (the engine's says "message
// not found").
func (l *localSource) schedule(name string) (admin.ScheduleView, error) {
	v, ok := admin.FindSchedule(admin.NewScheduleViews(l.e.Schedules()), name)
	if !ok {
		return v, fmt.Errorf("no schedule %q: %w", name, ringwal.ErrNotFound)
	}
	return v, nil
}

func (l *localSource) pauseSchedule(_ context.Context, name string) (admin.ScheduleView, error) {
	return l.actOnSchedule(name, l.e.PauseSchedule)
}

func (l *localSource) resumeSchedule(_ context.Context, name string) (admin.ScheduleView, error) {
	return l.actOnSchedule(name, l.e.ResumeSchedule)
}

// actOnSchedule applies act to the schedule called name, if there is one,
// and returns the schedule after it.
func (l *localSource) actOnSchedule(name string, act func(string) error) (admin.ScheduleView, error) {
	if v, err := l.schedule(name); err != nil {
		return v, err
	}
	if err := act(name); err != nil {
		return admin.ScheduleView{}, err
	}
	return l.schedule(name)
}

func (l *localSource) triggerSchedule(_ context.Context, name string) (ringwal.ID, admin.ScheduleView, error) {
	var id ringwal.ID
	v, err := l.actOnSchedule(name, func(name string) (err error) {
		id, err = l.e.TriggerSchedule(name)
		return err
	})
	return id, v, err
}

func (l *localSource) removeSchedule(_ context.Context, name string) error {
	if _, err := l.schedule(name); err != nil {
		return err
	}
	return l.e.RemoveSchedule(name)
}

func (r *remoteSource) schedules(ctx context.Context) ([]admin.ScheduleView, error) {
	v, err := r.c.Schedules(ctx)
	return v, r.explain(err)
}

func (r *remoteSource) pauseSchedule(ctx context.Context, name string) (admin.ScheduleView, error) {
	if err := r.c.PauseSchedule(ctx, name); err != nil {
		return admin.ScheduleView{}, r.explain(err)
	}
	v, err := r.c.Schedule(ctx, name)
	return v, r.explain(err)
}

func (r *remoteSource) resumeSchedule(ctx context.Context, name string) (admin.ScheduleView, error) {
	if err := r.c.ResumeSchedule(ctx, name); err != nil {
		return admin.ScheduleView{}, r.explain(err)
	}
	v, err := r.c.Schedule(ctx, name)
	return v, r.explain(err)
}

func (r *remoteSource) triggerSchedule(ctx context.Context, name string) (ringwal.ID, admin.ScheduleView, error) {
	id, err := r.c.TriggerSchedule(ctx, name)
	if err != nil {
		return 0, admin.ScheduleView{}, r.explain(err)
	}
	v, err := r.c.Schedule(ctx, name)
	return id, v, r.explain(err)
}

func (r *remoteSource) removeSchedule(ctx context.Context, name string) error {
	return r.explain(r.c.RemoveSchedule(ctx, name))
}

// newSchedulesCmd builds `ringwal schedules` and its subcommands.
func newSchedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "List schedules with their next and last runs, pause, resume, trigger or remove one",
		Long: `A schedule is a durable periodic job: at each tick of its spec (cron, or
@every 90s) the engine enqueues its message into its queue, exactly once
per tick across restarts. The application adds schedules
(Engine.AddSchedule); the schedules commands list them and pause, resume,
trigger or remove one.

Opening a directory is a start like any other: ticks missed while the
engine was stopped catch up as each schedule's CatchUp says.

` + sourceHelp,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newSchedulesListCmd(), newScheduleActionCmd(pauseAct), newScheduleActionCmd(resumeAct),
		newScheduleActionCmd(triggerAct), newScheduleActionCmd(removeAct))
	return cmd
}

func newSchedulesListCmd() *cobra.Command {
	return listCmd(&cobra.Command{
		Use:   "list [DIR | --addr URL]",
		Short: "List the schedules: spec, queue, pause, next and last tick, runs, skipped, last outcome",
		Long: `List prints every schedule by name: its spec, the queue its runs go to,
whether it is paused, its next tick, its last tick (run or skipped), how
many runs and skipped ticks it has had, and the last outcome: "ran #ID",
or why the last tick did not run (the previous run still live, a full
queue).

` + sourceHelp,
		Example: "  ringwal schedules list /tmp/ringwal-demo/live\n  ringwal schedules list --addr http://127.0.0.1:9464 --json",
	}, "listing schedules", "print a JSON array of schedules (admin.ScheduleView)", source.schedules, printSchedules)
}

// printSchedules writes schedules as a table.
func printSchedules(w io.Writer, vs []admin.ScheduleView) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "SCHEDULE\tSPEC\tQUEUE\tPAUSED\tNEXT\tLAST\tRUNS\tSKIPPED\tLAST OUTCOME")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", cell(v.Name), cell(v.Spec), cell(v.Queue),
			yesNo(v.Paused), timestamp(v.NextAt), timestamp(v.LastAt), v.Runs, v.Skipped, cell(firstLine(v.Outcome(), 80)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, plural(len(vs), "schedule", "schedules"))
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// scheduleAct is one of the actions on a schedule.
type scheduleAct struct {
	use, short, long string
	// do acts and reports the action on w.
	do func(ctx context.Context, src source, name string, w io.Writer) error
}

var pauseAct = scheduleAct{
	use:   "pause",
	short: "Stop a schedule's ticks until it is resumed",
	long: `Pause stops SCHEDULE's ticks: none runs while it is paused, and those
that pass are not run on resume either. It is logged: a pause on a
directory holds when the engine next starts.`,
	do: func(ctx context.Context, src source, name string, w io.Writer) error {
		v, err := src.pauseSchedule(ctx, name)
		if err != nil {
			return fmt.Errorf("pausing schedule %q: %w", name, err)
		}
		return printScheduleState(w, "paused", v)
	},
}

var resumeAct = scheduleAct{
	use:   "resume",
	short: "Restart a schedule's ticks from now",
	long:  "Resume lets SCHEDULE tick again, from now: ticks that passed while it\nwas paused do not run.",
	do: func(ctx context.Context, src source, name string, w io.Writer) error {
		v, err := src.resumeSchedule(ctx, name)
		if err != nil {
			return fmt.Errorf("resuming schedule %q: %w", name, err)
		}
		return printScheduleState(w, "resumed", v)
	},
}

var triggerAct = scheduleAct{
	use:   "trigger",
	short: "Run a schedule once now (its next tick stays)",
	long: `Trigger enqueues one run of SCHEDULE now, paused or not, whatever its
Overlap says, and prints the run's ID; the next tick stays as it was. A
full queue refuses it. On a directory the run waits there for the
application to start.`,
	do: func(ctx context.Context, src source, name string, w io.Writer) error {
		id, v, err := src.triggerSchedule(ctx, name)
		if err != nil {
			return fmt.Errorf("triggering schedule %q: %w", name, err)
		}
		_, err = fmt.Fprintf(w, "triggered schedule %s: run %d in queue %s\n", safe(name), id, safe(v.Queue))
		return err
	},
}

var removeAct = scheduleAct{
	use:   "remove",
	short: "Remove a schedule (runs already enqueued stay)",
	long: `Remove removes SCHEDULE: it ticks no more and its counts are gone; runs
already enqueued stay in their queue. An application that adds its
schedules at start adds it again then.`,
	do: func(ctx context.Context, src source, name string, w io.Writer) error {
		if err := src.removeSchedule(ctx, name); err != nil {
			return fmt.Errorf("removing schedule %q: %w", name, err)
		}
		_, err := fmt.Fprintf(w, "removed schedule %s\n", safe(name))
		return err
	},
}

// newScheduleActionCmd builds `ringwal schedules <act> [DIR] SCHEDULE`.
func newScheduleActionCmd(act scheduleAct) *cobra.Command {
	var t target
	cmd := &cobra.Command{
		Use:     act.use + " [DIR] SCHEDULE",
		Short:   act.short,
		Long:    act.long + "\n\n" + sourceHelp,
		Example: "  ringwal schedules " + act.use + " --addr http://127.0.0.1:9464 nightly-report\n  ringwal schedules " + act.use + " DIR nightly-report",
		Args:    cobra.RangeArgs(1, 2),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			src, rest, err := t.openKeyed(args, 1, "SCHEDULE")
			if err != nil {
				return err
			}
			defer closeSource(src, &err)
			return act.do(cmd.Context(), src, rest[0], cmd.OutOrStdout())
		}),
	}
	t.add(cmd)
	return cmd
}

// printScheduleState reports a schedule's pause or resume.
func printScheduleState(w io.Writer, status string, v admin.ScheduleView) error {
	state := "paused"
	if !v.Paused {
		state = "next tick " + timestamp(v.NextAt)
	}
	_, err := fmt.Fprintf(w, "%s schedule %s: %s\n", status, safe(v.Name), state)
	return err
}
