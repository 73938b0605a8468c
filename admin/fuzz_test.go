package admin_test

import (
	"bytes"
	"context"
	"errors"
	"net"
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

// FuzzAdminQueues fuzzes the queue routes: the {queue} path segment (any
// bytes, escaped), the action, the pause body, and the queue parameter of
// the message and dead-letter listings. Never a panic, never a 5xx, and
// nothing declared by a request: the engine's queues stay the fixture's.
func FuzzAdminQueues(f *testing.F) {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	for _, name := range []string{"emails", "a/b", "gone"} {
		if err := e.DeclareQueue(name, ringwal.QueueOptions{}); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := e.Queue("emails").Enqueue(context.Background(), ringwal.Message{Payload: []byte("x")}); err != nil {
		f.Fatal(err)
	}
	h := admin.NewHandler(e, admin.Options{})
	for _, s := range []struct {
		queue, action string
		body          []byte
	}{
		{"emails", "pause", []byte(`{"until":"1h"}`)}, {"_default", "resume", nil}, {"a/b", "", nil},
		{"emails", "delete", nil}, {"gone", "delete", nil}, {"_default", "delete", nil}, {"", "pause", nil},
		{"..", "pause", []byte(`{"until":"2000-01-01T00:00:00Z"}`)}, {"typo", "pause", []byte(`{"until":`)},
		{"_x", "resume", nil}, {"\x00", "list", nil}, {"emails", "messages", nil}, {"_default", "dead-letters", nil},
	} {
		f.Add(s.queue, s.action, s.body)
	}
	want := len(e.Queues()) // "gone" may go
	f.Fuzz(func(t *testing.T, queue, action string, body []byte) {
		p := "/api/queues/" + admin.QueuePath(queue)
		switch action {
		case "":
			serve(t, h, http.MethodGet, p, nil)
		case "list":
			serve(t, h, http.MethodGet, "/api/queues", nil)
		case "messages", "dead-letters":
			serve(t, h, http.MethodGet, "/api/"+action+"?"+url.Values{"queue": {queue}}.Encode(), nil)
		default:
			serve(t, h, http.MethodPost, p+"/"+url.PathEscape(action), body)
		}
		if n := len(e.Queues()); n > want {
			t.Fatalf("queue %q %s: %d queues, was %d: a request declared one", queue, action, n, want)
		}
	})
}

// FuzzAdminHostAndSignIn fuzzes what the defences around the token read:
// the Host header, the target (any path, a sign-in URL's ?token= among
// its parameters) and the Authorization header, against a handler
// without a token and one with. Never a 5xx; without a token a Host that
// is not loopback is refused; with one, nothing but the right token ever
// sets a session or opens a page.
func FuzzAdminHostAndSignIn(f *testing.F) {
	const token = "s3cret-s3cret-s3cret"
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	open := admin.NewHandler(e, admin.Options{AllowedHosts: []string{"ops.internal"}})
	guarded := admin.NewHandler(e, admin.Options{Token: token})
	for _, s := range [][3]string{
		{"127.0.0.1:9464", "/?token=" + token, ""},
		{"localhost", "/dead-letters?category=poison&token=" + token, ""},
		{"evil.example", "/api/dead-letters", ""},
		{"evil.example:9464", "/?token=wrong", "Bearer " + token},
		{"[::1]:1", "/login?token=x&next=//evil", "Bearer"},
		{"ops.internal:8080", "/keys?token=&token=" + token, ""},
		{"127.0.0.1.nip.io", "//evil.example/?token=" + token, ""},
		{"", "/static/console.css?token=a", "Basic x"},
		{"LOCALHOST.", "/../api/stats?token=%zz", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, host, target, authz string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || strings.ContainsAny(target, "# \r\n") || strings.ContainsAny(host+authz, "\r\n") {
			return
		}
		for _, h := range []http.Handler{open, guarded} {
			req := httptest.NewRequest(http.MethodGet, "http://localhost/", nil)
			req.URL, req.RequestURI, req.Host = u, target, host
			req.RemoteAddr = "192.0.2.1:1"
			if authz != "" {
				req.Header.Set("Authorization", authz)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code >= 500 {
				t.Fatalf("Host %q %s: status %d: %s", host, target, w.Code, w.Body.String())
			}
			if h == open {
				hn := strings.ToLower(strings.TrimSuffix(hostName(host), "."))
				loop := hn == "localhost" || strings.HasSuffix(hn, ".localhost") || hn == "ops.internal" || isLoopbackIP(hn)
				if !loop && w.Code != http.StatusForbidden {
					t.Fatalf("Host %q %s: status %d, want 403", host, target, w.Code)
				}
				continue
			}
			rightToken := u.Query().Get("token") == token || strings.TrimSpace(u.Query().Get("token")) == token
			if strings.Contains(w.Header().Get("Set-Cookie"), "ringwal_session=") && !rightToken {
				t.Fatalf("%s: a session without the token", target)
			}
			rightBearer := strings.TrimSpace(strings.TrimPrefix(authz, "Bearer ")) == token && strings.HasPrefix(authz, "Bearer ")
			if w.Code == http.StatusOK && !rightBearer && !strings.HasPrefix(u.Path, "/static/") && u.Path != "/login" {
				t.Fatalf("%s (Authorization %q): 200 without the token", target, authz)
			}
		}
	})
}

// hostName is the host of a Host header, without port or brackets.
func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.Trim(h, "[]")
	}
	return strings.Trim(hostport, "[]")
}

func isLoopbackIP(s string) bool {
	ip := net.ParseIP(s)
	return ip != nil && ip.IsLoopback()
}
