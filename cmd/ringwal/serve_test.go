package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
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

// scrape fetches /metrics with the bearer token and parses it.
func scrape(t *testing.T, base, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
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

// served is a running `ringwal serve`.
type served struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	signIn string // the sign-in URL; "" when the token was given
	token  string // the token of the sign-in URL
	stderr *syncBuffer
	rest   chan string // the rest of stdout, once it ends
}

// startServe starts `ringwal serve` with args and extra environment
// variables, and reads what it prints up to "serving ...". The process is
// killed when the test ends unless the test waited for it.
func startServe(t *testing.T, env []string, args ...string) *served {
	t.Helper()
	s := &served{cmd: exec.Command(bin, append([]string{"serve"}, args...)...), stderr: &syncBuffer{}, rest: make(chan string, 1)}
	s.cmd.Env = binEnv(env...)
	s.cmd.Stderr = s.stderr
	stdout, err := s.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
	head := make(chan []string, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		var got []string
		for lines.Scan() {
			got = append(got, lines.Text())
			if strings.HasPrefix(lines.Text(), "serving ") {
				break
			}
		}
		head <- got
		var b strings.Builder
		for lines.Scan() {
			b.WriteString(lines.Text() + "\n")
		}
		s.rest <- b.String()
	}()
	select {
	case got := <-head:
		require.NotEmpty(t, got, "serve printed nothing; stderr: %s", s.stderr.String())
		require.True(t, strings.HasPrefix(got[0], "listening on http://127.0.0.1:"), got[0])
		s.base = strings.TrimPrefix(got[0], "listening on ")
		for _, l := range got[1:] {
			if u, ok := strings.CutPrefix(l, "sign in: "); ok {
				s.signIn = u
				s.token = strings.TrimPrefix(u, s.base+"/?token=")
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start listening")
	}
	return s
}

// get fetches path from base, with a bearer token unless token is "".
func get(t *testing.T, base, path, token string) (int, string) {
	t.Helper()
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

func TestServe(t *testing.T) {
	f := newFixture(t)
	s := startServe(t, nil, f.dir, "--addr", "127.0.0.1:0")
	base, token, cmd := s.base, s.token, s.cmd
	require.NotEmpty(t, token, "a token made for the run")
	authz := http.Header{"Authorization": {"Bearer " + token}}
	mfs := scrape(t, base, token)
	assert.Equal(t, 2.0, value(t, mfs, "ringwal_dead_letters", "category", "permanent"))
	assert.Equal(t, 1.0, value(t, mfs, "ringwal_dead_letters", "category", "poison"))
	assert.Equal(t, 3.0, value(t, mfs, "ringwal_messages", "state", "pending"))
	assert.Equal(t, 1.0, value(t, mfs, "ringwal_messages", "state", "delayed"))
	assert.Contains(t, mfs, "go_goroutines", "the Go collector is registered too")

	// Redrive through the admin API, under /api/.
	id := f.permanent[0]
	req, err := http.NewRequest("POST", fmt.Sprintf("%s/api/dead-letters/%d/redrive", base, id), nil)
	require.NoError(t, err)
	req.Header = authz
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var action struct {
		ID     uint64 `json:"id"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(body, &action))
	assert.Equal(t, id, action.ID)
	assert.Equal(t, "redriven", action.Status)

	req, err = http.NewRequest("GET", base+"/api/dead-letters?category=permanent", nil)
	require.NoError(t, err)
	req.Header = authz
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	var page struct {
		Entries []struct {
			ID uint64 `json:"id"`
		} `json:"entries"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
	resp.Body.Close()
	require.Len(t, page.Entries, 1)
	assert.Equal(t, f.permanent[1], page.Entries[0].ID)

	mfs = scrape(t, base, token)
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
		require.NoError(t, err, "stderr: %s", s.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	assert.Contains(t, <-s.rest, "stopping")

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
// it; the console asks for it with a sign-in page. No sign-in URL is
// printed for a token the operator chose.
func TestServeToken(t *testing.T) {
	f := newFixture(t)
	s := startServe(t, []string{"RINGWAL_TOKEN=s3cret"}, f.dir, "--addr", "127.0.0.1:0")
	base := s.base
	assert.Empty(t, s.signIn)
	code, body := get(t, base, "/", "")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body, "Sign in")
	for _, p := range []string{"/api/stats", "/metrics"} {
		code, _ = get(t, base, p, "")
		assert.Equal(t, http.StatusUnauthorized, code, p)
		code, _ = get(t, base, p, "s3cret")
		assert.Equal(t, http.StatusOK, code, p)
	}
	code, body = get(t, base, "/", "s3cret")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "Overview")
	out := ok(t, "inspect", "--addr", base, "--token", "s3cret")
	assert.Contains(t, out, "pending 3")
}

// TestServeMakesAToken: without a token, serve makes one and prints a
// sign-in URL that carries it; nothing is served without it; the URL
// signs a browser in and leaves for the page without the token; wrong
// tokens, on /metrics too, are throttled and counted.
func TestServeMakesAToken(t *testing.T) {
	f := newFixture(t)
	s := startServe(t, nil, f.dir, "--addr", "127.0.0.1:0")
	require.Regexp(t, `^[0-9a-f]{48}$`, s.token, "192 random bits: %s", s.signIn)
	for _, p := range []string{"/", "/api/stats", "/api/dead-letters", "/metrics"} {
		code, _ := get(t, s.base, p, "")
		assert.Equal(t, http.StatusUnauthorized, code, p)
	}

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(s.signIn)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Contains(t, string(body), "Overview")
	assert.Equal(t, s.base+"/", resp.Request.URL.String(), "the token left the address")
	resp, err = browser.Get(s.base + "/dead-letters")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the session holds")

	code, _ := get(t, s.base, "/metrics", "wrong")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = get(t, s.base, "/metrics", s.token)
	assert.Equal(t, http.StatusTooManyRequests, code, "a moment after a wrong token, not even the right one is checked")
	require.Eventually(t, func() bool {
		code, _ := get(t, s.base, "/metrics", s.token)
		return code == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "the penalty ends")
	mfs := scrape(t, s.base, s.token)
	assert.Equal(t, 1.0, value(t, mfs, "ringwal_admin_auth_failures_total", "", ""))
	assert.GreaterOrEqual(t, value(t, mfs, "ringwal_admin_auth_throttled_total", "", ""), 1.0)
	assert.Equal(t, 0.0, value(t, mfs, "ringwal_admin_hosts_refused_total", "", ""))
}

// TestServeTokenLength: beyond loopback a token needs 16 characters.
func TestServeTokenLength(t *testing.T) {
	dir := newFixture(t).dir
	for _, env := range [][]string{nil, {"RINGWAL_TOKEN=s3cret"}} {
		r := runBinEnv(t, env, 30*time.Second, "serve", dir, "--addr", "0.0.0.0:0")
		assert.Equal(t, 2, r.code, "%v: %s", env, r.stderr)
		assert.Contains(t, r.stderr, "at least 16 characters")
	}
	r := runBin(t, 30*time.Second, "serve", dir, "--addr", "0.0.0.0:0", "--token", "0123456789abcde")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "it has 15")
}

// TestServeServerTimeouts: serve's server bounds every phase of a
// connection, so that a client that sends slowly, reads slowly or idles
// cannot hold a connection (and its goroutine) forever.
func TestServeServerTimeouts(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler())
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		assert.Positive(t, d, name)
		assert.LessOrEqual(t, d, 2*time.Minute, name)
	}
	assert.LessOrEqual(t, srv.ReadHeaderTimeout, srv.ReadTimeout)
	assert.Positive(t, srv.MaxHeaderBytes)
}
