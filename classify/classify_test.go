package classify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// httpError is an HTTP client's error for a non-2xx response, as a caller
// of this package would write it.
type httpError struct {
	code       int
	retryAfter time.Duration
}

func (e *httpError) Error() string             { return "http status " + strconv.Itoa(e.code) }
func (e *httpError) StatusCode() int           { return e.code }
func (e *httpError) RetryAfter() time.Duration { return e.retryAfter }

// responseError turns a non-2xx response into an *httpError.
func responseError(resp *http.Response) *httpError {
	e := &httpError{code: resp.StatusCode}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		e.retryAfter = time.Duration(s) * time.Second
	}
	return e
}

// awsError spells the status the AWS SDK way.
type awsError struct{ code int }

func (e awsError) Error() string       { return "api error" }
func (e awsError) HTTPStatusCode() int { return e.code }

// connRefused dials a loopback port that was just free.
func connRefused(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
		t.Skip("something is listening on the freed port")
	}
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	return err
}

// clientTimeout makes an http.Client with a tiny Timeout call a loopback
// listener that accepts and never answers.
func clientTimeout(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { // owned by this test: ends when ln closes
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // hold it open, never answer
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	cl := &http.Client{Timeout: 20 * time.Millisecond}
	resp, err := cl.Get("http://" + ln.Addr().String() + "/")
	if err == nil {
		resp.Body.Close()
		t.Fatal("a listener that never answers answered")
	}
	var ue *url.Error
	require.ErrorAs(t, err, &ue)
	require.True(t, ue.Timeout())
	return err
}

// statusFromServer returns the client-side error for a loopback server
// answering code with the given Retry-After header ("" for none).
func statusFromServer(t *testing.T, code int, retryAfter string) error {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return fmt.Errorf("notify %s: %w", srv.URL, responseError(resp))
}

// serverHangsUp returns an http.Client's error for a loopback server that
// closes each connection without answering: a *url.Error over io.EOF.
func serverHangsUp(t *testing.T) error {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}))
	defer srv.Close()
	cl := srv.Client()
	cl.Transport.(*http.Transport).DisableKeepAlives = true
	resp, err := cl.Post(srv.URL, "text/plain", strings.NewReader("x")) // a POST is not retried by the transport
	if err == nil {
		resp.Body.Close()
		t.Fatal("a server that hangs up answered")
	}
	var ue *url.Error
	require.ErrorAs(t, err, &ue)
	require.ErrorIs(t, err, io.EOF)
	return err
}

func expiredContext() error {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	<-ctx.Done()
	return ctx.Err()
}

func canceledContext() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx.Err()
}

