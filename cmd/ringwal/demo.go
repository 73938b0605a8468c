package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/breaker"
	"github.com/ringwal/ringwal/classify"
)

// newDemoCmd builds `ringwal demo`.
func newDemoCmd() *cobra.Command {
	var dir string
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR] [--duration 20s]",
		Short: "Watch the engine under realistic load, then kill it and prove nothing was lost",
		Long: `Demo plays two acts over real data directories.

The live act (70% of --duration): producers enqueue a mix of priorities,
delays, deadlines, TTLs and a few poison payloads (the handler panics on
them) for four simulated downstreams, each a message Key with its own
circuit breaker: "healthy"; "flaky", which times out and answers 5xx and 429
(without a Retry-After) about one call in five; "down", which refuses
connections for a while, so its breaker opens, holds its messages, and
closes once it is back; and "slack", which answers 429 with a Retry-After
for a while, so its key is paused until then: its messages wait, spending
no attempts, while the other keys' deliveries go on. A quarter of the
messages go to a second queue, "emails", with Run workers of its own; it
is paused for a tenth of the act while the default queue goes on (the
keys, their breakers and pauses are shared by both queues). Run's workers
process everything. The retry
policies are the defaults with every delay divided by 20, so that a short
demo shows backoff and give-ups. A live display shows enqueued, acked,
retried, dead letters by category, breaker states, each key's acks and a
paused key with its waiting messages, and latency; it refreshes
in place on a terminal and prints plain lines otherwise.

The crash act (the other 30%): a child process enqueues and acks in Write
mode, reporting each acknowledged enqueue and ack on a pipe, and is killed
with SIGKILL mid-stream. The demo reopens its directory and checks every
reported ID: everything enqueued and not acked is there, nothing acked is.

DIR (default: a new temporary directory, kept afterwards) gets two data
directories, DIR/live and DIR/crash, to explore with the other commands.
Exit status is 0 only if the recovery check held.`,
		Example: "  ringwal demo\n  ringwal demo --duration 1m --dir /tmp/rw",
		Args:    cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if duration < time.Second {
				return usagef("--duration %s is too short: give at least 1s", duration)
			}
			return runDemo(cmd.Context(), cmd.OutOrStdout(), dir, duration)
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "parent directory for the demo's data directories (must be new or empty; default: a new temporary one)")
	cmd.Flags().DurationVar(&duration, "duration", 20*time.Second, "total length of the demo, both acts")
	return cmd
}

// runDemo plays both acts and prints the summary. It fails unless the
// recovery check held.
func runDemo(ctx context.Context, out io.Writer, dir string, total time.Duration) error {
	dir, err := demoDir(dir)
	if err != nil {
		return err
	}
	liveDir, crashDir := filepath.Join(dir, "live"), filepath.Join(dir, "crash")
	liveDur := total * 7 / 10
	crashDur := total - liveDur
	fmt.Fprintf(out, "ringwal demo: %s in two acts; data in %s\n\n", dur(total), dir)

	fmt.Fprintf(out, "ACT 1: live traffic over %s (Write durability)\n", liveDir)
	live, err := newLiveAct(liveDir, liveDur, out).run(ctx)
	if err != nil {
		return fmt.Errorf("live act: %w", err)
	}

	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted after the live act: %w", err)
	}

	fmt.Fprintf(out, "\nACT 2: kill -9 mid-stream, then recover %s\n", crashDir)
	crash, err := newCrashAct(crashDir, crashDur, out).run(ctx)
	if err != nil {
		return fmt.Errorf("crash act: %w", err)
	}
	crash.printCheck(out)

	printSummary(out, live, crash)
	printNext(out, liveDir, crashDir, dir)
	if !crash.held {
		return errors.New("the recovery check failed: see above")
	}
	return nil
}

// demoDir returns the demo's parent directory: a new temporary one, or dir
// created if missing; an existing dir must be empty.
func demoDir(dir string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "ringwal-demo-")
		if err != nil {
			return "", fmt.Errorf("creating a temporary directory: %w", err)
		}
		return d, nil
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("creating %s: %w", dir, err)
		}
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", dir, err)
	case len(entries) > 0:
		return "", usagef("--dir %s is not empty: the demo needs a new or empty directory", dir)
	}
	return dir, nil
}

