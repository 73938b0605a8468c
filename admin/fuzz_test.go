package admin_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
	"github.com/ringwal/ringwal/classify"
)

// fuzzEngine is a memory-only engine holding a few dead letters.
func fuzzEngine(f *testing.F) http.Handler {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	for i := 0; i < 4; i++ {
		if _, err := e.Enqueue(context.Background(), ringwal.Message{Key: "k", Payload: []byte("x")}); err != nil {
			f.Fatal(err)
		}
		d, err := e.Dequeue(context.Background())
		if err != nil {
			f.Fatal(err)
		}
		if err := e.Nack(d.Lease, classify.Mark(errors.New("boom"), classify.Permanent)); err != nil {
			f.Fatal(err)
		}
	}
	return admin.NewHandler(e, admin.Options{})
}

// serve runs one request through h and fails on a 5xx (the handler turns
// a panic into a 500, so this catches panics too).
func serve(t *testing.T, h http.Handler, method, target string, body []byte) {
	t.Helper()
	req := httptest.NewRequest(method, "http://localhost/", bytes.NewReader(body))
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return // not a request a client could send
	}
	req.URL = u
	req.RequestURI = target
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code >= 500 {
		t.Fatalf("%s %s body %q: status %d: %s", method, target, body, w.Code, w.Body.String())
	}
}

// FuzzAdminReview fuzzes POST /api/dead-letters/{id}/review: the path ID
// and the JSON body. Never a panic, never a 5xx.
func FuzzAdminReview(f *testing.F) {
	h := fuzzEngine(f)
	f.Add("1", []byte(`{"note":"looked at it"}`))
	f.Add("2", []byte(``))
	f.Add("99", []byte(`{"note":`))
	f.Add("x", []byte(`[]`))
	f.Add("18446744073709551615", []byte(`{"note":"\u0000"}`))
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		serve(t, h, http.MethodPost, "/api/dead-letters/"+url.PathEscape(id)+"/review", body)
	})
}

// FuzzAdminPurge fuzzes POST /api/dead-letters/purge bodies.
func FuzzAdminPurge(f *testing.F) {
	h := fuzzEngine(f)
	for _, s := range []string{
		`{"all":true}`, `{"category":"permanent"}`, `{"category":["permanent","poison"],"key":"k"}`,
		`{"since":"2024-01-01T00:00:00Z","until":"1h"}`, `{"reviewed":false,"limit":2,"after":"1"}`,
		`{}`, ``, `{"limit":-1}`, `{"category":"nope"}`, `{"after":"-3"}`, `null`, `{"all":true,"key":"k"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		serve(t, h, http.MethodPost, "/api/dead-letters/purge", body)
	})
}

// FuzzAdminDeadLetterQuery fuzzes the query parameters of GET
// /api/dead-letters.
func FuzzAdminDeadLetterQuery(f *testing.F) {
	h := fuzzEngine(f)
	for _, s := range []string{
		"", "category=permanent", "category=permanent,poison&key=k", "since=2024-01-01T00:00:00Z&until=5m",
		"reviewed=true", "reviewed=maybe", "limit=0", "limit=100000", "after=abc", "after=1&limit=1",
		"since=-1h", "category=", "%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		if strings.ContainsAny(query, "# \r\n") {
			return
		}
		serve(t, h, http.MethodGet, "/api/dead-letters?"+query, nil)
	})
}