func TestDefaultRealErrors(t *testing.T) {
	refused := connRefused(t)
	timedOut := clientTimeout(t)
	deadline := expiredContext()
	enospc := &os.PathError{Op: "write", Path: "/var/lib/ringwal/x", Err: syscall.ENOSPC}
	emfile := &os.PathError{Op: "open", Path: "/etc/hosts", Err: syscall.EMFILE}

	tests := []struct {
		name string
		err  error
		want Category
	}{
		{"nil", nil, Unknown},
		{"dial closed loopback port", refused, Transient},
		{"dial refused, wrapped with %w", fmt.Errorf("deliver: %w", refused), Transient},
		{"context.DeadlineExceeded", deadline, Timeout},
		{"context.DeadlineExceeded wrapped", fmt.Errorf("query: %w", deadline), Timeout},
		{"context.Canceled", canceledContext(), Unknown},
		{"http.Client timeout (*url.Error)", timedOut, Timeout},
		{"os.ErrDeadlineExceeded", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), Timeout},
		{"429 with Retry-After", statusFromServer(t, 429, "7"), RateLimited},
		{"429 without Retry-After", statusFromServer(t, 429, ""), RateLimited},
		{"503 with Retry-After is a hint", statusFromServer(t, 503, "3"), RateLimited},
		{"503", statusFromServer(t, 503, ""), Transient},
		{"500", statusFromServer(t, 500, ""), Transient},
		{"408", statusFromServer(t, 408, ""), Timeout},
		{"404", statusFromServer(t, 404, ""), Permanent},
		{"400", statusFromServer(t, 400, ""), Permanent},
		{"302 does not classify", &httpError{code: 302}, Unknown},
		{"AWS-style HTTPStatusCode 503", awsError{503}, Transient},
		{"*os.PathError ENOSPC", enospc, Resource},
		{"*os.PathError EMFILE", emfile, Resource},
		{"bare errno ECONNRESET", syscall.ECONNRESET, Transient},
		{"bare errno EPIPE", fmt.Errorf("write: %w", syscall.EPIPE), Transient},
		{"errno ETIMEDOUT is a timeout", syscall.ETIMEDOUT, Timeout},
		{"errno EACCES", &os.PathError{Op: "open", Path: "/root", Err: syscall.EACCES}, Permanent},
		{"errno not in the table", syscall.EISDIR, Unknown},
		{"unknown", errors.New("the widget is sad"), Unknown},
		{"panic", Panic("boom", nil), Poison},
		{"panic of a timeout is still poison", Panic(deadline, nil), Poison},
		{"panic wrapped", fmt.Errorf("handler: %w", Panic(42, []byte("stack"))), Poison},

		// Markers.
		{"Mark permanent over a transient cause", Mark(refused, Permanent), Permanent},
		{"Mark deep inside wins over a timeout above it",
			fmt.Errorf("outer: %w", &timeoutWrapper{Mark(errors.New("x"), Resource)}), Resource},
		{"outermost Mark wins", Mark(Mark(refused, Transient), Permanent), Permanent},
		{"Mark with an undeclared category", Mark(refused, Category(77)), Unknown},
		{"After keeps the cause's category", After(refused, time.Second), Transient},
		{"After of an unknown error", After(errors.New("not ready"), time.Second), Unknown},
		{"After(nil)", After(nil, time.Second), Unknown},
		{"Mark over a panic", Mark(Panic("x", nil), Transient), Transient},

		// Joined trees: rules ranked first, then pre-order position.
		{"join: unknown then refused", errors.Join(errors.New("boom"), refused), Transient},
		{"join: ENOSPC then deadline: timeout ranks higher", errors.Join(enospc, deadline), Timeout},
		{"join: ENOSPC then refused: first wins", errors.Join(enospc, refused), Resource},
		{"join: refused then ENOSPC: first wins", errors.Join(refused, enospc), Transient},
		{"join: timeout then marked", errors.Join(deadline, Mark(errors.New("bad input"), Permanent)), Permanent},
		{"join nested in %w", fmt.Errorf("batch: %w", errors.Join(errors.New("a"), fmt.Errorf("b: %w", enospc))), Resource},
		{"multiple %w", fmt.Errorf("%w; %w", errors.New("a"), statusFromServer(t, 404, "")), Permanent},
		{"join: 404 then 503: first wins", errors.Join(&httpError{code: 404}, &httpError{code: 503}), Permanent},
		{"retry hint of 0 is no hint", &httpError{code: 500, retryAfter: 0}, Transient},

		// Text as a last resort.
		{"text: too many requests", errors.New("upstream: 429 Too Many Requests"), RateLimited},
		{"text: no space left", errors.New("write /x: no space left on device"), Resource},
		{"text: i/o timeout", errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout"), Timeout},
		{"text: connection refused", errors.New("dial: Connection Refused"), Transient},
		{"text: rate limit exceeded is not a timeout", errors.New("rate limit exceeded"), RateLimited},
		{"text: permission denied", errors.New("open /etc/shadow: permission denied"), Permanent},
		{"text of a hidden child", &opaque{msg: "send failed", err: errors.New("broken pipe")}, Transient},
		{"structure beats text", fmt.Errorf("timeout talking to %w", &httpError{code: 404}), Permanent},

		// Network errors, seen through *url.Error and *net.OpError.
		{"server closed the connection (*url.Error over io.EOF)", serverHangsUp(t), Transient},
		{"*url.Error over *net.OpError over ECONNRESET", &url.Error{Op: "Post", URL: "http://h/", Err: &net.OpError{
			Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}, Transient},
		{"*url.Error over *net.OpError over EACCES: the cause decides", &url.Error{Op: "Get", URL: "http://h/", Err: &net.OpError{
			Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)}}, Permanent},
		{"*url.Error over a timed-out *net.OpError", &url.Error{Op: "Get", URL: "http://h/", Err: &net.OpError{
			Op: "read", Net: "tcp", Err: &timeoutWrapper{errors.New("deadline")}}}, Timeout},
		{"*net.OpError over io.ErrUnexpectedEOF", &net.OpError{Op: "read", Net: "tcp", Err: io.ErrUnexpectedEOF}, Transient},
		{"*net.OpError over net.ErrClosed", &net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}, Transient},
		{"*net.DNSError temporary", &net.DNSError{Err: "server misbehaving", Name: "h", IsTemporary: true}, Transient},
		{"*net.DNSError timeout", &net.DNSError{Err: "i/o timeout", Name: "h", IsTimeout: true}, Timeout},
		{"*net.DNSError not found is not known to pass",
			&url.Error{Op: "Get", URL: "http://h/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "h", IsNotFound: true}}}, Unknown},
		{"*net.AddrError is not transient", &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "missing port in address", Addr: "h"}}, Unknown},
		{"io.EOF outside a network error", fmt.Errorf("decode: %w", io.EOF), Unknown},

		// Phrasings, as services and client libraries spell them.
		{"text: network error", errors.New("smtp: network error while sending"), Transient},
		{"text: network is down", errors.New("sendto: network is down"), Transient},
		{"text: connection reset by peer", errors.New("read tcp 10.0.0.1:5->10.0.0.2:443: read: connection reset by peer"), Transient},
		{"text: broken pipe", errors.New("write tcp 10.0.0.1:5->10.0.0.2:443: write: broken pipe"), Transient},
		{"text: connection closed", errors.New("amqp: connection closed"), Transient},
		{"text: unexpected EOF", errors.New("reading body: unexpected EOF"), Transient},
		{"text: unauthorized", errors.New("webhook answered 401 Unauthorized"), Permanent},
		{"text: forbidden", errors.New("403 Forbidden"), Permanent},
		{"text: authentication failed", errors.New("pq: password authentication failed for user \"app\""), Permanent},
		{"text: auth failed", errors.New("smtp: 535 auth failed"), Permanent},
		{"text: authentication failure", errors.New("ldap: Authentication failure"), Permanent},
		{"text: not authorized", errors.New("redis: NOAUTH not authorized"), Permanent},
		{"text: unauthenticated", errors.New("rpc error: code = Unauthenticated desc = missing credentials"), Permanent},
		{"text: invalid token", errors.New("api: invalid token"), Permanent},
		{"text: invalid credentials", errors.New("login: Invalid credentials"), Permanent},
		{"text: invalid API key", errors.New("Invalid API key provided"), Permanent},
		{"text: access denied", errors.New("s3: Access Denied"), Permanent},
		{"text: a rate limit is not an auth failure", errors.New("unauthorized: rate limit exceeded"), RateLimited},
	}
	c := Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, c.Classify(tt.err), "%v", tt.err)
		})
	}
}