// printSummary writes the closing table.
func printSummary(w io.Writer, live liveResult, crash crashResult) {
	s := live.stats
	fmt.Fprintln(w, "\nSUMMARY")
	tw := newTable(w)
	fmt.Fprintln(tw, "ACT\tWHAT\tRESULT")
	row := func(act, what, result string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", act, what, result) }
	row("live", "time", dur(live.elapsed.Round(10*time.Millisecond)))
	row("", "enqueued", fmt.Sprintf("%s (+%s duplicates refused by DedupID)", count(s.Enqueued), count(s.Duplicates)))
	row("", "acked", count(s.Acked))
	row("", "retried", fmt.Sprintf("%s (of %s nacks)", count(s.Retried), count(s.Nacked)))
	row("", "dead-lettered", fmt.Sprintf("%s: %s", count(s.DeadLettered), deadLine(s.DeadLetteredByCategory)))
	var trips []string
	for _, k := range targets {
		if n := live.opened[k]; n > 0 {
			trips = append(trips, fmt.Sprintf("%s opened %d×", k, n))
		}
	}
	if len(trips) == 0 {
		trips = []string{"none opened"}
	}
	row("", "breakers", fmt.Sprintf("%s; at the end: %s", strings.Join(trips, ", "), breakerStates(live.breakers)))
	row("", "retry-after", fmt.Sprintf("%s paused %d× by a 429 Retry-After; the other keys acked %s meanwhile",
		keySlack, live.pauses, count(live.ackedWhilePaused)))
	row("", "queues", queuesSummary(s, live))
	row("", "handling latency", fmt.Sprintf("p50 %s · p95 %s · p99 %s", dur(s.Handling.P50), dur(s.Handling.P95), dur(s.Handling.P99)))
	row("", "wait for a worker", fmt.Sprintf("p50 %s · p99 %s", dur(s.Wait.P50), dur(s.Wait.P99)))
	row("", "left in the log", fmt.Sprintf("pending %s · delayed %s · held %s · dead %s",
		count(s.Pending), count(s.Delayed), count(s.Held), count(s.Dead)))
	row("crash", "child", fmt.Sprintf("pid %d, SIGKILL %s after it started", crash.pid, dur(crash.killedAfter.Round(time.Millisecond))))
	row("", "acknowledged", fmt.Sprintf("%s enqueues, %s acks", count(crash.enqueued), count(crash.acked)))
	row("", "recovery", fmt.Sprintf("%s records (%s) replayed in %s; torn tail cut: %s",
		count(crash.recovery.Records), bytesize(crash.recovery.Bytes), dur(crash.recovery.Duration), bytesize(crash.recovery.TornBytes)))
	verdict := "held: nothing acknowledged was lost"
	if !crash.held {
		verdict = "FAILED"
	}
	row("", "recovery check", verdict)
	_ = tw.Flush()
}

// breakerStates lists each target's final breaker state.
func breakerStates(states map[string]breaker.State) string {
	parts := make([]string, 0, len(targets))
	for _, k := range targets {
		parts = append(parts, k+" "+states[k].String())
	}
	return strings.Join(parts, ", ")
}

// printNext suggests what to try next, with the command as the user ran
// it ("go run ./cmd/ringwal" under go run).
func printNext(w io.Writer, liveDir, crashDir, dir string) {
	self := "ringwal"
	if exe, err := os.Executable(); err == nil && strings.Contains(exe, "go-build") {
		self = "go run ./cmd/ringwal"
	}
	fmt.Fprintln(w, "\nWHAT TO TRY NEXT")
	tw := newTable(w)
	for _, l := range [][2]string{
		{"inspect " + liveDir, "depth per tier, delayed, dead letters per category, log size, checkpoint"},
		{"dlq list " + liveDir, "the dead letters; add --category poison, --key flaky, --json"},
		{"keys list " + liveDir, "the keys: paused, waiting, held, breakers"},
		{"queues list " + liveDir, "the queues: pause, messages by state, dead letters, totals"},
		{"dlq list --queue " + queueEmails + " " + liveDir, "one queue's dead letters"},
		{"keys pause " + liveDir + " " + keySlack + " --until 1h", "hold a key back (logged: it holds at the next start)"},
		{"dlq show --category " + classify.Poison.String() + " " + liveDir, "a poison message with its panic and stack"},
		{"dlq redrive --category " + classify.Expired.String() + " " + liveDir, "give the messages whose TTL ran out another go"},
		{"wal verify " + crashDir, "every checksum of the log the kill interrupted"},
		{"wal dump " + crashDir + " | head", "the records recovery replays, as JSON lines"},
		{"serve " + liveDir, "the web console (open the sign-in URL it prints), the admin API, /metrics"},
		{"dlq list --addr http://127.0.0.1:9464 --token TOKEN", "the same list, from the served engine (TOKEN: the sign-in URL's)"},
		{"demo --duration 1m", "a longer run"},
	} {
		fmt.Fprintf(tw, "  %s %s\t# %s\n", self, l[0], l[1])
	}
	fmt.Fprintf(tw, "  rm -rf %s\t# when done\n", dir)
	_ = tw.Flush()
}

// queuesSummary is the summary's queues row: each queue's acks and dead
// letters, and what the default queue did while emails was paused.
func queuesSummary(s ringwal.Stats, live liveResult) string {
	parts := make([]string, 0, len(s.Queues))
	for _, q := range s.Queues {
		name := q.Name
		if name == "" {
			name = "default"
		}
		parts = append(parts, fmt.Sprintf("%s acked %s, dead %s", safe(name), count(q.Acked), count(q.Dead)))
	}
	out := strings.Join(parts, "; ")
	if live.queuePaused {
		out += fmt.Sprintf("; %s paused a while, the default queue acked %s meanwhile", queueEmails, count(live.defaultAckedWhile))
	}
	return out
}
