package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
	"github.com/ringwal/ringwal/internal/adminfmt"
	"github.com/ringwal/ringwal/internal/wal"
)

// newInspectCmd builds `ringwal inspect`.
func newInspectCmd() *cobra.Command {
	var t target
	var asJSON bool
	var next int
	cmd := &cobra.Command{
		Use:   "inspect [DIR | --addr URL]",
		Short: "Show the state of a data directory or of a running engine",
		Long: `Inspect prints what an engine holds: depth per priority tier, delayed,
leased and held messages, whether delivery is paused, messages waiting on
their key, the keys that need a look, dead letters per category, the next
messages in line, and the write-ahead log.

Over a data directory (DIR) that no process holds, it opens the engine,
reads it, closes it and reports on the log files too: size, segments and
the last checkpoint. Opening is a start-up like any other: the log is
replayed, a torn tail left by a crash is cut, messages leased at the crash
come back pending (so leased reads 0), and the engine's housekeeping runs
while it is open (a message whose TTL has passed is dead-lettered as
expired; delayed messages that are due become pending).

For a running engine, whose directory is locked, give the admin API that
its application mounts (admin.NewHandler), or that ` + "`ringwal serve`" + ` serves:
--addr URL or $RINGWAL_ADDR, with --token or $RINGWAL_TOKEN if it has one.
The figures are then live: the log's size on disk, segments and last
checkpoint come from the engine (log_files and checkpoint, read from the
files, are null in --json).

Both list the keys that are paused, throttled, at their cap or have
messages waiting or held, and how many messages wait on their key, by
reason (ordered, in-flight, rate, paused).`,
		Example: "  ringwal inspect /tmp/ringwal-demo/live\n  ringwal inspect --json /var/lib/app/queue\n" +
			"  ringwal inspect --addr http://127.0.0.1:9464",
		Args: cobra.MaximumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			if next < 0 {
				return usagef("--next %d is negative", next)
			}
			src, rest, err := t.open(args)
			if err != nil {
				return err
			}
			defer closeSource(src, &err)
			if len(rest) > 0 {
				return usagef("inspect takes a directory or --addr, not %q", rest[0])
			}
			rep, err := inspect(cmd.Context(), src, next)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return rep.print(cmd.OutOrStdout())
		}),
	}
	t.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().IntVar(&next, "next", 5, "list this many pending messages in the order they would be delivered")
	return cmd
}

// inspectReport is what inspect found; its JSON form is --json's output:
// the engine's Stats as the admin API shows them (admin.StatsView, its
// fields at the top level), the next messages in line as admin.InfoView,
// and, for a directory, what the log files hold.
type inspectReport struct {
	Dir  string `json:"dir,omitempty"`
	Addr string `json:"addr,omitempty"`
	admin.StatsView
	Next       []admin.InfoView `json:"next"`
	LogFiles   *walReport       `json:"log_files,omitempty"`
	Checkpoint *checkpointEntry `json:"checkpoint"`
}

// walReport describes the log files.
type walReport struct {
	Segments   int    `json:"segments"`
	FirstIndex uint64 `json:"first_index"`
	LastIndex  uint64 `json:"last_index"`
	Batches    uint64 `json:"batches"`
	Records    uint64 `json:"records"`
	LogBytes   int64  `json:"log_bytes"`
	DiskBytes  int64  `json:"disk_bytes"`
}

// checkpointEntry describes the snapshot recovery starts from.
type checkpointEntry struct {
	Path    string    `json:"path"`
	Index   uint64    `json:"index"`
	Records uint64    `json:"records"`
	Bytes   int64     `json:"bytes"`
	Time    time.Time `json:"time"`
}

