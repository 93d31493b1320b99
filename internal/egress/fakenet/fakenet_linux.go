package fakenet

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/internal/netns"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
	"github.com/airlockhq/airlock/internal/testenv"
)

// Names the fake resolver answers. Any other name is NXDOMAIN.
const (
	AllowedName    = "allowed.test"     // AllowedIP
	WWWAllowedName = "www.allowed.test" // AllowedIP
	DeniedName     = "denied.test"      // DeniedIP
	RebindName     = "rebind.test"      // RebindIP on the first A question, 127.0.0.1 after
	MetaName       = "meta.test"        // MetaIP
	LoopName       = "loop.test"        // 127.0.0.1
	PrivateName    = "private.test"     // PrivateIP
	MixedName      = "mixed.test"       // AllowedIP and PrivateIP: public and private at once
)

// Addresses inside the namespace. Each but DNSIP serves HTTP on PortHTTP
// and PortAltHTTP, HTTPS on PortHTTPS and echo on PortEcho.
const (
	AllowedIP = "203.0.113.10"
	DeniedIP  = "203.0.113.20"
	RebindIP  = "203.0.113.30"
	DNSIP     = "203.0.113.53"    // the resolver, UDP and TCP port 53
	MetaIP    = "169.254.169.254" // where cloud metadata services live
	PrivateIP = "10.99.0.1"
)

// Ports served on every fake host.
const (
	PortEcho    = 7
	PortHTTP    = 80
	PortHTTPS   = 443
	PortAltHTTP = 8080 // for "allowed name, port not allowed" cases
)

// target is one fake host: its address and the names that resolve to it
// (the first is the one it greets with).
type target struct {
	ip    string
	names []string
}

var targets = []target{
	{AllowedIP, []string{AllowedName, WWWAllowedName}},
	{DeniedIP, []string{DeniedName}},
	{RebindIP, []string{RebindName}},
	{MetaIP, []string{MetaName}},
	{PrivateIP, []string{PrivateName}},
}

// hostRoutes send every address above into the namespace. They are more
// specific than any default route, so nothing named here leaves the host.
var hostRoutes = []netip.Prefix{
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix(MetaIP + "/32"),
	netip.MustParsePrefix("10.99.0.0/16"),
}

// Net is a running fake internet.
type Net struct {
	DNS   string         // DNSIP:53, the fake resolver (UDP and TCP)
	CA    *x509.CertPool // trusts the HTTPS servers' certificates
	CAPEM []byte         // the CA certificate, PEM, to copy into a sandbox for curl --cacert
	NS    *os.File       // the namespace

	// HostIP is the host's end of the veth pair, the source address the
	// servers see for connections from the host; PeerIP is the
	// namespace's end. Both are in a /30 picked at Start from TEST-NET
	// ranges the host does not use.
	HostIP, PeerIP netip.Addr

	dns     *dnsServer
	servers *servers

	stop      func() error // undoes start
	closeOnce sync.Once
	closeErr  error
}

// Queries returns how many DNS questions the server has seen for name
// (lower-case, no trailing dot), so tests can prove a name was never
// looked up.
func (n *Net) Queries(name string) int { return n.dns.queries(name) }

// AllQueries returns every question name seen, in order.
func (n *Net) AllQueries() []string { return n.dns.all() }

// Hits returns how many connections (for UDP DNS, datagrams) the server on
// addr ("203.0.113.20:80") has received. It panics for an address nothing
// serves, so that a typo cannot make a "never reached" assertion pass.
func (n *Net) Hits(addr string) int {
	h, ok := n.servers.hits[addr]
	if !ok {
		panic(fmt.Sprintf("fakenet: nothing serves %q", addr))
	}
	return int(h.Load())
}

// Handle serves requests whose path starts with prefix ("/v1/") with h, on
// every fake host's HTTP and HTTPS ports, from now on: a test brings its
// own server (a model API, a package registry) to the fake internet. Those
// requests are h's to record; Seen does not list them.
func (n *Net) Handle(prefix string, h http.Handler) {
	n.servers.routesMu.Lock()
	defer n.servers.routesMu.Unlock()
	if n.servers.routes == nil {
		n.servers.routes = map[string]http.Handler{}
	}
	n.servers.routes[prefix] = h
}

