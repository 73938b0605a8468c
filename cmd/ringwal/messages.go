package main

// `ringwal messages`: the live messages of a key, with their state and
// why they wait.

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/internal/adminfmt"
)

// newMessagesCmd builds `ringwal messages`.
func newMessagesCmd() *cobra.Command {
	var t target
	var states []string
	var queue string
	var limit int
	var after uint64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "messages [DIR] KEY [--queue Q] [--state S] [--limit N] [--after ID]",
		Short: "List a key's live messages: state, why each waits, attempts, payload",
		Long: `Messages lists the live messages of KEY (pending, delayed, leased, held),
in the order they would be delivered where one exists (an ordered key),
else in enqueue order, with why each waits on its key (ordered, in-flight,
rate, paused). --queue Q lists only queue Q's (` + admin.DefaultQueue + `: the default
queue's). Cancel one with ` + "`ringwal cancel ID`" + `.

` + sourceHelp,
		Example: "  ringwal messages --addr http://127.0.0.1:9464 'slack:#ops' --state pending\n  ringwal messages DIR flaky --limit 20",
		Args:    cobra.RangeArgs(1, 2),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			sts, err := adminfmt.ParseStates(states)
			if err != nil {
				return usagef("--%v", err)
			}
			if limit < 0 {
				return usagef("--limit %d is negative (0 = all)", limit)
			}
			src, rest, err := t.openKeyed(args, 1, "KEY")
			if err != nil {
				return err
			}
			defer closeSource(src, &err)
			q := admin.MessageQuery{Queue: queue, Key: rest[0], States: sts, After: after}
			want := limit
			if limit > 0 {
				want = limit + 1 // one more, to know whether more follow
			}
			ms, err := allMessages(cmd, src, q, want)
			if err != nil {
				return err
			}
			more := limit > 0 && len(ms) > limit
			if more {
				ms = ms[:limit]
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), ms)
			}
			if err := printMessages(cmd.OutOrStdout(), ms); err != nil {
				return err
			}
			if more {
				_, err = fmt.Fprintln(cmd.OutOrStdout(), moreHint(len(ms), limit, ms[len(ms)-1].ID, more))
			}
			return err
		}),
	}
	t.add(cmd)
	cmd.Flags().StringVar(&queue, "queue", "", "only this queue's messages ("+admin.DefaultQueue+": the default queue's)")
	cmd.Flags().StringSliceVar(&states, "state", nil, "only this state: pending, delayed, leased, held (repeatable, or comma-separated)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many (0 = all)")
	cmd.Flags().Uint64Var(&after, "after", 0, "page on: only messages after the one with this ID")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of messages (admin.InfoView)")
	return cmd
}

// allMessages follows the pages of q until they end or limit (0: no
// limit) messages are in.
func allMessages(cmd *cobra.Command, src source, q admin.MessageQuery, limit int) ([]admin.InfoView, error) {
	out := []admin.InfoView{}
	for {
		q.Limit = admin.MaxLimit
		if limit > 0 {
			q.Limit = min(admin.MaxLimit, limit-len(out))
		}
		page, err := src.messages(cmd.Context(), q)
		if err != nil {
			return nil, fmt.Errorf("listing messages: %w", err)
		}
		out = append(out, page.Entries...)
		if page.Next == "" || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
		next, err := admin.ParseCursor(page.Next)
		if err != nil {
			return nil, fmt.Errorf("listing messages: %w", err)
		}
		q.After = next
	}
}

// printMessages writes messages as a table.
func printMessages(w io.Writer, ms []admin.InfoView) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tQUEUE\tSTATE\tWAITING\tPRIORITY\tATTEMPTS\tENQUEUED\tPAYLOAD")
	for _, in := range ms {
		payload := in.Message.Payload
		if in.Message.PayloadEncoding != admin.PayloadText {
			payload = "(binary, base64: " + payload + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", in.ID, safe(admin.AdminQueueName(in.Message.Queue)), safe(in.State), cell(in.Waiting), safe(in.Message.Priority),
			in.Attempts, timestamp(in.EnqueuedAt), safe(strings.TrimSpace(firstLine(payload, 40))))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, plural(len(ms), "message", "messages"))
	return err
}