// inspect gathers the report from src; for a directory it then closes
// the engine and reads the log files.
func inspect(ctx context.Context, src source, next int) (rep inspectReport, err error) {
	if rep.StatsView, err = src.stats(ctx); err != nil {
		return rep, err
	}
	if rep.Next, err = src.next(ctx, next); err != nil {
		return rep, err
	}
	l, ok := src.(*localSource)
	if !ok {
		rep.Addr = src.where()
		return rep, nil
	}
	dir := l.dir
	rep.Dir = dir
	if err := l.close(); err != nil {
		return rep, err
	}
	// The engine is closed, so the log is quiet: Verify (without repair)
	// reads every batch and snapshot and takes no lock.
	vr, err := wal.Verify(dir, false)
	if err != nil {
		return rep, fmt.Errorf("reading the log: %w", err)
	}
	rep.LogFiles = &walReport{
		Segments: vr.Segments, FirstIndex: vr.FirstIndex, LastIndex: vr.LastIndex,
		Batches: vr.Batches, Records: vr.Records, LogBytes: vr.Bytes, DiskBytes: diskUsage(dir),
	}
	for _, sn := range vr.Snapshots {
		if sn.Err != nil || sn.Path != vr.Snapshot {
			continue
		}
		ce := &checkpointEntry{Path: sn.Path, Index: sn.Index, Records: sn.Records, Bytes: sn.Bytes}
		if st, err := os.Stat(sn.Path); err == nil {
			ce.Time = st.ModTime()
		}
		rep.Checkpoint = ce
	}
	return rep, nil
}

// priorities lists the priorities from most to least urgent.
var priorities = []ringwal.Priority{ringwal.Critical, ringwal.High, ringwal.Normal, ringwal.Low, ringwal.Background}

// diskUsage is the total size of the regular files under dir.
func diskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}

