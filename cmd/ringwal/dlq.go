package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/dlq"
)

// newDLQCmd builds `ringwal dlq` and its subcommands.
func newDLQCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List, show, redrive, review or purge dead letters",
		Long: `The dlq commands work on the dead-letter queues of either
  - a data directory that no process holds (DIR, the first argument), which
    they open as the engine would, or
  - a running engine, through the admin API its application mounts
    (admin.NewHandler) or ` + "`ringwal serve`" + ` serves: --addr URL, or $RINGWAL_ADDR,
    with --token or $RINGWAL_TOKEN when the handler has a token.
The output is the same either way. A first argument that is a number is a
message ID, not a directory (write ./123 for a directory named 123); a
directory wins over $RINGWAL_ADDR.

Filters, shared by every subcommand (the admin API's query grammar, see
package admin's ParseDeadLetterQuery):
  --category C   only category C (repeatable, or comma-separated): transient,
                 timeout, rate_limited, resource, permanent, poison, expired,
                 unknown
  --queue Q      only messages of queue Q (` + admin.DefaultQueue + `: the default queue's)
  --key K        only messages whose breaker key is K
  --since T      only dead-lettered at or after T (an RFC 3339 time, or a
                 duration back from now: 90m, 24h; a date 2006-01-02 is read
                 as local midnight)
  --until T      only dead-lettered before T
  --reviewed[=true|false]
                 only reviewed (bare flag or true), only unreviewed (false);
                 yes, no and any are accepted too

redrive, review and purge act on the IDs given, or on every dead letter the
filters match (--limit N and --after ID narrow that, as for list); with
neither they refuse unless --all is passed. Given filters, they count the
matching dead letters first, say how many and ask "Proceed? [y/N]" on a
terminal (--yes skips the question, --dry-run only counts; without a
terminal they refuse unless --yes is given), then act on exactly those
counted in one call (one request with --addr): a dead letter that arrives
meanwhile is left alone. Given IDs, they act without asking.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newDLQListCmd(), newDLQShowCmd(), newDLQRedriveCmd(), newDLQReviewCmd(), newDLQPurgeCmd())
	return cmd
}

// dlqFilter holds the filter flags.
type dlqFilter struct {
	categories []string
	queue      string
	key        string
	since      string
	until      string
	reviewed   string
}

// add registers the filter flags on cmd.
func (f *dlqFilter) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.categories, "category", nil, "only this failure category (repeatable, or comma-separated)")
	fl.StringVar(&f.queue, "queue", "", "only this queue's ("+admin.DefaultQueue+": the default queue's)")
	fl.StringVar(&f.key, "key", "", "only this breaker key")
	fl.StringVar(&f.since, "since", "", "only dead-lettered at or after this time (RFC 3339, or a duration ago: 24h)")
	fl.StringVar(&f.until, "until", "", "only dead-lettered before this time (same forms as --since)")
	fl.StringVar(&f.reviewed, "reviewed", "", "review state: true (the bare flag) or false; unset: either")
	fl.Lookup("reviewed").NoOptDefVal = "true"
}

// set reports whether any filter was given. A --reviewed value that
// means either state (any, in any case, or empty) is no filter.
func (f *dlqFilter) set() bool {
	r := strings.ToLower(f.reviewed)
	return len(f.categories) > 0 || f.queue != "" || f.key != "" || f.since != "" || f.until != "" || (r != "any" && r != "")
}

// values turns the flags into the admin API's query parameters: yes, no
// and any become true, false and nothing; a date or a local time without
// a zone becomes RFC 3339.
func (f *dlqFilter) values() url.Values {
	v := url.Values{}
	for _, c := range f.categories {
		v.Add("category", c)
	}
	if f.key != "" {
		v.Set("key", f.key)
	}
	for name, s := range map[string]string{"since": f.since, "until": f.until} {
		if s != "" {
			v.Set(name, localTime(s))
		}
	}
	switch r := strings.ToLower(f.reviewed); r {
	case "any", "":
	case "yes", "reviewed":
		v.Set("reviewed", "true")
	case "no", "unreviewed":
		v.Set("reviewed", "false")
	default:
		v.Set("reviewed", r)
	}
	return v
}

// query turns the flags into a dlq.Query through admin's grammar; a bad
// value is a usage error.
func (f *dlqFilter) query(now time.Time) (dlq.Query, error) {
	q, err := admin.ParseDeadLetterQuery(f.values(), now)
	if err != nil {
		return q, usagef("%v", err)
	}
	// The queue by its admin name, as the admin API takes it: the sources
	// read admin.DefaultQueue as the default queue.
	q.Queue = f.queue
	return q, nil
}

// localTime rewrites a date (2006-01-02) or a time without a zone
// (2006-01-02T15:04:05, 2006-01-02 15:04:05), read in local time, as RFC
// 3339; anything else is returned as is for the grammar to judge.
func localTime(s string) string {
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t.Format(time.RFC3339)
		}
	}
	return s
}

// parseIDs parses message IDs given as arguments.
func parseIDs(args []string) ([]ringwal.ID, error) {
	ids := make([]ringwal.ID, 0, len(args))
	for _, a := range args {
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil || n == 0 {
			return nil, usagef("%q is not a message ID (a positive integer)", a)
		}
		ids = append(ids, n)
	}
	return ids, nil
}

// newDLQListCmd builds `ringwal dlq list`.
func newDLQListCmd() *cobra.Command {
	var f dlqFilter
	var t target
	var asJSON bool
	var limit int
	var after uint64
	cmd := &cobra.Command{
		Use:   "list [DIR | --addr URL]",
		Short: "List dead letters (a table, or --json)",
		Example: "  ringwal dlq list /tmp/ringwal-demo/live\n" +
			"  ringwal dlq list --category poison --category permanent --since 1h DIR\n" +
			"  ringwal dlq list --key flaky --reviewed=no --json DIR\n" +
			"  RINGWAL_ADDR=http://127.0.0.1:9464 ringwal dlq list --category poison",
		Args: cobra.MaximumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			q, err := f.query(time.Now())
			if err != nil {
				return err
			}
			if limit < 0 {
				return usagef("--limit %d is negative (0 = all)", limit)
			}
			q.After = after
			if limit > 0 {
				q.Limit = limit + 1 // one more, to know whether more follow
			}
			src, rest, err := t.open(args)
			if err != nil {
				return err
			}
			defer closeSource(src, &err)
			if len(rest) > 0 {
				return usagef("list takes no message IDs (see dlq show)")
			}
			ds, err := src.deadLetters(cmd.Context(), q)
			if err != nil {
				return err
			}
			more := limit > 0 && len(ds) > limit
			if more {
				ds = ds[:limit]
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), ds)
			}
			if err := printDLQTable(cmd.OutOrStdout(), ds); err != nil {
				return err
			}
			if more {
				_, err = fmt.Fprintln(cmd.OutOrStdout(), moreHint(len(ds), limit, ds[len(ds)-1].ID, more))
			}
			return err
		}),
	}
	f.add(cmd)
	t.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of entries (admin.DeadLetterView), with their failure history")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many entries (0 = all)")
	cmd.Flags().Uint64Var(&after, "after", 0, "page on: only entries after the entry with this ID")
	return cmd
}

// newDLQShowCmd builds `ringwal dlq show`.
func newDLQShowCmd() *cobra.Command {
	var f dlqFilter
	var t target
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [DIR | --addr URL] [ID...]",
		Short: "Show dead letters in full: message, headers, failure history",
		Long:  "Show prints the named dead letters, or every one the filters match, in full.",
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			src, ds, _, err := openSelection(cmd.Context(), &t, args, &f)
			if err != nil {
				return err
			}
			defer closeSource(src, &err)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), ds)
			}
			for i, d := range ds {
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				printDeadLetter(cmd.OutOrStdout(), d)
			}
			return nil
		}),
	}
	f.add(cmd)
	t.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of entries")
	return cmd
}

// selection is what a dlq subcommand acts on.
type selection struct {
	ids []ringwal.ID
	q   dlq.Query
}

// openSelection turns the filters into a query, opens the source args
// name and selects the dead letters (see selectDeadLetters): those with
// the IDs after the source, or those the filters match. The caller closes
// the source; on an error it is closed already.
func openSelection(ctx context.Context, t *target, args []string, f *dlqFilter) (src source, ds []admin.DeadLetterView, sel selection, err error) {
	if sel.q, err = f.query(time.Now()); err != nil {
		return nil, nil, sel, err
	}
	src, rest, err := t.open(args)
	if err != nil {
		return nil, nil, sel, err
	}
	if sel.ids, err = parseIDs(rest); err == nil {
		ds, err = selectDeadLetters(ctx, src, sel.ids, sel.q)
	}
	if err != nil {
		closeSource(src, &err)
		return nil, nil, sel, err
	}
	return src, ds, sel, nil
}

// selectDeadLetters returns the dead letters with the given IDs (an unknown
// one is an error), or those q matches when there are no IDs.
func selectDeadLetters(ctx context.Context, src source, ids []ringwal.ID, q dlq.Query) ([]admin.DeadLetterView, error) {
	if len(ids) == 0 {
		return src.deadLetters(ctx, q)
	}
	all, err := src.deadLetters(ctx, dlq.Query{})
	if err != nil {
		return nil, err
	}
	byID := make(map[ringwal.ID]admin.DeadLetterView, len(all))
	for _, d := range all {
		byID[d.ID] = d
	}
	out := make([]admin.DeadLetterView, 0, len(ids))
	var missing []string
	for _, id := range ids {
		d, ok := byID[id]
		if !ok {
			missing = append(missing, strconv.FormatUint(id, 10))
			continue
		}
		out = append(out, d)
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("no dead letter with ID %s: %w", strings.Join(missing, ", "), ringwal.ErrNotFound)
	}
	return out, nil
}

// newDLQRedriveCmd builds `ringwal dlq redrive`.
func newDLQRedriveCmd() *cobra.Command {
	return newBulkCmd(bulk{
		use:   "redrive [DIR | --addr URL] [ID...]",
		short: "Make dead letters pending again (attempts reset)",
		long: "Redrive makes the named dead letters, or those the filters match, pending again\n" +
			"under the same ID with their attempts reset. A running engine delivers them at\n" +
			"once; over a directory, the next engine to open it does.",
		verb: "redrive",
		act: func(ctx context.Context, src source, ds []admin.DeadLetterView, sel selection) ([]uint64, map[uint64]error, error) {
			if sel.q.Through != 0 {
				n, err := src.redriveMatching(ctx, sel.q)
				return matchingResult("redrove", ds, n, err)
			}
			return each(ds, func(d admin.DeadLetterView) error { return src.redrive(ctx, d.ID) })
		},
	}, nil)
}

// newDLQReviewCmd builds `ringwal dlq review`.
func newDLQReviewCmd() *cobra.Command {
	var note string
	return newBulkCmd(bulk{
		use:   "review [DIR | --addr URL] [ID...] --note TEXT",
		short: "Mark dead letters as reviewed, with a note",
		long: "Review marks the named dead letters, or those the filters match, as seen by an\n" +
			"operator, with a note (reviewing again replaces the note). Reviewed entries\n" +
			"are removed by retention after Options.DeadLetterRetention (90 days).",
		verb: "review",
		act: func(ctx context.Context, src source, ds []admin.DeadLetterView, sel selection) ([]uint64, map[uint64]error, error) {
			if sel.q.Through != 0 {
				n, err := src.reviewMatching(ctx, sel.q, note)
				return matchingResult("reviewed", ds, n, err)
			}
			return each(ds, func(d admin.DeadLetterView) error { return src.review(ctx, d.ID, note) })
		},
	}, func(cmd *cobra.Command) {
		cmd.Flags().StringVar(&note, "note", "", "the review note")
	})
}

// newDLQPurgeCmd builds `ringwal dlq purge`.
func newDLQPurgeCmd() *cobra.Command {
	return newBulkCmd(bulk{
		use:   "purge [DIR | --addr URL] [ID...]",
		short: "Delete dead letters for good",
		long:  "Purge deletes the named dead letters, or those the filters match. It cannot be undone.",
		verb:  "purge",
		act: func(ctx context.Context, src source, ds []admin.DeadLetterView, sel selection) ([]uint64, map[uint64]error, error) {
			if len(sel.ids) == 0 {
				if len(ds) == 0 {
					return []uint64{}, nil, nil
				}
				// Exactly what was counted: the count's mark (sel.q.Through)
				// bounds the purge, on a directory and through the API.
				n, err := src.purge(ctx, sel.q)
				return matchingResult("purged", ds, n, err)
			}
			return each(ds, func(d admin.DeadLetterView) error { return src.purgeOne(ctx, d.ID) })
		},
	}, nil)
}

// each applies fn to every dead letter, collecting successes and failures.
func each(ds []admin.DeadLetterView, fn func(admin.DeadLetterView) error) ([]uint64, map[uint64]error, error) {
	done := make([]uint64, 0, len(ds))
	failed := map[uint64]error{}
	for _, d := range ds {
		if err := fn(d); err != nil {
			if errors.Is(err, ringwal.ErrClosed) || errors.Is(err, admin.ErrUnauthorized) {
				return done, failed, err
			}
			failed[d.ID] = err
			continue
		}
		done = append(done, d.ID)
	}
	return done, failed, nil
}

// matchingResult reports a bulk verb that did n of the dead letters ds
// listed (the same set, in the same order): the first n are done; the
// rest went meanwhile (another operator, retention) and are reported as
// not found, as a one-by-one loop would have found them. An error is
// returned with how far it got.
func matchingResult(did string, ds []admin.DeadLetterView, n int, err error) ([]uint64, map[uint64]error, error) {
	ids := idsOf(ds)
	n = min(n, len(ids))
	if err != nil {
		return nil, nil, fmt.Errorf("%s %d of %d dead letters, then: %w", did, n, len(ids), err)
	}
	failed := map[uint64]error{}
	for _, id := range ids[n:] {
		failed[id] = fmt.Errorf("dead letter %d: gone meanwhile: %w", id, ringwal.ErrNotFound)
	}
	return ids[:n], failed, nil
}

// idsOf returns the dead letters' IDs.
func idsOf(ds []admin.DeadLetterView) []uint64 {
	out := make([]uint64, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}
