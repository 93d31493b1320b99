package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/airlockhq/airlock/internal/api"
	"github.com/airlockhq/airlock/internal/e2b"
)

// trafficKeyPurpose names the key derived from the master key for E2B's
// traffic access tokens.
const trafficKeyPurpose = "e2b traffic access token"

// e2bDomainEnv is --e2b-domain's default.
const e2bDomainEnv = "AIRLOCK_E2B_DOMAIN"

// e2bDomainFlag registers serve's --e2b-domain into p.
func e2bDomainFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "e2b-domain", os.Getenv(e2bDomainEnv), "serve sandbox ports at E2B's host names, PORT-SANDBOXID.DOMAIN (sandbox.getHost(port) of an SDK whose E2B_DOMAIN is DOMAIN): point a wildcard DNS name (and a TLS proxy with a *.DOMAIN certificate) at this server; open to anyone only for sandboxes created through the E2B API with public traffic, see docs/API.md ($"+e2bDomainEnv+")")
}

// checkE2BDomain checks --e2b-domain and writes it back in the form host
// names are compared with: lower case, no trailing dot.
func checkE2BDomain(d *string) error {
	if *d == "" {
		return nil
	}
	if err := e2b.CheckDomain(*d); err != nil {
		return fmt.Errorf("--e2b-domain %w", err)
	}
	*d = strings.ToLower(strings.TrimSuffix(*d, "."))
	return nil
}

// newE2B is the E2B-compatible facade. Like MCP it calls the API over
// loopback to this daemon's own listener with the caller's credential, so
// tenants, quotas, egress policy and the audit log apply unchanged; port
// traffic goes to the API's port proxy, which decides who passes
// (ports.ServePort), with E2B's traffic tokens derived from trafficKey;
// create and connect name domain (--e2b-domain) as the sandbox's.
// Template builds it runs in the background end with done.
func newE2B(addr net.Addr, done context.Context, ports *api.Handler, domain string, trafficKey []byte) *e2b.Handler {
	eh := e2b.NewHandler(e2b.Options{APIURL: "http://" + loopbackAddr(addr), HTTPClient: loopbackClient(), Domain: domain, TrafficKey: trafficKey,
		Ports: func(w http.ResponseWriter, r *http.Request, pr e2b.PortRequest) {
			ports.ServePort(w, r, api.PortRequest(pr))
		}})
	context.AfterFunc(done, eh.Close)
	return eh
}

// withE2B serves the facade eh under /e2b beside the REST API (control
// plane at /e2b, envd at /e2b/envd).
func withE2B(eh *e2b.Handler, next http.Handler, done context.Context) http.Handler {
	return mount(next, func(path string) bool { return strings.HasPrefix(path, "/e2b/") }, http.StripPrefix("/e2b", eh), done)
}

// withE2BHosts serves every request whose Host is PORT-SANDBOXID.domain
// as that sandbox's port, through the facade eh, before anything else
// sees it: a sandbox's host name is the sandbox's alone, no path of the
// API, the console or MCP is served there (so a page a sandbox serves is
// never same-origin with them). Without a domain, hosts are not special.
func withE2BHosts(eh *e2b.Handler, next http.Handler, domain string, done context.Context) http.Handler {
	if domain == "" {
		return next
	}
	hosts := endWith(done, eh)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hr, ok := e2b.HostRequest(r, domain); ok {
			hosts.ServeHTTP(w, hr)
			return
		}
		next.ServeHTTP(w, r)
	})
}
