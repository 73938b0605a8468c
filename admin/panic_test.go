package admin

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A panic in an endpoint is a JSON 500 to the client; its stack goes to
// the log only.
func TestPanicIsJSON500(t *testing.T) {
	var logs bytes.Buffer
	h := NewHandler(nil, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}).(*handler)
	h.mux.HandleFunc("GET /api/boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "http://localhost/api/boom", nil))
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d", w.Code)
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body["error"] != "internal error" {
		t.Errorf("body %q (%v)", w.Body.String(), err)
	}
	if s := w.Body.String(); strings.Contains(s, "goroutine") || strings.Contains(s, "boom") {
		t.Errorf("the answer leaks the panic: %q", s)
	}
	if !strings.Contains(logs.String(), "goroutine") || !strings.Contains(logs.String(), "boom") {
		t.Errorf("the log lacks the panic and its stack: %q", logs.String())
	}
}

// A panic on a console page is an HTML 500 page, without the stack.
func TestPanicIsHTML500(t *testing.T) {
	var logs bytes.Buffer
	h := NewHandler(nil, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}).(*handler)
	h.con.mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "http://localhost/boom", nil))
	if w.Code != http.StatusInternalServerError || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("status %d, %s", w.Code, w.Header().Get("Content-Type"))
	}
	if s := w.Body.String(); strings.Contains(s, "goroutine") || strings.Contains(s, "boom") || !strings.Contains(s, "internal error") {
		t.Errorf("the page leaks the panic or says nothing: %q", s)
	}
	if !strings.Contains(logs.String(), "goroutine") {
		t.Errorf("the log lacks the stack: %q", logs.String())
	}
}
