package admin

// The Host check, the defence against DNS rebinding. A web page on
// evil.example can make the operator's browser resolve evil.example to
// 127.0.0.1 and then talk to a handler listening there: the browser sends
// "Host: evil.example" and, to the page, the answers are same-origin. The
// Origin check cannot tell (Origin and Host agree), and neither can the
// CSRF token (the page reads it from a form like the console does). What
// gives the rebinding away is the Host: a handler without a token answers
// only the names it knows it is reached by.

import (
	"net"
	"net/http"
	"strings"
)

// hostPolicy decides which Host headers a handler answers.
type hostPolicy struct {
	enforce bool
	any     bool                // AllowedHosts holds "*"
	names   map[string]struct{} // AllowedHosts, lower case, without ports
}

// newHostPolicy builds the policy of o: enforced when o has no token or
// names AllowedHosts.
func newHostPolicy(o Options) hostPolicy {
	p := hostPolicy{enforce: o.Token == "" || len(o.AllowedHosts) > 0, names: map[string]struct{}{}}
	for _, h := range o.AllowedHosts {
		if h = strings.TrimSpace(h); h == "*" {
			p.any = true
			continue
		}
		p.names[hostOnly(h)] = struct{}{}
	}
	return p
}

// allows reports whether a request with Host hostport is answered.
func (p hostPolicy) allows(hostport string) bool {
	if !p.enforce || p.any {
		return true
	}
	host := hostOnly(hostport)
	if host == "" {
		return false
	}
	if loopbackHost(host) {
		return true
	}
	_, ok := p.names[host]
	return ok
}

// hostOnly returns hostport's host, lower case, without brackets or port.
func hostOnly(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

// loopbackHost reports whether host (lower case, no port) names this
// machine's loopback interface: localhost and its subdomains (RFC 6761:
// browsers resolve them to loopback themselves, so no DNS answer can
// point them elsewhere), 127.0.0.0/8 and ::1.
func loopbackHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostRefusal is the text of the answer to a request whose Host is not
// allowed: what happened and what to do about it.
func hostRefusal(hostport string) string {
	return "Host " + quoteHost(hostport) + " is not allowed: without an admin token this handler answers only " +
		"loopback names (localhost, 127.0.0.1, [::1]) and the names in admin.Options.AllowedHosts, so that a web page " +
		"cannot reach it by DNS rebinding. Open it at http://localhost:PORT/ or http://127.0.0.1:PORT/, or set a token " +
		"(ringwal serve creates one) or AllowedHosts."
}

// quoteHost returns h quoted for an error text, cut to a sane length.
func quoteHost(h string) string {
	const max = 100
	if len(h) > max {
		h = h[:max] + "..."
	}
	return `"` + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' || r == '<' || r == '>' || r == '&' {
			return '?'
		}
		return r
	}, h) + `"`
}

// checkHost answers a request whose Host h does not allow (403, JSON on
// the API, an HTML page on the console) and returns false; true lets it
// through.
func (h *handler) checkHost(w http.ResponseWriter, r *http.Request, api bool) bool {
	if h.hosts.allows(r.Host) {
		return true
	}
	h.refusedHost(r)
	if api {
		replyError(w, http.StatusForbidden, hostRefusal(r.Host))
	} else {
		h.errorPage(w, r, http.StatusForbidden, hostRefusal(r.Host))
	}
	return false
}

// refusedHost counts and logs a request refused for its Host.
func (h *handler) refusedHost(r *http.Request) {
	h.auth.hostsRefused.Add(1)
	h.opts.Logger.Info("ringwal: admin: a request for a host not allowed", "host", r.Host, "remote", r.RemoteAddr)
}
