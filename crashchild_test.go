package ringwal_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
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

// runChild runs test in a child process of this test binary with env
// added to this process's environment, lets it finish, and returns what
// it printed (stdout and stderr together); the test fails if the child
// does.
func runChild(t *testing.T, test string, env ...string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child:\n%s", out)
	return out
}

// childIDs collects the IDs of a child's "TAG <id>" lines by tag, and
// logs its "REPORT ..." lines.
func childIDs(t *testing.T, out []byte) map[string][]ringwal.ID {
	t.Helper()
	ids := map[string][]ringwal.ID{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && f[0] == "REPORT" {
			t.Log(sc.Text())
			continue
		}
		if len(f) != 2 || strings.ToUpper(f[0]) != f[0] {
			continue
		}
		if id, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			ids[f[0]] = append(ids[f[0]], id)
		}
	}
	return ids
}

// fileSizeLimit lets a child make its log's writes fail with EFBIG as on
// a full disk: set(n) sets RLIMIT_FSIZE to n bytes (a write that would
// take a file past n fails; SIGXFSZ, which would kill the process, is
// ignored from now on), and set(unlimited) gives the space back.
func fileSizeLimit(t *testing.T) (set func(n uint64), unlimited uint64) {
	signal.Ignore(syscall.SIGXFSZ)
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old))
	return func(n uint64) { require.NoError(t, setFileSize(n)) }, old.Cur
}

// setFileSize sets RLIMIT_FSIZE to n bytes (the hard limit as it is), the
// setter of fileSizeLimit: it returns its error rather than failing the
// test, so that a goroutine other than the test's may call it.
func setFileSize(n uint64) error {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		return err
	}
	return syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: old.Max})
}

// largestFile is the size of the largest file under dir.
func largestFile(t *testing.T, dir string) int64 {
	var max int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil && fi.Size() > max {
			max = fi.Size()
		}
		return err
	})
	require.NoError(t, err)
	return max
}
