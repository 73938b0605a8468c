package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scrape fetches /metrics and parses it.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return mfs
}

// value sums the samples of family name whose label has the given value
// (every sample for label ""): ringwal_messages, say, is split by state
// and priority.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name, label, want string) float64 {
	t.Helper()
	mf, ok := mfs[name]
	require.True(t, ok, "no metric family %s", name)
	sum, found := 0.0, false
	for _, m := range mf.GetMetric() {
		match := label == ""
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label && lp.GetValue() == want {
				match = true
			}
		}
		if !match {
			continue
		}
		found = true
		switch {
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		}
	}
	require.True(t, found, "no sample %s{%s=%q}", name, label, want)
	return sum
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServe(t *testing.T) {
	f := newFixture(t)
	cmd := exec.Command(bin, "serve", f.dir, "--addr", "127.0.0.1:0")
	cmd.Env = binEnv()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := false
	t.Cleanup(func() {
		if !done {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	lines := bufio.NewScanner(stdout)
	first := make(chan string, 1)
	go func() {
		if lines.Scan() {
			first <- lines.Text()
		}
		close(first)
	}()
	var base string
	select {
	case l, ok := <-first:
		require.True(t, ok, "serve printed nothing; stderr: %s", stderr.String())
		require.True(t, strings.HasPrefix(l, "listening on http://127.0.0.1:"), l)
		base = strings.TrimPrefix(l, "listening on ")
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start listening")
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for lines.Scan() {
			b.WriteString(lines.Text() + "\n")
		}
		rest <- b.String()
	}()

	mfs := scrape(t, base)
	assert.Equal(t, 2.0, value(t, mfs, "ringwal_dead_letters", "category", "permanent"))
	assert.Equal(t, 1.0, value(t, mfs, "ringwal_dead_letters", "category", "poison"))
	assert.Equal(t, 3.0, value(t, mfs, "ringwal_messages", "state", "pending"))
	assert.Equal(t, 1.0, value(t, mfs, "ringwal_messages", "state", "delayed"))
	assert.Contains(t, mfs, "go_goroutines", "the Go collector is registered too")

	// Redrive through the admin API, under /api/.
	id := f.permanent[0]
	resp, err := http.Post(fmt.Sprintf("%s/api/dead-letters/%d/redrive", base, id), "application/json", nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var action struct {
		ID     uint64 `json:"id"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(body, &action))
	assert.Equal(t, uint64(id), action.ID)
	assert.Equal(t, "redriven", action.Status)

	resp, err = http.Get(base + "/api/dead-letters?category=permanent")
	require.NoError(t, err)
	var page struct {
		Entries []struct {
			ID uint64 `json:"id"`
		} `json:"entries"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
	resp.Body.Close()
	require.Len(t, page.Entries, 1)
	assert.Equal(t, uint64(f.permanent[1]), page.Entries[0].ID)

	mfs = scrape(t, base)
	assert.Equal(t, 1.0, value(t, mfs, "ringwal_dead_letters", "category", "permanent"))
	assert.Equal(t, 4.0, value(t, mfs, "ringwal_messages", "state", "pending"))
	assert.Equal(t, 1.0, value(t, mfs, "ringwal_redriven_total", "", ""))

	// While it runs, the offline commands are refused.
	r := runBin(t, 30*time.Second, "inspect", f.dir)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "in use by a running engine")

	// SIGTERM stops it cleanly.
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		done = true
		require.NoError(t, err, "stderr: %s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	assert.Contains(t, <-rest, "stopping")

	// The redrive is in the log: the directory, reopened offline, agrees.
	var rep inspectReport
	require.NoError(t, json.Unmarshal([]byte(ok(t, "inspect", "--json", f.dir)), &rep))
	assert.Equal(t, 4, rep.Pending)
	assert.Equal(t, 2, rep.Dead)
}

func TestServeSIGINT(t *testing.T) {
	f := newFixture(t)
	cmd := exec.Command(bin, "serve", f.dir, "--addr", "127.0.0.1:0")
	cmd.Env = binEnv()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	require.True(t, sc.Scan())
	require.True(t, strings.HasPrefix(sc.Text(), "listening on "))
	go func() {
		for sc.Scan() {
		}
	}()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("serve did not stop on SIGINT")
	}
}

// TestServeToken: with --token, the console, the API and /metrics all need
// it; the console asks for it with a sign-in page.
func TestServeToken(t *testing.T) {
	f := newFixture(t)
	cmd := exec.Command(bin, "serve", f.dir, "--addr", "127.0.0.1:0")
	cmd.Env = binEnv("RINGWAL_TOKEN=s3cret")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	first := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		if lines.Scan() {
			first <- lines.Text()
		}
		close(first)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var base string
	select {
	case l := <-first:
		require.True(t, strings.HasPrefix(l, "listening on http://127.0.0.1:"), l)
		base = strings.TrimPrefix(l, "listening on ")
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start listening")
	}
	get := func(path, token string) (int, string) {
		req, err := http.NewRequest("GET", base+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/", "")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body, "Sign in")
	for _, p := range []string{"/api/stats", "/metrics"} {
		code, _ = get(p, "")
		assert.Equal(t, http.StatusUnauthorized, code, p)
		code, _ = get(p, "s3cret")
		assert.Equal(t, http.StatusOK, code, p)
	}
	code, body = get("/", "s3cret")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "Overview")
	out := ok(t, "inspect", "--addr", base, "--token", "s3cret")
	assert.Contains(t, out, "pending 3")
}