// timeoutWrapper is a net.Error-like wrapper that reports a timeout.
type timeoutWrapper struct{ err error }

func (e *timeoutWrapper) Error() string   { return "timeout: " + e.err.Error() }
func (e *timeoutWrapper) Unwrap() error   { return e.err }
func (e *timeoutWrapper) Timeout() bool   { return true }
func (e *timeoutWrapper) Temporary() bool { return true }

// opaque replaces its child's text with its own.
type opaque struct {
	msg string
	err error
}

func (e *opaque) Error() string { return e.msg }
func (e *opaque) Unwrap() error { return e.err }

func TestRetryAfter(t *testing.T) {
	hint := statusFromServer(t, 429, "7")
	tests := []struct {
		name   string
		err    error
		want   time.Duration
		wantOK bool
	}{
		{"nil", nil, 0, false},
		{"plain", errors.New("x"), 0, false},
		{"server hint", hint, 7 * time.Second, true},
		{"After", After(errors.New("x"), 3*time.Second), 3 * time.Second, true},
		{"After overrides an inner hint", After(hint, time.Second), time.Second, true},
		{"hint outside After wins", fmt.Errorf("%w", &httpError{code: 429, retryAfter: 9 * time.Second}), 9 * time.Second, true},
		{"After zero", After(errors.New("x"), 0), 0, true},
		{"After negative is zero", After(errors.New("x"), -time.Second), 0, true},
		{"After(nil)", After(nil, 2*time.Second), 2 * time.Second, true},
		{"zero hint is none", &httpError{code: 429}, 0, false},
		{"in a join", errors.Join(errors.New("a"), After(errors.New("b"), 5*time.Second)), 5 * time.Second, true},
		{"Mark keeps After visible", Mark(After(errors.New("x"), time.Minute), Permanent), time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := RetryAfter(tt.err)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, d)
		})
	}
}

