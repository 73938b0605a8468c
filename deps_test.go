package ringwal_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDepsNoHTTPNoPrometheus: the root package imports neither net/http
// nor client_golang nor OpenTelemetry (DESIGN.md's package table); the
// admin API, the Prometheus collector and tracing live in admin/, prom/
// and ringwalotel/.
func TestDepsNoHTTPNoPrometheus(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps .: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net/http" || strings.HasPrefix(dep, "net/http/") || strings.HasPrefix(dep, "github.com/prometheus/") ||
			strings.HasPrefix(dep, "go.opentelemetry.io/") {
			t.Errorf("the root package depends on %s", dep)
		}
	}
}
