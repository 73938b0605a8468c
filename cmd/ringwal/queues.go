package main

// The queue controls on the command line: queues list|pause|resume|delete,
// on a stopped engine's directory or, with --addr, a running engine, with
// the same output. A queue is named as the admin API names it: the
// default queue is _default (admin.DefaultQueue).

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
)

// queueSource is the queue controls a source offers. Names are admin
// names (admin.DefaultQueue for the default queue); an undeclared name is
// ringwal.ErrNotFound, never declared by a pause.
type queueSource interface {
	queues(ctx context.Context) ([]admin.QueueView, error)
	// pauseQueue and resumeQueue return the queue after the action.
	pauseQueue(ctx context.Context, name string, until time.Time) (admin.QueueView, error)
	resumeQueue(ctx context.Context, name string) (admin.QueueView, error)
	deleteQueue(ctx context.Context, name string) error
}

func (l *localSource) queues(context.Context) ([]admin.QueueView, error) {
	return admin.NewQueueViews(l.e.Queues(), l.e.Stats()), nil
}

// declared returns the view of the queue called name (an admin name), or
// an error wrapping ringwal.ErrNotFound: the engine's Queue(name).Pause
// would declare an unknown name, and an operator's typo must not make a
// queue (the admin API refuses it too).
func (l *localSource) declared(name string) (admin.QueueView, error) {
	v, ok := admin.FindQueue(admin.NewQueueViews(l.e.Queues(), l.e.Stats()), name)
	if !ok {
		return v, fmt.Errorf("no queue %q: %w", name, ringwal.ErrNotFound)
	}
	return v, nil
}

func (l *localSource) pauseQueue(_ context.Context, name string, until time.Time) (admin.QueueView, error) {
	v, err := l.declared(name)
	if err != nil {
		return v, err
	}
	if err := l.e.Queue(v.EngineName()).Pause(until); err != nil {
		return v, err
	}
	return l.declared(name)
}

func (l *localSource) resumeQueue(_ context.Context, name string) (admin.QueueView, error) {
	v, err := l.declared(name)
	if err != nil {
		return v, err
	}
	if err := l.e.Queue(v.EngineName()).Resume(); err != nil {
		return v, err
	}
	return l.declared(name)
}

func (l *localSource) deleteQueue(_ context.Context, name string) error {
	return l.e.DeleteQueue(admin.EngineQueueName(name))
}

func (r *remoteSource) queues(ctx context.Context) ([]admin.QueueView, error) {
	v, err := r.c.Queues(ctx)
	return v, r.explain(err)
}

func (r *remoteSource) pauseQueue(ctx context.Context, name string, until time.Time) (admin.QueueView, error) {
	if err := r.c.PauseQueue(ctx, name, until); err != nil {
		return admin.QueueView{}, r.explain(err)
	}
	v, err := r.c.QueueStats(ctx, name)
	return v, r.explain(err)
}

func (r *remoteSource) resumeQueue(ctx context.Context, name string) (admin.QueueView, error) {
	if err := r.c.ResumeQueue(ctx, name); err != nil {
		return admin.QueueView{}, r.explain(err)
	}
	v, err := r.c.QueueStats(ctx, name)
	return v, r.explain(err)
}

func (r *remoteSource) deleteQueue(ctx context.Context, name string) error {
	return r.explain(r.c.DeleteQueue(ctx, name))
}

// queueHelp is the part of the queue commands' help about names.
const queueHelp = `A queue is named as the admin API names it: the default queue (the one
a message with no Queue goes to) is ` + admin.DefaultQueue + `.`

// newQueuesCmd builds `ringwal queues` and its subcommands.
func newQueuesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List queues with their counts, pause, resume or delete one",
		Long: `An engine holds named queues over one log, each with its own messages,
workers, pause and counts. The queues commands list them and pause,
resume or delete one.

` + queueHelp + `

` + sourceHelp,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newQueuesListCmd(), newQueuesPauseCmd(), newQueuesResumeCmd(), newQueuesDeleteCmd())
	return cmd
}

func newQueuesListCmd() *cobra.Command {
	return listCmd(&cobra.Command{
		Use:   "list [DIR | --addr URL]",
		Short: "List the queues: pause, messages by state, dead letters, totals, topics",
		Long: `List prints every declared queue, the default first, then by name: its
pause, its live messages by state, its dead letters, its totals since the
engine opened (enqueued, acked, dead-lettered), the age of its
longest-waiting pending message and the topics it is bound to.

` + sourceHelp,
		Example: "  ringwal queues list /tmp/ringwal-demo/live\n  ringwal queues list --addr http://127.0.0.1:9464 --json",
	}, "listing queues", "print a JSON array of queues (admin.QueueView)", source.queues, printQueues)
}

