package main

import (
	"cmp"
	"context"
	"crypto/subtle"
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

It listens on 127.0.0.1 by default. With --token (or $RINGWAL_TOKEN) every
request needs the token: the console asks for it once, the API and
/metrics take "Authorization: Bearer TOKEN". A non-loopback --addr is
refused without a token. The engine consumes nothing by itself: messages
stay where they are unless redriven, requeued or purged. SIGINT or SIGTERM
stops the server (requests in progress get --grace to finish) and closes
the engine cleanly.

The first line printed is "listening on http://ADDR", with the port the
kernel chose when --addr ends in :0.`,
		Example: "  ringwal serve /tmp/ringwal-demo/live        # then open http://127.0.0.1:9464/\n" +
			"  ringwal serve --addr 127.0.0.1:0 DIR\n" +
			"  RINGWAL_TOKEN=$(openssl rand -hex 16) ringwal serve --addr 0.0.0.0:9464 DIR\n" +
			"  curl -s 127.0.0.1:9464/metrics | grep ringwal_dead_letters",
		Args: cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			token = cmp.Or(token, os.Getenv(envToken))
			if token == "" && !loopback(addr) {
				return usagef("--addr %s is not a loopback address: give a --token (or $%s) to serve beyond this machine", addr, envToken)
			}
			return serve(cmd.Context(), cmd, args[0], addr, token, grace)
		}),
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:9464", "listen address (host:port; port 0 picks a free one); beyond loopback only with a token")
	cmd.Flags().StringVar(&token, "token", "", "require this bearer token for everything (default $"+envToken+")")
	cmd.Flags().DurationVar(&grace, "grace", 5*time.Second, "how long requests in progress may finish after a stop signal")
	return cmd
}

// serve runs the HTTP server until ctx ends (SIGINT or SIGTERM), then shuts
// it down and closes the engine.
func serve(ctx context.Context, cmd *cobra.Command, dir, addr, token string, grace time.Duration) (err error) {
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
	mux := http.NewServeMux()
	mux.Handle("/metrics", bearer(token, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	mux.Handle("/", admin.NewHandler(e, admin.Options{Token: token}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "listening on http://%s\n", ln.Addr())
	auth := "no token: anyone who can reach it can act"
	if token != "" {
		auth = "token required"
	}
	fmt.Fprintf(out, "serving %s: console at /, admin API at /api/, metrics at /metrics (%s; stop with Ctrl-C)\n", dir, auth)

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

// bearer requires "Authorization: Bearer token" of requests to h when
// token is set.
func bearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ringwal metrics"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
