package main

// ringwal backup and ringwal restore: a consistent copy of an engine's data
// directory as one tar stream (Engine.Backup, GET /api/backup), and back.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/internal/dirsync"
)

// newBackupCmd builds `ringwal backup`.
func newBackupCmd() *cobra.Command {
	var t target
	var out string
	cmd := &cobra.Command{
		Use:   "backup [DIR | --addr URL] -o FILE",
		Short: "Write a consistent copy of an engine (stopped or running) to a file",
		Long: `Backup writes a consistent copy of an engine's data directory to FILE (or
standard output with -o -): a tar stream of its newest snapshot and the log
after it, ending with a manifest (each file's size and SHA-256). A running
engine keeps working meanwhile: producers wait at most about one group
commit. Restore it with ringwal restore FILE DIR.

The stream is checked as it is written (as restore would check it), and a
file is first written as FILE.partial, renamed to FILE only once whole and
fsynced: a backup cut short never leaves a FILE behind.

` + sourceHelp,
		Example: "  ringwal backup /var/lib/app/queue -o queue.tar\n  ringwal backup --addr http://127.0.0.1:9464 -o queue.tar",
		Args:    cobra.MaximumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) (err error) {
			if out == "" {
				return usagef("name the backup file with -o FILE (or -o - for standard output)")
			}
			src, rest, err := t.open(args)
			if err != nil {
				return err
			}
			defer closeSource(src, &err)
			if len(rest) > 0 {
				return usagef("unexpected argument %q", rest[0])
			}
			return backupTo(cmd.Context(), src, out, cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	t.add(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "the backup file (- for standard output); it must not exist")
	return cmd
}

// backupTo streams src's backup into the file out (or stdout for "-"),
// checking it on the way, and reports it on report (stderr when the backup
// goes to stdout).
func backupTo(ctx context.Context, src source, out string, stdout, stderr io.Writer) error {
	start := time.Now()
	var w io.Writer = stdout
	report := stdout
	var f *os.File
	partial := out + ".partial"
	if out == "-" {
		report = stderr
	} else {
		if _, err := os.Lstat(out); err == nil {
			return fmt.Errorf("%s exists: choose another name or remove it", out)
		}
		var err error
		f, err = os.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		w = f
	}
	info, n, err := streamBackup(ctx, src, w)
	if f != nil {
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(partial, out)
		}
		if err == nil {
			err = dirsync.Sync(filepath.Dir(out)) // the rename into it durable
		}
		if err != nil {
			_ = os.Remove(partial)
		}
	}
	if err != nil {
		return fmt.Errorf("backup of %s: %w", src.where(), err)
	}
	d := time.Since(start)
	fmt.Fprintf(report, "backed up %s to %s: %s, %s, %s, %s; %s, %d bytes (log batch %d), checked, in %s (%.1f MB/s)\n",
		safe(src.where()), safe(out), plural(info.Messages, "message", "messages"), plural(info.DeadLetters, "dead letter", "dead letters"),
		plural(info.Queues, "named queue", "named queues"), plural(info.Schedules, "schedule", "schedules"), plural(info.Files, "file", "files"), n,
		info.Index, d.Round(time.Millisecond), float64(n)/1e6/max(d.Seconds(), 1e-9))
	return nil
}

// streamBackup writes src's backup into w while VerifyBackup reads the
// same bytes, and returns what the manifest says and the bytes written.
func streamBackup(ctx context.Context, src source, w io.Writer) (ringwal.BackupInfo, int64, error) {
	pr, pw := io.Pipe()
	type verdict struct {
		info ringwal.BackupInfo
		err  error
	}
	checked := make(chan verdict, 1)
	go func() {
		info, err := ringwal.VerifyBackup(pr)
		_, _ = io.Copy(io.Discard, pr) // drain, so the writer never blocks
		checked <- verdict{info, err}
	}()
	cw := &countingWriter{w: io.MultiWriter(w, pw)}
	var err error
	switch s := src.(type) {
	case *localSource:
		_, err = s.e.Backup(cw)
	case *remoteSource:
		_, err = s.c.Backup(ctx, cw)
		err = s.explain(err)
	default:
		err = errors.New("this source cannot be backed up")
	}
	pw.CloseWithError(err) // nil: EOF
	v := <-checked
	if err == nil && v.err != nil {
		err = fmt.Errorf("the stream written does not check: %w", v.err)
	}
	return v.info, cw.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// newRestoreCmd builds `ringwal restore`.
func newRestoreCmd() *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "restore FILE DIR",
		Short: "Restore a backup into a new or empty data directory",
		Long: `Restore writes the data directory a backup holds (ringwal backup, or
Engine.Backup) into DIR, which must be empty or not exist; an engine opened
on DIR then has the backed-up engine's state at its backup point (messages
leased then are pending again, their attempt counted, as after a crash).
FILE - reads standard input.

A backup cut short (its manifest missing) or damaged (a file whose size or
SHA-256 differs from the manifest's) is refused and nothing is left in DIR.
With --check, restore only checks FILE and writes nothing (no DIR).`,
		Example: "  ringwal restore queue.tar /var/lib/app/queue-restored\n  ringwal restore --check queue.tar",
		Args:    cobra.RangeArgs(1, 2),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if check != (len(args) == 1) {
				if check {
					return usagef("--check takes only FILE")
				}
				return usagef("name the backup FILE and the data directory DIR to restore into")
			}
			in := io.Reader(cmd.InOrStdin())
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			out := cmd.OutOrStdout()
			if check {
				info, err := ringwal.VerifyBackup(in)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "%s is a whole backup from %s: %s\n", safe(args[0]), info.Created.Format(time.RFC3339), describeBackup(info))
				return nil
			}
			info, err := ringwal.Restore(in, args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "restored %s into %s: %s (backed up %s)\n", safe(args[0]), safe(args[1]), describeBackup(info), info.Created.Format(time.RFC3339))
			return nil
		}),
	}
	cmd.Flags().BoolVar(&check, "check", false, "only check FILE against its manifest; write nothing")
	return cmd
}

func describeBackup(info ringwal.BackupInfo) string {
	return fmt.Sprintf("%s, %s, %s, %s; %s, %d bytes (log batch %d)",
		plural(info.Messages, "message", "messages"), plural(info.DeadLetters, "dead letter", "dead letters"), plural(info.Queues, "named queue", "named queues"),
		plural(info.Schedules, "schedule", "schedules"), plural(info.Files, "file", "files"), info.Bytes, info.Index)
}
