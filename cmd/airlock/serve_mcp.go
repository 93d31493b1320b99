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
// audit log apply to them unchanged. stateKey signs what a call hands a
// client to bring back (mcpStateKeyPurpose).
func withMCP(api http.Handler, addr net.Addr, stateKey []byte, done context.Context) http.Handler {
	h := mcp.NewHTTPHandler(mcp.HTTPOptions{APIURL: "http://" + loopbackAddr(addr), HTTPClient: loopbackClient(), StateKey: stateKey})
	return mount(api, func(path string) bool { return path == "/mcp" }, h, done)
}

// mcpStateKeyPurpose names the key derived from the master key that signs
// MCP's requestState: the same on every daemon that shares the master key,
// so a 2026-07-28 client's retry may reach any of them.
const mcpStateKeyPurpose = "mcp request state"

// loopbackClient is the HTTP client a facade (MCP, E2B) calls this
// daemon's own API with: never through a proxy.
func loopbackClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	return &http.Client{Transport: tr}
}

// mount serves the requests whose path match takes with h, the rest with
// next. Not a ServeMux: it would clean and redirect paths the API answers
// itself (its bad-input behaviour must not change). h's requests end when
// done ends (shutdown), or a stream that never goes idle would hold
// Shutdown up.
func mount(next http.Handler, match func(path string) bool, h http.Handler, done context.Context) http.Handler {
	h = endWith(done, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !match(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// endWith is h whose requests end when done ends.
func endWith(done context.Context, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