// print writes the report as text.
func (r inspectReport) print(w io.Writer) error {
	tw := newTable(w)
	if r.Addr != "" {
		fmt.Fprintf(tw, "admin API\t%s (a running engine)\n", safe(r.Addr))
	} else {
		fmt.Fprintf(tw, "data directory\t%s\n", safe(r.Dir))
	}
	fmt.Fprintf(tw, "messages\tpending %s · delayed %s · leased %s · held %s · dead %s\n",
		count(r.Pending), count(r.Delayed), count(r.Leased), count(r.Held), count(r.Dead))
	fmt.Fprintf(tw, "oldest pending\t%s\n", orDash(durOrZero(seconds(r.OldestPendingSeconds))))
	delivery := "delivering"
	if r.DeliveryPaused {
		delivery = "ALL DELIVERY PAUSED (ringwal resume ends it)"
	}
	fmt.Fprintf(tw, "delivery\t%s\n", delivery)
	fmt.Fprintf(tw, "waiting on their key\t%s\n", waitingLine(r.Waiting, r.WaitingByReason))
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "PENDING BY TIER\t")
	for _, p := range priorities {
		fmt.Fprintf(tw, "  %s\t%s\n", p, count(r.ByPriority[ringwal.Pending.String()][p.String()]))
	}
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "DEAD LETTERS BY CATEGORY\t")
	for _, c := range classify.Categories() {
		fmt.Fprintf(tw, "  %s\t%s\n", c, count(r.DeadByCategory[c]))
	}
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "WRITE-AHEAD LOG\t")
	if r.LogFiles == nil {
		r.printLiveLog(tw)
	} else {
		r.printLogFiles(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.printKeys(w); err != nil {
		return err
	}
	return r.printNext(w)
}

// waitingLine is the count of messages waiting on their key, by reason.
func waitingLine(total int, by map[string]int) string {
	parts := make([]string, 0, len(adminfmt.WaitReasons))
	for _, w := range adminfmt.WaitReasons {
		parts = append(parts, fmt.Sprintf("%s %s", w, count(by[w.String()])))
	}
	return fmt.Sprintf("%s (%s)", count(total), strings.Join(parts, " · "))
}

// printKeys lists the keys that need a look: paused, throttled, at their
// cap, or with messages waiting or held.
func (r inspectReport) printKeys(w io.Writer) error {
	var keys []admin.KeyView
	for _, k := range r.Keys {
		if k.Notable() {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nKEYS PAUSED, THROTTLED, AT CAP OR WITH MESSAGES WAITING OR HELD")
	tw := newTable(w)
	fmt.Fprintln(tw, "KEY\tPAUSED\tWAITING\tHELD\tLIMITS\tBREAKER")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", cell(k.Key), pausedText(k.Paused, k.PausedUntil), k.Waiting, k.Held, limitsText(k), cell(k.Breaker))
	}
	return tw.Flush()
}

// printLiveLog describes a running engine's log: what it wrote since it
// opened.
func (r inspectReport) printLiveLog(tw io.Writer) {
	if !r.Durable || r.WAL == nil {
		fmt.Fprintf(tw, "  none\tmemory only\n")
		return
	}
	fmt.Fprintf(tw, "  written since open\t%s batches, %s records, %s; write p99 %s, fsync p99 %s\n",
		count(r.WAL.Batches), count(r.WAL.Records), bytesize(int64(r.WAL.Bytes)),
		dur(seconds(r.WAL.Write.P99Seconds)), dur(seconds(r.WAL.Fsync.P99Seconds)))
	fmt.Fprintf(tw, "  on disk\t%s in %d segments and snapshots; %s of log since the last checkpoint\n",
		bytesize(r.WAL.DiskBytes), r.WAL.Segments, bytesize(r.WAL.SinceCheckpointBytes))
	if t := r.WAL.LastCheckpoint; !t.IsZero() {
		fmt.Fprintf(tw, "  last checkpoint\t%s (%s ago)\n", timestamp(t), dur(time.Since(t).Round(time.Second)))
	} else {
		fmt.Fprintf(tw, "  last checkpoint\tnone since the log began\n")
	}
	if r.WAL.Failed != "" {
		fmt.Fprintf(tw, "  LOG FAILED\t%s\n", safe(r.WAL.Failed))
	}
	r.printRecovery(tw)
}

// printLogFiles describes the log files of a directory.
func (r inspectReport) printLogFiles(tw io.Writer) {
	fmt.Fprintf(tw, "  segments\t%d (batches %d..%d: %s batches, %s records, %s)\n",
		r.LogFiles.Segments, r.LogFiles.FirstIndex, r.LogFiles.LastIndex, count(r.LogFiles.Batches), count(r.LogFiles.Records), bytesize(r.LogFiles.LogBytes))
	fmt.Fprintf(tw, "  on disk\t%s (log, snapshot and lock files)\n", bytesize(r.LogFiles.DiskBytes))
	if c := r.Checkpoint; c != nil {
		fmt.Fprintf(tw, "  last checkpoint\t%s (%s ago), covers batches up to %d: %s records, %s\n",
			timestamp(c.Time), dur(time.Since(c.Time).Round(time.Second)), c.Index, count(c.Records), bytesize(c.Bytes))
	} else {
		fmt.Fprintf(tw, "  last checkpoint\tnone (recovery replays the whole log)\n")
	}
	r.printRecovery(tw)
}

// printRecovery describes what Open replayed.
func (r inspectReport) printRecovery(tw io.Writer) {
	if rc := r.Recovery; rc != nil {
		fmt.Fprintf(tw, "  replayed on open\t%s records (%s) in %s; torn tail cut: %s; leased at a crash: %d (requeued), crash-looping: %d (dead-lettered)\n",
			count(rc.Records), bytesize(rc.Bytes), dur(seconds(rc.DurationSeconds)), bytesize(rc.TornBytes), rc.Crashed, rc.Poisoned)
		if rc.Damage != "" {
			// What Open cut from a damaged log tail, and where the cut
			// bytes were kept, so that an operator can look at them.
			fmt.Fprintf(tw, "  damaged tail (recovery %s)\t%s; cut %d batches, %d records\n", safe(rc.Mode), safe(rc.Damage), rc.CutBatches, rc.CutRecords)
			for _, f := range rc.BrokenFiles {
				fmt.Fprintf(tw, "  cut bytes kept in\t%s\n", safe(f))
			}
		}
	}
}

// printNext lists the next messages in line.
func (r inspectReport) printNext(w io.Writer) error {
	if len(r.Next) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nNEXT IN LINE")
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tPRIORITY\tKEY\tATTEMPTS\tPAYLOAD")
	for _, in := range r.Next {
		m := in.Message
		payload := m.Payload
		if m.PayloadEncoding != admin.PayloadText {
			payload = "(binary, base64: " + payload + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", in.ID, safe(m.Priority), cell(m.Key), in.Attempts, safe(firstLine(payload, 40)))
	}
	return tw.Flush()
}

// seconds turns a view's _seconds field back into a duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// durOrZero formats d, "" for zero.
func durOrZero(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return dur(d)
}
