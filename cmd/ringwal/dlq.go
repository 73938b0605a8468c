package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/dlq"
)

// newDLQCmd builds `ringwal dlq` and its subcommands.
func newDLQCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List, show, redrive, review or purge dead letters of a data directory",
		Long: `The dlq commands work on the dead-letter queues of a data directory that no
running engine holds (for a live one, use the admin API of ` + "`ringwal serve`" + `).

Filters, shared by every subcommand (the admin API's query grammar, see
package admin's ParseDeadLetterQuery):
  --category C   only category C (repeatable, or comma-separated): transient,
                 timeout, rate_limited, resource, permanent, poison, expired,
                 unknown
  --key K        only messages whose breaker key is K
  --since T      only dead-lettered at or after T (an RFC 3339 time, or a
                 duration back from now: 90m, 24h; a date 2006-01-02 is read
                 as local midnight)
  --until T      only dead-lettered before T
  --reviewed[=true|false]
                 only reviewed (bare flag or true), only unreviewed (false);
                 yes, no and any are accepted too

redrive, review and purge act on the IDs given, or on every dead letter the
filters match; with neither they refuse unless --all is passed.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newDLQListCmd(), newDLQShowCmd(), newDLQRedriveCmd(), newDLQReviewCmd(), newDLQPurgeCmd())
	return cmd
}

// dlqFilter holds the filter flags.
type dlqFilter struct {
	categories []string
	key        string
	since      string
	until      string
	reviewed   string
}

// add registers the filter flags on cmd.
func (f *dlqFilter) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.categories, "category", nil, "only this failure category (repeatable, or comma-separated)")
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
	return len(f.categories) > 0 || f.key != "" || f.since != "" || f.until != "" || (r != "any" && r != "")
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
		ids = append(ids, ringwal.ID(n))
	}
	return ids, nil
}

// newDLQListCmd builds `ringwal dlq list`.
func newDLQListCmd() *cobra.Command {
	var f dlqFilter
	var asJSON bool
	var limit int
	var after uint64
	cmd := &cobra.Command{
		Use:   "list DIR",
		Short: "List dead letters (a table, or --json)",
		Example: "  ringwal dlq list /tmp/ringwal-demo/live\n" +
			"  ringwal dlq list --category poison --category permanent --since 1h DIR\n" +
			"  ringwal dlq list --key flaky --reviewed=no --json DIR",
		Args: cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			q, err := f.query(time.Now())
			if err != nil {
				return err
			}
			if limit < 0 {
				return usagef("--limit %d is negative (0 = all)", limit)
			}
			q.Limit, q.After = limit, after
			e, err := openDataDir(args[0])
			if err != nil {
				return err
			}
			defer closeEngine(e, &err)
			ds, err := e.DeadLetters(q)
			if err != nil {
				return fmt.Errorf("listing dead letters: %w", err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), admin.NewDeadLetterViews(ds))
			}
			return printDLQTable(cmd.OutOrStdout(), ds)
		}),
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of entries (admin.DeadLetterView), with their failure history")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many entries (0 = all)")
	cmd.Flags().Uint64Var(&after, "after", 0, "page on: only entries after the entry with this ID")
	return cmd
}

// newDLQShowCmd builds `ringwal dlq show`.
func newDLQShowCmd() *cobra.Command {
	var f dlqFilter
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show DIR [ID...]",
		Short: "Show dead letters in full: message, headers, failure history",
		Long:  "Show prints the named dead letters, or every one the filters match, in full.",
		Args:  cobra.MinimumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			ids, err := parseIDs(args[1:])
			if err != nil {
				return err
			}
			e, ds, _, err := openSelection(args[0], ids, &f)
			if err != nil {
				return err
			}
			defer closeEngine(e, &err)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), admin.NewDeadLetterViews(ds))
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of entries")
	return cmd
}

// openSelection turns the filters into a query, opens dir and selects the
// dead letters (see selectDeadLetters). The caller closes the engine; on
// an error it is closed already.
func openSelection(dir string, ids []ringwal.ID, f *dlqFilter) (e *ringwal.Engine, ds []ringwal.DeadLetter, q dlq.Query, err error) {
	if q, err = f.query(time.Now()); err != nil {
		return nil, nil, q, err
	}
	if e, err = openDataDir(dir); err != nil {
		return nil, nil, q, err
	}
	if ds, err = selectDeadLetters(e, ids, q); err != nil {
		closeEngine(e, &err)
		return nil, nil, q, err
	}
	return e, ds, q, nil
}

// selectDeadLetters returns the dead letters with the given IDs (an unknown
// one is an error), or those q matches when there are no IDs.
func selectDeadLetters(e *ringwal.Engine, ids []ringwal.ID, q dlq.Query) ([]ringwal.DeadLetter, error) {
	if len(ids) == 0 {
		ds, err := e.DeadLetters(q)
		if err != nil {
			return nil, fmt.Errorf("listing dead letters: %w", err)
		}
		return ds, nil
	}
	all, err := e.DeadLetters(dlq.Query{})
	if err != nil {
		return nil, fmt.Errorf("listing dead letters: %w", err)
	}
	byID := make(map[uint64]ringwal.DeadLetter, len(all))
	for _, d := range all {
		byID[d.ID] = d
	}
	out := make([]ringwal.DeadLetter, 0, len(ids))
	var missing []string
	for _, id := range ids {
		d, ok := byID[uint64(id)]
		if !ok {
			missing = append(missing, strconv.FormatUint(uint64(id), 10))
			continue
		}
		out = append(out, d)
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("no dead letter with ID %s: %w", strings.Join(missing, ", "), ringwal.ErrNotFound)
	}
	return out, nil
}

// bulk is a mutating subcommand's description.
type bulk struct {
	use, short, long, verb string
	// act applies the operation to the selected dead letters and returns
	// the IDs done; a per-ID failure goes in failed.
	act func(e *ringwal.Engine, ds []ringwal.DeadLetter, q dlq.Query, byIDs bool) (done []uint64, failed map[uint64]error, err error)
}

// newBulkCmd builds redrive, review or purge over the shared selection
// logic: IDs, or filters, or --all.
func newBulkCmd(b bulk, extra func(*cobra.Command)) *cobra.Command {
	var f dlqFilter
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   b.use,
		Short: b.short,
		Long:  b.long,
		Args:  cobra.MinimumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			ids, err := parseIDs(args[1:])
			if err != nil {
				return err
			}
			switch {
			case len(ids) > 0 && (f.set() || all):
				return usagef("give either message IDs or filters/--all, not both")
			case len(ids) == 0 && !f.set() && !all:
				return usagef("name the message IDs, give a filter, or pass --all to %s every dead letter", b.verb)
			}
			e, ds, q, err := openSelection(args[0], ids, &f)
			if err != nil {
				return err
			}
			defer closeEngine(e, &err)
			done, failed, err := b.act(e, ds, q, len(ids) > 0)
			if err != nil {
				return err
			}
			if err := reportBulk(cmd.OutOrStdout(), b.verb, done, failed, asJSON); err != nil {
				return err
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of %d dead letters could not be %s", len(failed), len(done)+len(failed), pastTense(b.verb))
			}
			return nil
		}),
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "act on every dead letter (when no ID or filter is given)")
	if extra != nil {
		extra(cmd)
	}
	return cmd
}

// newDLQRedriveCmd builds `ringwal dlq redrive`.
func newDLQRedriveCmd() *cobra.Command {
	return newBulkCmd(bulk{
		use:   "redrive DIR [ID...]",
		short: "Make dead letters pending again (attempts reset)",
		long: "Redrive makes the named dead letters, or those the filters match, pending again\n" +
			"under the same ID with their attempts reset; the next engine to open the\n" +
			"directory delivers them.",
		verb: "redrive",
		act: func(e *ringwal.Engine, ds []ringwal.DeadLetter, _ dlq.Query, _ bool) ([]uint64, map[uint64]error, error) {
			return each(ds, func(d ringwal.DeadLetter) error { return e.Redrive(ringwal.ID(d.ID)) })
		},
	}, nil)
}

// newDLQReviewCmd builds `ringwal dlq review`.
func newDLQReviewCmd() *cobra.Command {
	var note string
	return newBulkCmd(bulk{
		use:   "review DIR [ID...] --note TEXT",
		short: "Mark dead letters as reviewed, with a note",
		long: "Review marks the named dead letters, or those the filters match, as seen by an\n" +
			"operator, with a note (reviewing again replaces the note). Reviewed entries\n" +
			"are removed by retention after Options.DeadLetterRetention (90 days).",
		verb: "review",
		act: func(e *ringwal.Engine, ds []ringwal.DeadLetter, _ dlq.Query, _ bool) ([]uint64, map[uint64]error, error) {
			return each(ds, func(d ringwal.DeadLetter) error { return e.MarkReviewed(ringwal.ID(d.ID), note) })
		},
	}, func(cmd *cobra.Command) {
		cmd.Flags().StringVar(&note, "note", "", "the review note")
	})
}

// newDLQPurgeCmd builds `ringwal dlq purge`.
func newDLQPurgeCmd() *cobra.Command {
	return newBulkCmd(bulk{
		use:   "purge DIR [ID...]",
		short: "Delete dead letters for good",
		long:  "Purge deletes the named dead letters, or those the filters match. It cannot be undone.",
		verb:  "purge",
		act: func(e *ringwal.Engine, ds []ringwal.DeadLetter, q dlq.Query, byIDs bool) ([]uint64, map[uint64]error, error) {
			if !byIDs {
				n, err := e.PurgeDeadLetters(q)
				if err != nil {
					return nil, nil, fmt.Errorf("purging: %w", err)
				}
				if n != len(ds) {
					return nil, nil, fmt.Errorf("purged %d dead letters where %d matched", n, len(ds))
				}
				return idsOf(ds), nil, nil
			}
			return each(ds, func(d ringwal.DeadLetter) error { return purgeOne(e, d) })
		},
	}, nil)
}

// purgeOne deletes exactly one dead letter. The engine purges by query, so
// the query narrows to d's category, key and dead-letter instant, and the
// cursor of the entry before d in that order with a limit of one picks d
// out even if another entry shares all three.
func purgeOne(e *ringwal.Engine, d ringwal.DeadLetter) error {
	q := dlq.Query{Categories: []classify.Category{d.Category}, Key: d.Key, Since: d.DeadAt, Until: d.DeadAt.Add(time.Nanosecond)}
	same, err := e.DeadLetters(q)
	if err != nil {
		return err
	}
	for i, s := range same {
		if s.ID != d.ID {
			continue
		}
		if i > 0 {
			q.After = same[i-1].ID
		}
		q.Limit = 1
		n, err := e.PurgeDeadLetters(q)
		if err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("purged %d entries instead of 1", n)
		}
		return nil
	}
	return fmt.Errorf("dead letter %d: %w", d.ID, ringwal.ErrNotFound)
}

// each applies fn to every dead letter, collecting successes and failures.
func each(ds []ringwal.DeadLetter, fn func(ringwal.DeadLetter) error) ([]uint64, map[uint64]error, error) {
	done := make([]uint64, 0, len(ds))
	failed := map[uint64]error{}
	for _, d := range ds {
		if err := fn(d); err != nil {
			if errors.Is(err, ringwal.ErrClosed) {
				return done, failed, err
			}
			failed[d.ID] = err
			continue
		}
		done = append(done, d.ID)
	}
	return done, failed, nil
}

// idsOf returns the dead letters' IDs.
func idsOf(ds []ringwal.DeadLetter) []uint64 {
	out := make([]uint64, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// reportBulk prints what a mutating subcommand did.
func reportBulk(w io.Writer, verb string, done []uint64, failed map[uint64]error, asJSON bool) error {
	if asJSON {
		type failedID struct {
			ID    uint64 `json:"id"`
			Error string `json:"error"`
		}
		out := struct {
			Action string     `json:"action"`
			Done   []uint64   `json:"done"`
			Failed []failedID `json:"failed"`
		}{Action: verb, Done: done, Failed: []failedID{}}
		for _, id := range sortedKeys(failed) {
			out.Failed = append(out.Failed, failedID{ID: id, Error: failed[id].Error()})
		}
		return writeJSON(w, out)
	}
	ids := make([]string, len(done))
	for i, id := range done {
		ids[i] = strconv.FormatUint(id, 10)
	}
	noun := "dead letters"
	if len(done) == 1 {
		noun = "dead letter"
	}
	fmt.Fprintf(w, "%s %d %s", pastTense(verb), len(done), noun)
	if len(ids) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(ids, " "))
	}
	fmt.Fprintln(w)
	for _, id := range sortedKeys(failed) {
		fmt.Fprintf(w, "failed %d: %v\n", id, failed[id])
	}
	return nil
}

// pastTense returns the past participle of a bulk verb.
func pastTense(verb string) string {
	switch verb {
	case "redrive":
		return "redriven"
	case "review":
		return "reviewed"
	}
	return verb + "d" // purge
}

// printDLQTable writes one line per dead letter.
func printDLQTable(w io.Writer, ds []ringwal.DeadLetter) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tCATEGORY\tKEY\tPRIORITY\tATTEMPTS\tDEAD AT\tREVIEWED\tLAST ERROR")
	for _, d := range ds {
		rev := "no"
		if d.Reviewed {
			rev = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", d.ID, d.Category, orDash(d.Key), d.Message.Priority,
			d.Attempts, timestamp(d.DeadAt), rev, orDash(firstLine(lastError(d), 60)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d dead letters\n", len(ds))
	return nil
}

// printDeadLetter writes one dead letter in full.
func printDeadLetter(w io.Writer, d ringwal.DeadLetter) {
	tw := newTable(w)
	m := d.Message
	fmt.Fprintf(tw, "dead letter\t%d\n", d.ID)
	fmt.Fprintf(tw, "category\t%s\n", d.Category)
	fmt.Fprintf(tw, "key\t%s\n", orDash(d.Key))
	fmt.Fprintf(tw, "priority\t%s\n", m.Priority)
	fmt.Fprintf(tw, "attempts\t%d\n", d.Attempts)
	fmt.Fprintf(tw, "first failed\t%s\n", timestamp(d.FirstFailedAt))
	fmt.Fprintf(tw, "dead at\t%s\n", timestamp(d.DeadAt))
	if d.Reviewed {
		fmt.Fprintf(tw, "reviewed\t%s: %s\n", timestamp(d.ReviewedAt), orDash(d.Note))
	} else {
		fmt.Fprintf(tw, "reviewed\tno\n")
	}
	if m.DedupID != "" {
		fmt.Fprintf(tw, "dedup id\t%s\n", m.DedupID)
	}
	for _, k := range sortedKeys(m.Headers) {
		fmt.Fprintf(tw, "header\t%s: %s\n", k, m.Headers[k])
	}
	if text, ok := payloadText(m.Payload); ok {
		fmt.Fprintf(tw, "payload\t%q\n", text)
	} else {
		fmt.Fprintf(tw, "payload\t%d bytes of binary (see --json)\n", len(m.Payload))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "failures (the last %d, oldest first):\n", len(d.Failures))
	for _, f := range d.Failures {
		fmt.Fprintf(w, "  %s  %-12s %s\n", timestamp(f.At), f.Category, firstLine(f.Error, 100))
	}
	if last := lastError(d); strings.Contains(last, "\n") || utf8.RuneCountInString(last) > 100 {
		fmt.Fprintln(w, "last error in full:")
		for _, line := range strings.Split(strings.TrimRight(last, "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}

// lastError is the text of a dead letter's last failure.
func lastError(d ringwal.DeadLetter) string {
	if n := len(d.Failures); n > 0 {
		return d.Failures[n-1].Error
	}
	return ""
}
