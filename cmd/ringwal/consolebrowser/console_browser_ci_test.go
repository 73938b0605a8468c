package consolebrowser_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBrowserTestsFailInCIWithoutChromium runs this test binary's browser
// test again with no Chromium on PATH: under CI=true it must fail, saying
// why; elsewhere it is skipped.
func TestBrowserTestsFailInCIWithoutChromium(t *testing.T) {
	if os.Getenv("RINGWAL_BROWSER_CHILD") != "" {
		t.Skip("the child run only runs the browser test")
	}
	run := func(ci string) (string, int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConsoleSignInURLInBrowser$", "-test.v", "-test.count=1")
		env := []string{"PATH=" + t.TempDir(), "RINGWAL_BROWSER_CHILD=1", "GORACE=atexit_sleep_ms=0"}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "GORACE=") {
				env = append(env, kv)
			}
		}
		if ci != "" {
			env = append(env, "CI="+ci)
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			require.NoError(t, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}

	out, code := run("true")
	assert.NotEqual(t, 0, code, "CI=true without Chromium:\n%s", out)
	assert.Contains(t, out, "--- FAIL: TestConsoleSignInURLInBrowser")
	assert.Contains(t, out, "CI=true: the console's browser tests must run in CI")

	out, code = run("")
	assert.Equal(t, 0, code, "without CI:\n%s", out)
	assert.Contains(t, out, "--- SKIP: TestConsoleSignInURLInBrowser")
}
