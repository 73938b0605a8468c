package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/prom"
)

// newServeCmd builds `ringwal serve DIR`.
func newServeCmd() *cobra.Command {
	var addr, token string
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "serve DIR",
		Short: "Serve a stopped engine's directory: web console, JSON admin API, Prometheus metrics",
		Long: `Serve opens the engine over DIR, a directory no process holds (creating it if
needed), and serves over HTTP:

  /          the web console (admin.NewHandler): overview, keys and
             breakers, dead letters to filter, review, redrive and purge
  /api/      the JSON admin API (admin.NewHandler): /api/stats,
             /api/dead-letters, ... (see the admin package's doc); the
             operator commands use it with --addr
  /metrics   the engine's Prometheus metrics (ringwal_*, prom.NewCollector),
             plus the Go runtime and process collectors, from a registry of
             its own

Serve is for a directory whose application is stopped. A running
application holds its directory's lock; to operate it, mount
admin.NewHandler in the application and point the console, or inspect and
dlq with --addr, at it.

It listens on 127.0.0.1 by default. Every request needs a token: the one
given with --token (or $RINGWAL_TOKEN) or, without one, a random token
made for this run, printed once in a sign-in URL
(http://127.0.0.1:9464/?token=...: opening it signs the browser in, then
the token leaves the address bar). The console asks for the token once
(or takes it from that URL); the API and /metrics take "Authorization:
Bearer TOKEN", the operator commands --token or $RINGWAL_TOKEN. A
non-loopback --addr is refused without a token of at least 16 characters
(openssl rand -hex 16 makes one). Wrong tokens are slowed down per client
address. The engine consumes nothing by itself: messages
stay where they are unless redriven, requeued or purged. SIGINT or SIGTERM
stops the server (requests in progress get --grace to finish) and closes
the engine cleanly.

The first line printed is "listening on http://ADDR", with the port the
kernel chose when --addr ends in :0; with a token made for the run, the
next is "sign in: URL".`,
		Example: "  ringwal serve /tmp/ringwal-demo/live        # then open http://127.0.0.1:9464/\n" +
			"  ringwal serve --addr 127.0.0.1:0 DIR\n" +
			"  RINGWAL_TOKEN=$(openssl rand -hex 16) ringwal serve --addr 0.0.0.0:9464 DIR\n" +
			"  curl -s 127.0.0.1:9464/metrics | grep ringwal_dead_letters",
		Args: cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			token = strings.TrimSpace(cmp.Or(token, os.Getenv(envToken)))
			made := false
			switch {
			case token == "" && !loopback(addr):
				return usagef("--addr %s is not a loopback address: give a --token (or $%s) of at least %d characters to serve beyond this machine", addr, envToken, minToken)
			case len(token) < minToken && !loopback(addr):
				return usagef("--addr %s is not a loopback address: the token must be at least %d characters long (it has %d; openssl rand -hex 16 makes one)", addr, minToken, len(token))
			case token == "":
				token, made = randomToken(), true
			}
			return serve(cmd.Context(), cmd, args[0], addr, token, made, grace)
		}),
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:9464", "listen address (host:port; port 0 picks a free one); beyond loopback only with a token")
	cmd.Flags().StringVar(&token, "token", "", "require this bearer token for everything (default $"+envToken+"; none: a random one, printed in a sign-in URL)")
	cmd.Flags().DurationVar(&grace, "grace", 5*time.Second, "how long requests in progress may finish after a stop signal")
	return cmd
}

// minToken is the shortest token serve takes for a listener beyond
// loopback: 16 characters, 64 bits or more from a hex or base64 source.
const minToken = 16

// randomToken returns a token of 192 random bits, hex. (crypto/rand.Read
// never fails on a supported platform: it panics rather than return
// short.)
func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// The HTTP server's limits. No answer streams or long-polls (the console
// refreshes with short requests), so a generous bound on reading and on
// writing a whole exchange fits every route; an idle keep-alive
// connection is closed after a while rather than held forever.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = time.Minute
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
)

// newHTTPServer returns serve's server over h, with its timeouts set.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes}
}

// serve runs the HTTP server until ctx ends (SIGINT or SIGTERM), then shuts
// it down and closes the engine. made says the token was made for this
// run: the sign-in URL that carries it is printed.
func serve(ctx context.Context, cmd *cobra.Command, dir, addr, token string, made bool, grace time.Duration) (err error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return fmt.Errorf("registering the Go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return fmt.Errorf("registering the process collector: %w", err)
	}
	e, err := ringwal.Open(dir, ringwal.Options{})
	if errors.Is(err, ringwal.ErrLocked) {
		return fmt.Errorf("%s is in use by another engine: serve is for a stopped engine's directory; a running application serves its own console and API when it mounts admin.NewHandler (then use inspect and dlq with --addr): %w", dir, err)
	}
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer closeEngine(e, &err)
	if err := reg.Register(prom.NewCollector(e)); err != nil {
		return fmt.Errorf("registering the engine's collector: %w", err)
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	ah := admin.NewHandler(e, admin.Options{Token: token})
	if err := registerAuthMetrics(reg, ah); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", admin.Protect(ah, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	mux.Handle("/", ah)
	srv := newHTTPServer(mux)

	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "listening on http://%s\n", ln.Addr())
	if made {
		fmt.Fprintf(out, "sign in: http://%s/?token=%s\n", ln.Addr(), token)
		fmt.Fprintln(out, "(a token made for this run: the API and /metrics take it as \"Authorization: Bearer TOKEN\", the operator commands as --token or $"+envToken+")")
	}
	fmt.Fprintf(out, "serving %s: console at /, admin API at /api/, metrics at /metrics (token required; stop with Ctrl-C)\n", safe(dir))

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "stopping")
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stopping the server: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

// registerAuthMetrics exports the admin handler's refusals (admin.AuthStats)
// as counters on reg.
func registerAuthMetrics(reg *prometheus.Registry, ah http.Handler) error {
	read := func(f func(admin.AuthStats) uint64) func() float64 {
		return func() float64 {
			st, _ := admin.ReadAuthStats(ah)
			return float64(f(st))
		}
	}
	for _, c := range []struct {
		name, help string
		f          func(admin.AuthStats) uint64
	}{
		{"ringwal_admin_auth_failures_total", "Wrong tokens sent to the admin API and console (bearer headers and sign-ins).",
			func(s admin.AuthStats) uint64 { return s.Failures }},
		{"ringwal_admin_auth_throttled_total", "Requests answered 429 without their token checked: their address sent a wrong one a moment before.",
			func(s admin.AuthStats) uint64 { return s.Throttled }},
		{"ringwal_admin_hosts_refused_total", "Requests refused for their Host header (DNS rebinding defence).",
			func(s admin.AuthStats) uint64 { return s.HostsRefused }},
	} {
		if err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help}, read(c.f))); err != nil {
			return fmt.Errorf("registering %s: %w", c.name, err)
		}
	}
	return nil
}

// loopback reports whether the listen address addr (host:port) binds a
// loopback interface only: 127.0.0.0/8, ::1 or localhost. An empty host
// (":9464") binds every interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