// Seen returns every HTTP request the fake servers received, in order.
func (n *Net) Seen() []Seen {
	n.servers.seenMu.Lock()
	defer n.servers.seenMu.Unlock()
	return append([]Seen(nil), n.servers.seen...)
}

// Start builds the fake internet for t and registers its removal with
// t.Cleanup. It needs root; without it the test skips (fails in CI). It
// waits while another Net exists on the host.
func Start(t testing.TB) *Net {
	t.Helper()
	linuxtest.Require(t)
	if _, err := exec.LookPath("ip"); err != nil {
		// Same rule as linuxtest: a missing tool fails CI rather than
		// letting every egress test skip.
		testenv.Lacking(t, "the fake internet needs ip (apt-get install iproute2): "+err.Error())
	}
	n, err := newNet(t.Logf)
	if err != nil {
		t.Fatalf("start fake internet: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("stop fake internet: %v", err)
		}
	})
	return n
}

// New builds the fake internet outside a test (airlock bench): the caller
// must Close it. It needs root and ip(8), logs to stderr, and waits while
// another Net exists on the host.
func New() (*Net, error) {
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("the fake internet needs ip (apt-get install iproute2): %w", err)
	}
	return newNet(log.New(os.Stderr, "", 0).Printf)
}

// Close removes the namespace, the veth pair, the routes and the servers;
// calls after the first return nil.
func (n *Net) Close() error {
	n.closeOnce.Do(func() { n.closeErr = n.stop() })
	return n.closeErr
}

func newNet(logf func(string, ...any)) (*Net, error) {
	n, stop, err := start(logf)
	if err != nil {
		return nil, err
	}
	n.stop = stop
	return n, nil
}

// start builds a Net and returns the function that removes it. On error
// everything it did is already undone.
func start(logf func(string, ...any)) (_ *Net, stop func() error, err error) {
	var u undo
	defer func() {
		if err != nil {
			if uerr := u.run(); uerr != nil {
				err = errors.Join(err, fmt.Errorf("undo: %w", uerr))
			}
		}
	}()
	unlock, err := lock(logf)
	if err != nil {
		return nil, nil, err
	}
	u.add(unlock)
	if err := removeStale(logf); err != nil {
		return nil, nil, err
	}
	hostIP, peerIP, err := pickTransit()
	if err != nil {
		return nil, nil, err
	}
	ns, err := netns.New()
	if err != nil {
		return nil, nil, err
	}
	u.add(ns.Close)
	n := &Net{DNS: net.JoinHostPort(DNSIP, "53"), NS: ns, HostIP: hostIP, PeerIP: peerIP, dns: newDNSServer()}
	link, err := plumb(&u, ns, hostIP, peerIP)
	if err != nil {
		return nil, nil, err
	}
	logf("fakenet: %s (%s) routes %v into namespace end %s", link, hostIP, hostRoutes, peerIP)

	ca, err := newCA()
	if err != nil {
		return nil, nil, err
	}
	n.CA, n.CAPEM = ca.pool(), ca.pem
	n.servers = newServers(ns)
	u.add(n.servers.stop)
	for _, t := range targets {
		cert, err := ca.issue(net.ParseIP(t.ip), t.names)
		if err != nil {
			return nil, nil, err
		}
		if err := n.servers.serveTarget(t, cert); err != nil {
			return nil, nil, err
		}
	}
	if err := n.servers.serveDNS(n.dns); err != nil {
		return nil, nil, err
	}
	return n, u.run, nil
}

// undo is a stack of teardown steps, run last-first.
type undo []func() error

func (u *undo) add(f func() error) { *u = append(*u, f) }

func (u *undo) run() error {
	var errs []error
	for i := len(*u) - 1; i >= 0; i-- {
		if err := (*u)[i](); err != nil {
			errs = append(errs, err)
		}
	}
	*u = nil
	return errors.Join(errs...)
}