// printQueues writes queues as a table.
func printQueues(w io.Writer, qs []admin.QueueView) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "QUEUE\tPAUSED\tPENDING\tDELAYED\tLEASED\tHELD\tDEAD\tENQUEUED\tACKED\tDEAD-LETTERED\tOLDEST PENDING\tTOPICS")
	for _, q := range qs {
		oldest := "-"
		if q.OldestPendingSeconds > 0 {
			oldest = dur(time.Duration(q.OldestPendingSeconds * float64(time.Second)).Round(time.Millisecond))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", cell(q.Name), pausedText(q.Paused, q.PausedUntil),
			q.Pending, q.Delayed, q.Leased, q.Held, q.Dead, q.Enqueued, q.Acked, q.DeadLettered, oldest,
			cell(strings.Join(q.Options.Topics, ",")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, plural(len(qs), "queue", "queues"))
	return err
}

// queueAction is the body of the queue commands: open the engine (a
// directory or --addr), act on the queue the last argument names.
func queueAction(cmd *cobra.Command, t *target, args []string, act func(context.Context, source, string) error) (err error) {
	src, rest, err := t.openKeyed(args, 1, "QUEUE")
	if err != nil {
		return err
	}
	defer closeSource(src, &err)
	name := admin.AdminQueueName(rest[0])
	return act(cmd.Context(), src, name)
}

// printQueuePause reports a queue's pause or resume.
func printQueuePause(w io.Writer, status string, v admin.QueueView) error {
	state := "delivering"
	if v.Paused {
		state = "paused " + pausedText(true, v.PausedUntil)
	}
	_, err := fmt.Fprintf(w, "%s queue %s: %s\n", status, safe(v.Name), state)
	return err
}

func newQueuesPauseCmd() *cobra.Command {
	var t target
	var until string
	cmd := &cobra.Command{
		Use:   "pause [DIR] QUEUE [--until T]",
		Short: "Hold back a queue's delivery until a time, or until resumed",
		Long: `Pause holds back delivery of QUEUE's messages: its consumers get nothing
while enqueues, timers and the other queues go on. A pause never shortens
a longer one in force. An undeclared queue is an error (nothing is
declared).

` + queueHelp + `

` + sourceHelp,
		Example: "  ringwal queues pause --addr http://127.0.0.1:9464 emails --until 1h\n  ringwal queues pause DIR " + admin.DefaultQueue,
		Args:    cobra.RangeArgs(1, 2),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			at, err := parseUntil(until)
			if err != nil {
				return err
			}
			return queueAction(cmd, &t, args, func(ctx context.Context, src source, name string) error {
				v, err := src.pauseQueue(ctx, name, at)
				if err != nil {
					return fmt.Errorf("pausing queue %q: %w", name, err)
				}
				return printQueuePause(cmd.OutOrStdout(), "paused", v)
			})
		}),
	}
	t.add(cmd)
	untilFlag(cmd, &until)
	return cmd
}

func newQueuesResumeCmd() *cobra.Command {
	var t target
	cmd := &cobra.Command{
		Use:   "resume [DIR] QUEUE",
		Short: "End a queue's pause",
		Long:  "Resume lets QUEUE's messages go again.\n\n" + queueHelp + "\n\n" + sourceHelp,
		Args:  cobra.RangeArgs(1, 2),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return queueAction(cmd, &t, args, func(ctx context.Context, src source, name string) error {
				v, err := src.resumeQueue(ctx, name)
				if err != nil {
					return fmt.Errorf("resuming queue %q: %w", name, err)
				}
				return printQueuePause(cmd.OutOrStdout(), "resumed", v)
			})
		}),
	}
	t.add(cmd)
	return cmd
}

func newQueuesDeleteCmd() *cobra.Command {
	var t target
	cmd := &cobra.Command{
		Use:   "delete [DIR] QUEUE",
		Short: "Delete an empty queue (refused while it holds messages or dead letters)",
		Long: `Delete deletes QUEUE: its declaration, options, pause and counts go, and
a later message to that name declares it afresh. It is refused while the
queue holds live messages or dead letters (the error says how many: cancel,
drain or purge them first); the default queue cannot be deleted.

` + queueHelp + `

` + sourceHelp,
		Example: "  ringwal queues delete --addr http://127.0.0.1:9464 old-reports\n  ringwal queues delete DIR old-reports",
		Args:    cobra.RangeArgs(1, 2),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return queueAction(cmd, &t, args, func(ctx context.Context, src source, name string) error {
				if name == admin.DefaultQueue {
					return usagef("the default queue (%s) cannot be deleted", admin.DefaultQueue)
				}
				if err := src.deleteQueue(ctx, name); err != nil {
					return fmt.Errorf("deleting queue %q: %w", name, err)
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "deleted queue %s\n", safe(name))
				return err
			})
		}),
	}
	t.add(cmd)
	return cmd
}
