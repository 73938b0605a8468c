package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
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
	var addr string
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "serve DIR",
		Short: "Serve a data directory's Prometheus metrics and JSON admin API",
		Long: `Serve opens the engine over DIR (creating the directory if needed) and serves
over HTTP:

  /metrics   the engine's Prometheus metrics (ringwal_*, prom.NewCollector),
             plus the Go runtime and process collectors, from a registry of
             its own
  /api/      the JSON admin API (admin.NewHandler): /api/stats,
             /api/dead-letters, ... (see the admin package's doc)

It holds the directory's lock while it runs, so the offline commands
(inspect, dlq) refuse it then: use the admin API instead. The engine
consumes nothing by itself; messages stay where they are unless redriven,
requeued or purged through the API. SIGINT or SIGTERM stops the server
(requests in progress get --grace to finish) and closes the engine cleanly.

The first line printed is "listening on http://ADDR", with the port the
kernel chose when --addr ends in :0.`,
		Example: "  ringwal serve /tmp/ringwal-demo/live\n  ringwal serve --addr 127.0.0.1:0 DIR\n  curl -s 127.0.0.1:9464/metrics | grep ringwal_dead_letters",
		Args:    cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return serve(cmd.Context(), cmd, args[0], addr, grace)
		}),
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:9464", "listen address (host:port; port 0 picks a free one)")
	cmd.Flags().DurationVar(&grace, "grace", 5*time.Second, "how long requests in progress may finish after a stop signal")
	return cmd
}

// serve runs the HTTP server until ctx ends (SIGINT or SIGTERM), then shuts
// it down and closes the engine.
func serve(ctx context.Context, cmd *cobra.Command, dir, addr string, grace time.Duration) (err error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return fmt.Errorf("registering the Go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return fmt.Errorf("registering the process collector: %w", err)
	}
	e, err := ringwal.Open(dir, ringwal.Options{})
	if errors.Is(err, ringwal.ErrLocked) {
		return fmt.Errorf("%s is in use by another engine: %w", dir, err)
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
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.Handle("/api/", admin.NewHandler(e, admin.Options{}))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "ringwal serving %s\n\n/metrics  Prometheus metrics\n/api/     JSON admin API\n", dir)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "listening on http://%s\n", ln.Addr())
	fmt.Fprintf(out, "serving %s: metrics at /metrics, admin API at /api/ (stop with Ctrl-C)\n", dir)

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
