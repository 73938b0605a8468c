package main

// The key controls on the command line: keys list|pause|resume, messages,
// cancel, and pause|resume of all delivery; on a stopped engine's
// directory or, with --addr, a running engine, with the same output.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/internal/adminfmt"
)

// sourceHelp is the part of every key command's help about where it acts.
const sourceHelp = `It acts on a data directory that no process holds (DIR, the first
argument: the engine is opened, acted on and closed; a pause or cancel is
logged, so it holds when the engine next starts) or on a running engine
through its admin API: --addr URL or $RINGWAL_ADDR, with --token or
$RINGWAL_TOKEN. The output is the same either way.`

// newKeysCmd builds `ringwal keys` and its subcommands.
func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "List keys, pause or resume one",
		Long: `A message's Key names its downstream target. The keys commands list the
keys an engine knows (paused, throttled, at their cap, with messages
waiting or held, or with a circuit breaker) and pause or resume one.

` + sourceHelp,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newKeysListCmd(), newKeysPauseCmd(), newKeysResumeCmd())
	return cmd
}

func newKeysListCmd() *cobra.Command {
	return listCmd(&cobra.Command{
		Use:   "list [DIR | --addr URL]",
		Short: "List the keys: pause, live, in flight, waiting, held, throttled, at cap, breaker, dead letters",
		Long: `List prints every key the engine knows, sorted, as the console's keys page
does: the keys with live messages under a policy, a pause, messages
waiting or held, or a circuit breaker, and the keys that have dead letters
only (DEAD: how many). A directory and --addr over the same data print the
same rows; a running engine also knows the breakers of the keys it has
delivered to, which live in memory only (an engine opened over a directory
starts with none).

` + sourceHelp,
		Example: "  ringwal keys list /tmp/ringwal-demo/live\n  ringwal keys list --addr http://127.0.0.1:9464 --json",
	}, "listing keys", "print a JSON array of keys (admin.KeyView, with dead_letters)", keyRows, printKeys)
}

// keyRow is one row of keys list: admin's view of the key and how many
// dead letters it has.
type keyRow struct {
	admin.KeyView
	DeadLetters int `json:"dead_letters"`
}

// keyRows returns the rows of keys list from either source alike: the
// keys admin's view knows (admin.NewKeyViews: live state and breakers)
// merged with those that have dead letters, which that view, built from
// Stats, does not hold (a key whose messages all dead-lettered has no live
// state left: the console's keys page adds them from the dead-letter
// store, and so does this).
func keyRows(src source, ctx context.Context) ([]keyRow, error) {
	views, err := src.keys(ctx)
	if err != nil {
		return nil, err
	}
	dead, err := src.deadLetterKeys(ctx)
	if err != nil {
		return nil, err
	}
	return mergeKeyRows(views, dead), nil
}

// mergeKeyRows joins views and the dead-letter counts by key, sorted.
func mergeKeyRows(views []admin.KeyView, dead map[string]int) []keyRow {
	rows := make(map[string]*keyRow, len(views)+len(dead))
	for _, v := range views {
		rows[v.Key] = &keyRow{KeyView: v}
	}
	for k, n := range dead {
		if rows[k] == nil {
			rows[k] = &keyRow{KeyView: admin.KeyView{Key: k}}
		}
		rows[k].DeadLetters = n
	}
	out := make([]keyRow, 0, len(rows))
	for _, k := range sortedKeys(rows) {
		out = append(out, *rows[k])
	}
	return out
}

// openNoIDs opens the source of a command that takes only [DIR].
func (t *target) openNoIDs(args []string) (source, error) {
	src, rest, err := t.open(args)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		_ = src.close()
		return nil, usagef("unexpected argument %q", rest[0])
	}
	return src, nil
}

// printKeys writes keys as a table.
func printKeys(w io.Writer, keys []keyRow) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "KEY\tPAUSED\tLIVE\tIN FLIGHT\tWAITING\tHELD\tLIMITS\tBREAKER\tDEAD")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d\n", cell(k.Key), pausedText(k.Paused, k.PausedUntil),
			k.Live, k.InFlight, k.Waiting, k.Held, limitsText(k.KeyView), cell(k.Breaker), k.DeadLetters)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, plural(len(keys), "key", "keys"))
	return err
}

// pausedText says whether a pause is in force and until when.
func pausedText(paused bool, until *time.Time) string {
	switch {
	case !paused:
		return "no"
	case until == nil:
		return "until resumed"
	}
	return "until " + timestamp(*until)
}

// limitsText names the limits a key is at: throttled, at cap.
func limitsText(k admin.KeyView) string {
	var parts []string
	if k.Throttled {
		parts = append(parts, "throttled")
	}
	if k.AtCap {
		parts = append(parts, "at cap")
	}
	return orDash(strings.Join(parts, ", "))
}

// untilFlag registers --until on cmd.
func untilFlag(cmd *cobra.Command, until *string) {
	cmd.Flags().StringVar(until, "until", "", "pause until this time: an RFC 3339 time or a duration from now (90m, 1h); default: until resumed")
}

