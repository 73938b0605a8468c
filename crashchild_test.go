package ringwal_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
)

// crashChild is a child process of this test binary that runs one test
// (the child half of a crash test) and reports on its stdout, for the
// parent to SIGKILL at a moment of its choosing.
type crashChild struct {
	cmd    *exec.Cmd
	stdout io.Reader
	killed bool
}

// startCrashChild starts the test named test in a child with env added to
// this process's environment. Whatever happens, the child is killed and
// waited for when the test ends.
func startCrashChild(t *testing.T, test string, env ...string) *crashChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &crashChild{cmd: cmd, stdout: stdout}
	t.Cleanup(func() {
		if !c.killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return c
}

// kill sends SIGKILL (which fails only if the child has exited already).
// The caller reads stdout to its end, then calls wait.
func (c *crashChild) kill() { _ = c.cmd.Process.Signal(syscall.SIGKILL) }

// wait waits for the killed child once its stdout has been read to the end.
func (c *crashChild) wait() {
	c.killed = true
	_ = c.cmd.Wait()
}

// childEmit writes one line of a child's report with one write(2), so
// that the lines of its goroutines never interleave.
func childEmit(format string, args ...any) {
	_, _ = os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
}

// childFail reports an error the parent fails on ("X ...") and exits 3.
func childFail(format string, args ...any) {
	childEmit("X "+format, args...)
	os.Exit(3)
}

// childOpen opens the child's engine on dir, or fails the child.
func childOpen(dir string, o ringwal.Options) *ringwal.Engine {
	e, err := ringwal.Open(dir, o)
	if err != nil {
		childFail("open: %v", err)
	}
	return e
}
