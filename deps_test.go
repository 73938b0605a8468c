package ringwal_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDepsNoHTTPNoPrometheus: the root package imports neither net/http
// nor client_golang nor OpenTelemetry nor etcd (DESIGN.md's package
// table); the admin API, the Prometheus collector, tracing and fleets
// live in admin/, prom/, ringwalotel/ and fleet/.
func TestDepsNoHTTPNoPrometheus(t *testing.T) {
	goBin := goTool(t)
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps .: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net/http" || strings.HasPrefix(dep, "net/http/") || strings.HasPrefix(dep, "github.com/prometheus/") ||
			strings.HasPrefix(dep, "go.opentelemetry.io/") || strings.HasPrefix(dep, "go.etcd.io/") ||
			strings.HasPrefix(dep, "github.com/ringwal/ringwal/fleet") {
			t.Errorf("the root package depends on %s", dep)
		}
	}
}

// TestDepsAUserModuleSelectsOnlyTheEnginesModules: a module that requires
// only the engine takes none of the integrations' or the tool's modules
// into its version selection (`go list -m all`): they are modules of their
// own (prom/, ringwalotel/, cmd/ringwal/), so the engine's go.mod lists
// only what the engine and its tests import.
func TestDepsAUserModuleSelectsOnlyTheEnginesModules(t *testing.T) {
	goBin := goTool(t)
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	user := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(user, "go.mod"), []byte("module example.com/user\n\ngo 1.26.0\n\n"+
		"require github.com/ringwal/ringwal v0.0.0\n\nreplace github.com/ringwal/ringwal => "+root+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(user, "main.go"), []byte(
		"package main\n\nimport \"github.com/ringwal/ringwal\"\n\nfunc main() { _, _ = ringwal.Open(\"\", ringwal.Options{}) }\n"), 0o644))
	cmd := exec.Command(goBin, "list", "-m", "all")
	cmd.Dir = user
	// The module cache already holds every go.mod the engine's graph
	// needs (the engine was built from it), so the listing needs no network.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go list -m all in a user's module:\n%s", out)
	mods := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Contains(t, mods, "github.com/ringwal/ringwal v0.0.0 => "+root)
	for _, m := range mods {
		for _, banned := range []string{"go.opentelemetry.io/", "github.com/prometheus/", "go.etcd.io/", "github.com/spf13/cobra",
			"github.com/chromedp/", "github.com/creack/pty", "github.com/vbauerster/mpb"} {
			if strings.HasPrefix(m, banned) {
				t.Errorf("a module requiring only the engine selects %s", m)
			}
		}
	}
}

func goTool(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	return goBin
}
