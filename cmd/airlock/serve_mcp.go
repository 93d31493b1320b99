package main

import (
	"context"
	"net"
	"net/http"
	"strconv"

	"github.com/airlockhq/airlock/internal/mcp"
)

// withMCP serves MCP at /mcp beside the REST API (which keeps its own route
// table). The MCP tools call the API like any client, over loopback to this
// daemon's own listener, with the caller's key: tenants, quotas and the
// audit log apply to them unchanged. Requests at /mcp end when done ends
// (shutdown), or an idle session's stream would hold Shutdown up.
func withMCP(api http.Handler, addr net.Addr, done context.Context) http.Handler {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // our own listener, never through a proxy
	h := mcp.NewHTTPHandler(mcp.HTTPOptions{APIURL: "http://" + loopbackAddr(addr), HTTPClient: &http.Client{Transport: tr}})
	// Not a ServeMux: it would clean and redirect paths the API answers
	// itself (its bad-input behaviour must not change).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			api.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(done, cancel)
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// loopbackAddr is how this host reaches a listener: through loopback when
// it listens on every address.
func loopbackAddr(addr net.Addr) string {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	ip := ta.IP
	switch {
	case ip == nil || ip.IsUnspecified() && ip.To4() != nil:
		ip = net.IPv4(127, 0, 0, 1)
	case ip.IsUnspecified():
		ip = net.IPv6loopback
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(ta.Port))
}
