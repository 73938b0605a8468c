package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/classify"
)

// bin is the ringwal binary the tests run, built once by TestMain (with
// -race when the tests run with it).
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ringwal-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "ringwal")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the ringwal binary:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// binEnv is the environment of the binary: a race-enabled build must not
// sleep a second at exit (the race runtime's default), and a race it finds
// fails the run (exit status 66).
// The operator's RINGWAL_ADDR and RINGWAL_TOKEN are left out: a test
// that wants them sets them (runBinEnv).
func binEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envAddr+"=") && !strings.HasPrefix(kv, envToken+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, "GORACE=atexit_sleep_ms=0 exitcode=66 "+os.Getenv("GORACE"))
	return append(env, extra...)
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
}

// runBin runs the binary with args and a time limit.
func runBin(t *testing.T, timeout time.Duration, args ...string) result {
	t.Helper()
	return runBinEnv(t, nil, timeout, args...)
}

// runBinEnv runs the binary with args, extra environment variables
// (NAME=value) and a time limit.
func runBinEnv(t *testing.T, env []string, timeout time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = binEnv(env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("running %v: %v", args, err)
	}
	require.NoError(t, ctx.Err(), "ringwal %v timed out; stdout:\n%s\nstderr:\n%s", args, r.stdout, r.stderr)
	return r
}

// ok runs the binary and requires exit status 0.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := runBin(t, 30*time.Second, args...)
	require.Equal(t, 0, r.code, "ringwal %v\nstdout:\n%s\nstderr:\n%s", args, r.stdout, r.stderr)
	return r.stdout
}

// fixture is a data directory with known contents:
//   - pending: 1 critical (key api), 2 normal (key mail);
//   - delayed: 1 (an hour away);
//   - dead letters: 2 permanent (key api), 1 poison (key mail).
type fixture struct {
	dir       string
	permanent []ringwal.ID
	poison    ringwal.ID
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{dir: filepath.Join(t.TempDir(), "data")}
	e, err := ringwal.Open(f.dir, ringwal.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	fail := func(key string, payload string, cause error) ringwal.ID {
		id, err := e.Enqueue(ctx, ringwal.Message{Key: key, Payload: []byte(payload)})
		require.NoError(t, err)
		d, ok := e.TryDequeue()
		require.True(t, ok)
		require.Equal(t, id, d.ID)
		require.NoError(t, e.Nack(d.Lease, cause))
		return id
	}
	f.permanent = append(f.permanent,
		fail("api", "order-1", classify.Mark(errors.New("HTTP 400: bad request"), classify.Permanent)),
		fail("api", "order-2", classify.Mark(errors.New("HTTP 422: unprocessable"), classify.Permanent)))
	f.poison = fail("mail", "poison-1", classify.Panic("cannot decode", nil))
	for _, m := range []ringwal.Message{
		{Key: "api", Priority: ringwal.Critical, Payload: []byte("urgent-1")},
		{Key: "mail", Payload: []byte("mail-1")},
		{Key: "mail", Payload: []byte("mail-2")},
		{Key: "mail", Payload: []byte("later-1"), Delay: time.Hour},
	} {
		_, err := e.Enqueue(ctx, m)
		require.NoError(t, err)
	}
	require.NoError(t, e.Close())
	return f
}

func TestHelpEveryCommand(t *testing.T) {
	for _, path := range [][]string{
		{}, {"demo"}, {"inspect"}, {"dlq"}, {"dlq", "list"}, {"dlq", "show"}, {"dlq", "redrive"},
		{"dlq", "review"}, {"dlq", "purge"}, {"wal"}, {"wal", "verify"}, {"wal", "dump"}, {"serve"},
		{"queues"}, {"queues", "list"}, {"queues", "pause"}, {"queues", "resume"}, {"queues", "delete"},
		{"backup"}, {"restore"},
	} {
		out := ok(t, append(path, "--help")...)
		assert.Contains(t, out, "Usage:", "help of %v", path)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := newFixture(t).dir
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"inspect"},
		{"inspect", "a", "b"},
		{"inspect", "--no-such-flag", dir},
		{"dlq", "list", "--category", "nonsense", dir},
		{"dlq", "list", "--since", "yesterday-ish", dir},
		{"dlq", "list", "--reviewed=maybe", dir},
		{"dlq", "purge", dir},
		{"dlq", "redrive", dir, "12", "--category", "poison"},
		{"dlq", "show", dir, "not-an-id"},
		{"wal", "dump", "--kind", "bogus", dir},
		{"demo", "--duration", "10ms"},
		{"serve", dir, "--addr", "0.0.0.0:0"},
		{"serve", dir, "--addr", ":0"},
		{"dlq", "list", "--addr", "ftp://example.com"},
	} {
		r := runBin(t, 30*time.Second, args...)
		assert.Equal(t, 2, r.code, "ringwal %v: stdout %q stderr %q", args, r.stdout, r.stderr)
		assert.Contains(t, r.stderr, "ringwal: ", "ringwal %v: the error goes to stderr", args)
		assert.Empty(t, strings.TrimSpace(r.stdout), "ringwal %v", args)
	}
}

func TestFailuresExitOne(t *testing.T) {
	empty := t.TempDir()
	for _, args := range [][]string{
		{"inspect", filepath.Join(empty, "missing")},
		{"inspect", empty},
		{"dlq", "list", empty},
		{"wal", "verify", empty},
	} {
		r := runBin(t, 30*time.Second, args...)
		assert.Equal(t, 1, r.code, "ringwal %v: stderr %q", args, r.stderr)
		assert.Contains(t, r.stderr, "ringwal: ")
	}
	_, err := os.Stat(filepath.Join(empty, "missing"))
	assert.True(t, os.IsNotExist(err), "inspect must not create a directory")
	r := runBin(t, 30*time.Second, "inspect", empty)
	assert.Contains(t, r.stderr, "not a ringwal data directory")
}
