package main

// redrive, review and purge: the dead-letter verbs that act on many. By
// IDs they act at once (the operator named each one); by filters or --all
// they count first, with the store's mark, ask (see confirmFlags), and
// then act on exactly what was counted.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal/admin"
)

// bulk is a mutating subcommand's description.
type bulk struct {
	use, short, long, verb string
	// act applies the operation to the selected dead letters and returns
	// the IDs done; a per-ID failure goes in failed. Given filters,
	// sel.q.Through is the count's mark (0 for the default queue alone,
	// which the engine cannot count apart: then ds go one by one).
	act func(ctx context.Context, src source, ds []admin.DeadLetterView, sel selection) (done []uint64, failed map[uint64]error, err error)
}

// confirmHelp is the part of a bulk verb's help about the confirmation.
const confirmHelp = `
Given filters or --all, it first counts what they match and asks before it
acts ("About to purge 739 dead letters (category=poison). Proceed? [y/N]"),
then acts on exactly the dead letters counted: one that arrives meanwhile
is left alone. --yes skips the question; --dry-run only counts. When
standard input is not a terminal (a script, a pipe) it refuses without
--yes (exit status 2). Given IDs, it acts at once without asking: each one
was named.`

// newBulkCmd builds redrive, review or purge over the shared selection
// logic: IDs, or filters, or --all.
func newBulkCmd(b bulk, extra func(*cobra.Command)) *cobra.Command {
	var f dlqFilter
	var t target
	var c confirmFlags
	var asJSON, all bool
	var limit int
	var after uint64
	cmd := &cobra.Command{
		Use:   b.use,
		Short: b.short,
		Long:  b.long + "\n" + confirmHelp,
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			sel := selection{}
			if sel.q, err = f.query(time.Now()); err != nil {
				return err
			}
			if limit < 0 {
				return usagef("--limit %d is negative (0 = all)", limit)
			}
			sel.q.Limit, sel.q.After = limit, after
			src, rest, err := t.open(args)
			if err != nil {
				return err
			}
			defer closeSource(src, &err)
			if sel.ids, err = parseIDs(rest); err != nil {
				return err
			}
			paged := limit > 0 || after > 0
			switch {
			case len(sel.ids) > 0 && (f.set() || all || paged):
				return usagef("give either message IDs or filters/--all/--limit/--after, not both")
			case len(sel.ids) == 0 && !f.set() && !all:
				return usagef("name the message IDs, give a filter, or pass --all to %s every dead letter", b.verb)
			}
			if len(sel.ids) > 0 {
				return bulkByID(cmd, b, src, sel, c, asJSON)
			}
			return bulkMatching(cmd, b, src, sel, f.describe(limit, after), c, asJSON)
		}),
	}
	f.add(cmd)
	t.add(cmd)
	c.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "act on every dead letter (when no ID or filter is given)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many, in dead-letter order (0 = all)")
	cmd.Flags().Uint64Var(&after, "after", 0, "start after the dead letter with this ID (a list's \"more: --after N\")")
	if extra != nil {
		extra(cmd)
	}
	return cmd
}

// bulkByID acts on the dead letters named by ID, without asking.
func bulkByID(cmd *cobra.Command, b bulk, src source, sel selection, c confirmFlags, asJSON bool) error {
	ds, err := selectDeadLetters(cmd.Context(), src, sel.ids, sel.q)
	if err != nil {
		return err
	}
	if c.dryRun {
		return reportDryRun(cmd, b.verb, len(ds), summarizeIDs(idsOf(ds)), asJSON)
	}
	return finishBulk(cmd, b, src, ds, sel, asJSON)
}

// bulkMatching counts what sel.q matches (fixing the set by the store's
// mark), asks, and acts on exactly that set.
func bulkMatching(cmd *cobra.Command, b bulk, src source, sel selection, scope string, c confirmFlags, asJSON bool) error {
	ctx := cmd.Context()
	var n int
	var ds []admin.DeadLetterView
	var err error
	if sel.q.Queue == admin.DefaultQueue {
		if b.verb == "purge" {
			return errDefaultQueuePurge
		}
		// The engine cannot count the default queue's apart: the list
		// is the count, and its IDs go one by one.
		if ds, err = src.deadLetters(ctx, sel.q); err != nil {
			return err
		}
		n = len(ds)
	} else {
		if n, sel.q.Through, err = src.countDeadLetters(ctx, sel.q); err != nil {
			return err
		}
		if sel.q.Through == 0 { // the store never held one
			n = 0
		}
	}
	switch {
	case c.dryRun:
		return reportDryRun(cmd, b.verb, n, scope, asJSON)
	case n == 0:
		return reportBulk(cmd.OutOrStdout(), b.verb, []uint64{}, nil, asJSON)
	}
	if err := c.confirm(cmd, b.verb, plural(n, "dead letter", "dead letters"), scope); err == errDeclined {
		fmt.Fprintf(cmd.OutOrStdout(), "nothing %s: declined\n", pastTense(b.verb))
		return nil
	} else if err != nil {
		return err
	}
	if ds == nil {
		// Listed up to the mark: exactly what was counted (less any gone
		// since), for the report of IDs.
		if ds, err = src.deadLetters(ctx, sel.q); err != nil {
			return err
		}
	}
	return finishBulk(cmd, b, src, ds, sel, asJSON)
}

// finishBulk acts on ds and reports what was done.
func finishBulk(cmd *cobra.Command, b bulk, src source, ds []admin.DeadLetterView, sel selection, asJSON bool) error {
	done, failed, err := b.act(cmd.Context(), src, ds, sel)
	if err != nil {
		return err
	}
	if err := reportBulk(cmd.OutOrStdout(), b.verb, done, failed, asJSON); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %s could not be %s", len(failed), plural(len(done)+len(failed), "dead letter", "dead letters"), pastTense(b.verb))
	}
	return nil
}

// reportDryRun says what a verb would have acted on.
func reportDryRun(cmd *cobra.Command, verb string, n int, which string, asJSON bool) error {
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), struct {
			Action string `json:"action"`
			DryRun bool   `json:"dry_run"`
			Count  int    `json:"count"`
		}{verb, true, n})
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "would %s %s (%s); nothing changed (--dry-run)\n", verb, plural(n, "dead letter", "dead letters"), orDash(which))
	return err
}

// describe says which dead letters the flags select, for a confirmation:
// "category=poison, key=flaky", or "every dead letter".
func (f *dlqFilter) describe(limit int, after uint64) string {
	var parts []string
	if len(f.categories) > 0 {
		parts = append(parts, "category="+strings.Join(f.categories, ","))
	}
	for _, p := range [][2]string{{"queue", f.queue}, {"key", f.key}, {"since", f.since}, {"until", f.until}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+p[1])
		}
	}
	if r := strings.ToLower(f.reviewed); r != "" && r != "any" {
		parts = append(parts, "reviewed="+f.reviewed)
	}
	if len(parts) == 0 {
		parts = append(parts, "every dead letter")
	}
	if after > 0 {
		parts = append(parts, fmt.Sprintf("after %d", after))
	}
	if limit > 0 {
		parts = append(parts, fmt.Sprintf("at most %d", limit))
	}
	return safe(strings.Join(parts, ", "))
}
