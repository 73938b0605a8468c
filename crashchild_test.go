package ringwal_test

import (
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
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
