package main

// `ringwal cancel`: live messages removed for good, by ID (at once) or
// by filter (counted, confirmed, then exactly those counted).

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/internal/adminfmt"
)

// newCancelCmd builds `ringwal cancel`.
func newCancelCmd() *cobra.Command {
	var t target
	var c confirmFlags
	var key, queue string
	var states []string
	var all bool
	cmd := &cobra.Command{
		Use:   "cancel [DIR | --addr URL] [ID... | --key K --queue Q --state S | --all]",
		Short: "Remove live messages for good (a leased one has its handler's ctx cancelled)",
		Long: `Cancel removes live messages for good: a pending, delayed, held or
waiting one at once; a leased one has its handler's ctx cancelled and its
lease ended. A dead letter is refused (see dlq purge).

Given IDs, it cancels each at once without asking: each one was named.
Given --key, --queue or --state (or --all for every live message), it
first counts what they match and asks before it acts ("About to cancel
120 messages (key=slack). Proceed? [y/N]"), then cancels exactly the
messages counted: one enqueued meanwhile is left alone. --yes skips the
question; --dry-run only counts. When standard input is not a terminal it
refuses without --yes (exit status 2). The default queue (` + admin.DefaultQueue + `)
cannot be selected apart in bulk: name another queue, or none.

` + sourceHelp,
		Example: "  ringwal cancel --addr http://127.0.0.1:9464 4711 4712\n  ringwal cancel DIR 4711\n" +
			"  ringwal cancel DIR --key 'slack:#ops' --state pending --dry-run",
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			sts, err := adminfmt.ParseStates(states)
			if err != nil {
				return usagef("--%v", err)
			}
			src, rest, err := t.open(args)
			if err != nil {
				return err
			}
			defer closeSource(src, &err)
			ids, err := parseIDs(rest)
			if err != nil {
				return err
			}
			filtered := key != "" || queue != "" || len(sts) > 0
			switch {
			case len(ids) > 0 && (filtered || all):
				return usagef("give either message IDs or --key/--queue/--state/--all, not both")
			case len(ids) == 0 && !filtered && !all:
				return usagef("name the message IDs to cancel, give --key, --queue or --state, or pass --all to cancel every live message")
			case len(ids) > 0:
				if c.dryRun {
					_, err := fmt.Fprintf(cmd.OutOrStdout(), "would cancel %s: %s; nothing changed (--dry-run)\n", plural(len(ids), "message", "messages"), summarizeIDs(ids))
					return err
				}
				return cancelAll(cmd.Context(), cmd.OutOrStdout(), src, ids)
			case queue == admin.DefaultQueue:
				return usagef("--queue %s: the default queue's messages cannot be selected apart in bulk; name a queue, or none for every queue", admin.DefaultQueue)
			}
			q := admin.MessageQuery{Queue: queue, Key: key, States: sts}
			return cancelMatching(cmd, src, q, describeMessages(q), c)
		}),
	}
	t.add(cmd)
	c.add(cmd)
	cmd.Flags().StringVar(&key, "key", "", "cancel the live messages of this key")
	cmd.Flags().StringVar(&queue, "queue", "", "cancel the live messages of this queue")
	cmd.Flags().StringSliceVar(&states, "state", nil, "only in this state: pending, delayed, leased, held (repeatable, or comma-separated)")
	cmd.Flags().BoolVar(&all, "all", false, "cancel every live message (when no ID or filter is given)")
	return cmd
}

// cancelMatching counts what q matches (with the count's mark), asks,
// and cancels exactly the messages counted.
func cancelMatching(cmd *cobra.Command, src source, q admin.MessageQuery, scope string, c confirmFlags) error {
	ctx := cmd.Context()
	n, mark, err := src.countMessages(ctx, q)
	if err != nil {
		return fmt.Errorf("counting messages: %w", err)
	}
	if mark == 0 {
		n = 0 // nothing was ever enqueued
	}
	out := cmd.OutOrStdout()
	what := plural(n, "message", "messages")
	switch {
	case c.dryRun:
		_, err := fmt.Fprintf(out, "would cancel %s (%s); nothing changed (--dry-run)\n", what, scope)
		return err
	case n == 0:
		_, err := fmt.Fprintf(out, "cancelled 0 messages (%s)\n", scope)
		return err
	}
	if err := c.confirm(cmd, "cancel", what, scope); err == errDeclined {
		_, err := fmt.Fprintln(out, "nothing cancelled: declined")
		return err
	} else if err != nil {
		return err
	}
	done, err := src.cancelMatching(ctx, q, mark)
	if err != nil {
		return fmt.Errorf("cancelled %d of the %s counted, then: %w", done, what, err)
	}
	_, err = fmt.Fprintf(out, "cancelled %s (%s)", plural(done, "message", "messages"), scope)
	if err == nil && done < n {
		_, err = fmt.Fprintf(out, "; %d of those counted left meanwhile (acked, dead-lettered or cancelled)", n-done)
	}
	if err == nil {
		_, err = fmt.Fprintln(out)
	}
	return err
}

// describeMessages says which live messages q selects, for a
// confirmation.
func describeMessages(q admin.MessageQuery) string {
	var parts []string
	if q.Key != "" {
		parts = append(parts, "key="+q.Key)
	}
	if q.Queue != "" {
		parts = append(parts, "queue="+q.Queue)
	}
	if len(q.States) > 0 {
		sts := make([]string, len(q.States))
		for i, s := range q.States {
			sts[i] = s.String()
		}
		parts = append(parts, "state="+strings.Join(sts, ","))
	}
	if len(parts) == 0 {
		return "every live message"
	}
	return safe(strings.Join(parts, ", "))
}

func (l *localSource) countMessages(_ context.Context, q admin.MessageQuery) (int, uint64, error) {
	return l.e.CountMessages(q.Filter(0))
}

func (l *localSource) cancelMatching(_ context.Context, q admin.MessageQuery, through uint64) (int, error) {
	if through == 0 {
		return 0, nil
	}
	return l.e.CancelMatching(q.Filter(through))
}

func (r *remoteSource) countMessages(ctx context.Context, q admin.MessageQuery) (int, uint64, error) {
	v, err := r.c.CountMessages(ctx, q)
	if err != nil {
		return 0, 0, r.explain(err)
	}
	mark, err := admin.ParseMark(v.Through)
	return v.Count, mark, err
}

func (r *remoteSource) cancelMatching(ctx context.Context, q admin.MessageQuery, through uint64) (int, error) {
	res, err := r.c.CancelMatching(ctx, q, through)
	return res.Count, r.explain(err)
}
