// Command ringwal is the command-line tool of the ringwal engine: a guided
// demo (live traffic, failures, breakers, then a SIGKILL and a recovery
// check); operator commands (inspect, dlq, keys, queues, messages, cancel,
// pause, resume) over a stopped engine's data
// directory or, with --addr, over a running engine's admin API; backup (of
// either) and restore; wal verify and dump; and serve (the web console, the JSON admin API and Prometheus
// metrics of a stopped engine's directory).
//
// Exit status: 0 on success, 1 on failure, 2 on a usage error. Errors go to
// standard error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// main runs the command line and exits with its status.
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var fe *failure
	if errors.As(err, &fe) {
		fmt.Fprintf(stderr, "ringwal: %s\n", safeLines(fe.err.Error()))
		return exitFailure
	}
	// Anything not returned by a command's own work is a usage error:
	// unknown commands or flags, wrong argument counts, bad flag values.
	fmt.Fprintf(stderr, "ringwal: %s\n", safeLines(err.Error()))
	if cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return exitUsage
}

// newRootCmd builds the command tree writing to stdout and stderr.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "ringwal",
		Short: "Run the ringwal demo and operate ringwal engines",
		Long: `ringwal is the command-line tool of the ringwal engine, a durable in-process
message and job engine for Go.

Start with the demo:

  ringwal demo

Then look at what it left behind with inspect, dlq and wal, or serve a data
directory's web console, admin API and metrics.

inspect, dlq, keys, queues, schedules, messages, cancel, pause and resume work on a data
directory no process holds (DIR), or on a running engine through the admin API its application mounts
(admin.NewHandler): --addr URL or $RINGWAL_ADDR, with --token or
$RINGWAL_TOKEN. Same output either way.

Exit status: 0 on success, 1 on failure, 2 on a usage error.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(stderr)
			_ = cmd.Help()
			return errors.New("missing command")
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	root.AddCommand(
		newDemoCmd(),
		newDemoChildCmd(),
		newInspectCmd(),
		newDLQCmd(),
		newKeysCmd(),
		newQueuesCmd(),
		newSchedulesCmd(),
		newMessagesCmd(),
		newCancelCmd(),
		newPauseCmd(),
		newResumeCmd(),
		newWALCmd(),
		newServeCmd(),
		newBackupCmd(),
		newRestoreCmd(),
	)
	root.CompletionOptions.HiddenDefaultCmd = true
	return root
}

// failure marks an error that happened while a command did its work (exit
// status 1), as opposed to a usage error (exit status 2).
type failure struct{ err error }

// Error returns the wrapped error's text.
func (f *failure) Error() string { return f.err.Error() }

// Unwrap returns the wrapped error.
func (f *failure) Unwrap() error { return f.err }

// usageError marks an error in the command line found by a command itself
// (a bad filter value, say): exit status 2.
type usageError struct{ err error }

// Error returns the wrapped error's text.
func (u *usageError) Error() string { return u.err.Error() }

// Unwrap returns the wrapped error.
func (u *usageError) Unwrap() error { return u.err }

// usagef returns a usage error with a formatted message.
func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// runE adapts a command body: its errors are failures (exit status 1)
// unless they are usage errors.
func runE(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		if err == nil {
			return nil
		}
		var ue *usageError
		if errors.As(err, &ue) {
			return ue
		}
		return &failure{err: err}
	}
}