// parseUntil reads --until; a bad value is a usage error.
func parseUntil(s string) (time.Time, error) {
	t, err := adminfmt.ParseUntil(localTime(s), time.Now())
	if err != nil {
		return t, usagef("--%v", err)
	}
	return t, nil
}

// pauseAction is the body of the pause and resume commands: open the
// engine (a directory or --addr), act, print the pause now in force.
func pauseAction(cmd *cobra.Command, open func() (source, []string, error),
	act func(context.Context, source, []string) (admin.PauseView, error)) (err error) {
	src, rest, err := open()
	if err != nil {
		return err
	}
	defer closeSource(src, &err)
	v, err := act(cmd.Context(), src, rest)
	if err != nil {
		return err
	}
	return printPause(cmd.OutOrStdout(), v)
}

// openAll opens the engine for a command about all delivery (no key).
func (t *target) openAll(args []string) func() (source, []string, error) {
	return func() (source, []string, error) {
		src, err := t.openNoIDs(args)
		return src, nil, err
	}
}

// printPause reports a pause or resume.
func printPause(w io.Writer, v admin.PauseView) error {
	what := "all delivery"
	if v.Key != "" {
		what = "key " + safe(v.Key)
	}
	state := pausedText(v.Paused, v.PausedUntil)
	if v.Paused {
		state = "paused " + state
	} else {
		state = "delivering"
	}
	_, err := fmt.Fprintf(w, "%s %s: %s\n", safe(v.Status), what, state)
	return err
}

func newKeysPauseCmd() *cobra.Command {
	var t target
	var until string
	cmd := &cobra.Command{
		Use:   "pause [DIR] KEY [--until T]",
		Short: "Hold back a key's messages until a time, or until resumed",
		Long: `Pause holds back delivery of KEY's messages: they wait, spending no
attempts, and other keys go on. A pause never shortens a longer one in
force.

` + sourceHelp,
		Example: "  ringwal keys pause --addr http://127.0.0.1:9464 'slack:#ops' --until 1h\n  ringwal keys pause DIR discord",
		Args:    cobra.RangeArgs(1, 2),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			at, err := parseUntil(until)
			if err != nil {
				return err
			}
			return pauseAction(cmd, func() (source, []string, error) { return t.openKeyed(args, 1, "KEY") },
				func(ctx context.Context, src source, rest []string) (admin.PauseView, error) {
					return src.pauseKey(ctx, rest[0], at)
				})
		}),
	}
	t.add(cmd)
	untilFlag(cmd, &until)
	return cmd
}

func newKeysResumeCmd() *cobra.Command {
	var t target
	cmd := &cobra.Command{
		Use:   "resume [DIR] KEY",
		Short: "End a key's pause (an operator's or a Retry-After's)",
		Long:  "Resume lets KEY's messages go again.\n\n" + sourceHelp,
		Args:  cobra.RangeArgs(1, 2),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			return pauseAction(cmd, func() (source, []string, error) { return t.openKeyed(args, 1, "KEY") },
				func(ctx context.Context, src source, rest []string) (admin.PauseView, error) {
					return src.resumeKey(ctx, rest[0])
				})
		}),
	}
	t.add(cmd)
	return cmd
}

// newPauseCmd builds `ringwal pause` (all delivery).
func newPauseCmd() *cobra.Command {
	var t target
	var until string
	cmd := &cobra.Command{
		Use:   "pause [DIR | --addr URL] [--until T]",
		Short: "Hold back all delivery (enqueue continues)",
		Long:  "Pause holds back all delivery until a time, or until `ringwal resume`; enqueues go on.\n\n" + sourceHelp,
		Args:  cobra.MaximumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			at, err := parseUntil(until)
			if err != nil {
				return err
			}
			return pauseAction(cmd, t.openAll(args),
				func(ctx context.Context, src source, _ []string) (admin.PauseView, error) {
					return src.pause(ctx, at)
				})
		}),
	}
	t.add(cmd)
	untilFlag(cmd, &until)
	return cmd
}

// newResumeCmd builds `ringwal resume` (all delivery).
func newResumeCmd() *cobra.Command {
	var t target
	cmd := &cobra.Command{
		Use:   "resume [DIR | --addr URL]",
		Short: "End a pause of all delivery",
		Long:  "Resume ends a pause of all delivery (`ringwal pause`).\n\n" + sourceHelp,
		Args:  cobra.MaximumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			return pauseAction(cmd, t.openAll(args),
				func(ctx context.Context, src source, _ []string) (admin.PauseView, error) {
					return src.resume(ctx)
				})
		}),
	}
	t.add(cmd)
	return cmd
}

// cancelAll cancels each ID, reporting each; it fails if any failed.
func cancelAll(ctx context.Context, w io.Writer, src source, ids []ringwal.ID) error {
	failed := 0
	for _, id := range ids {
		if err := src.cancel(ctx, id); err != nil {
			fmt.Fprintf(w, "%d: not cancelled: %s\n", id, safe(err.Error()))
			failed++
			continue
		}
		fmt.Fprintf(w, "%d: cancelled\n", id)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d not cancelled", failed, len(ids))
	}
	return nil
}
