package admin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/admin"
)

// A handler without a token answers only loopback names and those in
// AllowedHosts: a web page that rebinds its own name to the handler's
// address is refused.
func ExampleOptions_allowedHosts() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	h := admin.NewHandler(e, admin.Options{AllowedHosts: []string{"ringwal-admin.internal"}})
	for _, host := range []string{"127.0.0.1:9464", "ringwal-admin.internal:8080", "evil.example"} {
		req := httptest.NewRequest("GET", "/api/stats", nil)
		req.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		fmt.Println(host, w.Code)
	}
	st, _ := admin.ReadAuthStats(h)
	fmt.Println("hosts refused:", st.HostsRefused)
	// Output:
	// 127.0.0.1:9464 200
	// ringwal-admin.internal:8080 200
	// evil.example 403
	// hosts refused: 1
}

// Protect puts an endpoint beside the admin handler, here a metrics
// page, behind the same token and the same throttle on wrong tokens.
func ExampleProtect() {
	e, err := ringwal.Open("", ringwal.Options{})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ah := admin.NewHandler(e, admin.Options{Token: "0123456789abcdef0123"})
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ringwal_up 1") })
	mux := http.NewServeMux()
	mux.Handle("/metrics", admin.Protect(ah, metrics))
	mux.Handle("/", ah)
	for _, tok := range []string{"", "guess", "0123456789abcdef0123"} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Host = "127.0.0.1:9464"
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		fmt.Printf("%q %d\n", tok, w.Code)
	}
	st, _ := admin.ReadAuthStats(ah)
	fmt.Println("failures:", st.Failures, "throttled:", st.Throttled)
	// Output:
	// "" 401
	// "guess" 401
	// "0123456789abcdef0123" 429
	// failures: 1 throttled: 1
}
