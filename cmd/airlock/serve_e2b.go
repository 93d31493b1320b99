package main

import (
	"context"
	"net"
	"net/http"
	"strings"

	"github.com/airlockhq/airlock/internal/e2b"
)

// withE2B serves the E2B-compatible facade under /e2b beside the REST API
// (control plane at /e2b, envd at /e2b/envd). Like MCP it calls the API
// over loopback to this daemon's own listener with the caller's credential,
// so tenants, quotas, egress policy and the audit log apply unchanged.
func withE2B(next http.Handler, addr net.Addr, done context.Context) http.Handler {
	eh := e2b.NewHandler(e2b.Options{APIURL: "http://" + loopbackAddr(addr), HTTPClient: loopbackClient()})
	// Template builds it runs in the background end with the server.
	context.AfterFunc(done, eh.Close)
	h := http.StripPrefix("/e2b", eh)
	return mount(next, func(path string) bool { return strings.HasPrefix(path, "/e2b/") }, h, done)
}
