package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDemoOnTerminal runs the demo as a user does, on a terminal, where
// it draws its board with escapes and redraws it in place, and checks that
// it ends with the recovery verdict and exit status 0. The README's first
// command is this one.
func TestDemoOnTerminal(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "demo")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "demo", "--duration", "2s", "--dir", parent)
	cmd.Env = binEnv("TERM=xterm", "COLUMNS=", "LINES=")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil && os.Getenv("CI") != "true" && isNoPty(err) {
		t.Skipf("no pseudo-terminal on this machine: %v", err)
	}
	require.NoError(t, err, "starting the demo on a pseudo-terminal")
	defer f.Close()

	var mu sync.Mutex
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil { // EIO once the demo and its child closed the terminal
				return
			}
		}
	}()
	werr := cmd.Wait()
	_ = f.Close()
	<-copied
	mu.Lock()
	text := out.String()
	mu.Unlock()
	require.NoError(t, ctx.Err(), "the demo did not end on a terminal; its output:\n%s", text)
	require.NoError(t, werr, "output:\n%s", text)
	assert.Contains(t, text, "\x1b[", "on a terminal the board is drawn in place")
	for _, want := range []string{"ACT 1", "ACT 2", "SIGKILL sent to pid", "reopened",
		"recovery check: held", "SUMMARY", "WHAT TO TRY NEXT"} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "FAIL")
}

// isNoPty tells whether err says that this machine gives no
// pseudo-terminals (no /dev/ptmx, or none left), as opposed to a bug.
func isNoPty(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENODEV) ||
		errors.Is(err, syscall.ENXIO) || errors.Is(err, pty.ErrUnsupported) || errors.Is(err, io.EOF)
}