func TestWrappersKeepErrorsIsAndAs(t *testing.T) {
	refused := connRefused(t)
	for name, err := range map[string]error{
		"Mark":         Mark(refused, Permanent),
		"After":        After(refused, time.Second),
		"Mark(After)":  Mark(After(refused, time.Second), Poison),
		"After(Mark)":  After(Mark(refused, Poison), time.Second),
		"panic(error)": Panic(refused, nil),
	} {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, err, syscall.ECONNREFUSED)
			var op *net.OpError
			assert.ErrorAs(t, err, &op)
		})
	}
}

func TestWrapperText(t *testing.T) {
	cause := errors.New("smtp: 550 mailbox unavailable")
	assert.Equal(t, cause.Error(), Mark(cause, Permanent).Error(), "Mark keeps the cause's text")
	assert.Equal(t, cause.Error(), After(cause, time.Second).Error(), "After keeps the cause's text")
	assert.Equal(t, "retry after 1.5s", After(nil, 1500*time.Millisecond).Error())
	assert.NoError(t, Mark(nil, Permanent), "Mark(nil) is nil")
	assert.Error(t, After(nil, 0), "After(nil) is a nack, not nil")
}

func TestPanicError(t *testing.T) {
	var err error
	func() {
		defer func() { err = Panic(recover(), nil) }()
		explode()
	}()
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "kaboom", pe.Value)
	assert.Contains(t, err.Error(), "panic: kaboom")
	assert.Contains(t, err.Error(), "explode", "the text carries the panicking frame")
	assert.Nil(t, pe.Unwrap(), "a non-error value unwraps to nil")

	withStack := Panic("x", []byte("goroutine 7 [running]:"))
	assert.Equal(t, "panic: x\n\ngoroutine 7 [running]:", withStack.Error())
	assert.Equal(t, "panic: x", (&PanicError{Value: "x"}).Error())
}

func explode() { panic("kaboom") }

func TestClassifierFunc(t *testing.T) {
	errQuota := errors.New("quota gone")
	c := ClassifierFunc(func(err error) Category {
		if errors.Is(err, errQuota) {
			return Permanent
		}
		return Default().Classify(err)
	})
	assert.Equal(t, Permanent, c.Classify(fmt.Errorf("x: %w", errQuota)))
	assert.Equal(t, Timeout, c.Classify(context.DeadlineExceeded))
}

// deepChain wraps err n times.
func deepChain(err error, n int) error {
	for range n {
		err = &opaque{msg: "layer", err: err}
	}
	return err
}

func TestDepthLimit(t *testing.T) {
	assert.Equal(t, Timeout, Default().Classify(deepChain(context.DeadlineExceeded, 10)))
	assert.Equal(t, Unknown, Default().Classify(deepChain(context.DeadlineExceeded, maxDepth+5)),
		"the walk stops at maxDepth")
}

func TestClassifyDoesNotAllocate(t *testing.T) {
	refused := connRefused(t)
	c := Default()
	for name, err := range map[string]error{
		"refused":  refused,
		"marked":   Mark(refused, Permanent),
		"joined":   errors.Join(errors.New("a"), &os.PathError{Op: "w", Path: "p", Err: syscall.ENOSPC}),
		"status":   fmt.Errorf("x: %w", &httpError{code: 503}),
		"deadline": fmt.Errorf("x: %w", context.DeadlineExceeded),
		"network":  &url.Error{Op: "Post", URL: "http://h/", Err: io.EOF},
	} {
		allocs := testing.AllocsPerRun(100, func() { _ = c.Classify(err) })
		assert.Zero(t, allocs, name)
	}
}
