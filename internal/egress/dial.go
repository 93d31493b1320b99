package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// hostAddrs caches the host's own interface addresses, which the proxy
// never dials unless listed: a sandbox must not reach the daemon's or
// other host services through a public-looking interface address.
type hostAddrs struct {
	mu      sync.Mutex
	addrs   map[netip.Addr]bool
	fetched time.Time
}

const hostAddrsTTL = 5 * time.Second

func (h *hostAddrs) has(ip netip.Addr) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.addrs == nil || time.Since(h.fetched) > hostAddrsTTL {
		m := map[netip.Addr]bool{}
		if as, err := net.InterfaceAddrs(); err == nil {
			for _, a := range as {
				if p, err := netip.ParsePrefix(a.String()); err == nil {
					m[p.Addr().Unmap()] = true
				}
			}
		}
		h.addrs, h.fetched = m, time.Now()
	}
	return h.addrs[ip.Unmap()]
}

// deniedAddrError says why the proxy would not dial an address.
type deniedAddrError struct {
	host string
	addr netip.Addr
	why  string
	// operatorOnly: no rule of the sandbox can open it; only the
	// operator can (or, for a localhost name, nobody).
	operatorOnly bool
	rule         string // the deny entry that refused it, if one did
	note         string // said after the rest, if set
}

func (e *deniedAddrError) Error() string {
	var s string
	switch {
	case !e.addr.IsValid():
		s = fmt.Sprintf("%s is a %s name", e.host, e.why)
	case e.host != "" && e.host != e.addr.String():
		s = fmt.Sprintf("%s resolves to %s address %s", e.host, e.why, e.addr)
	default:
		s = fmt.Sprintf("%s is a %s address", e.addr, e.why)
	}
	if e.note != "" {
		s += "; " + e.note
	}
	return s
}

// checkAddr refuses an address in a forbidden range or of the host itself,
// unless the operator opened it and an IP/CIDR allow rule lists it.
func (p *Proxy) checkAddr(r *Rules, host string, ip netip.Addr, port int) error {
	ip = ip.Unmap()
	if ok, why, ruleOpens := p.reach(r, ip, port); !ok {
		return &deniedAddrError{host: host, addr: ip, why: why, operatorOnly: !ruleOpens}
	}
	return nil
}

// dial connects to host:port for a sandbox under r, which allowed it with
// d. A name is resolved here, once, never by the sandbox; each address is
// checked on the socket actually being connected (Dialer.Control), so a
// DNS answer that changes between lookup and connect cannot smuggle in a
// forbidden address. A name only a whole-internet entry admitted
// (d.PublicOnly) is refused unless every address it resolved to is
// public (admitPublic).
func (p *Proxy) dial(ctx context.Context, r *Rules, d Decision, name string, ip netip.Addr, port int) (net.Conn, netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
	defer cancel()
	host := name
	addrs := []netip.Addr{ip}
	if name != "" {
		if isLocalhostName(name) {
			// Answered from /etc/hosts or by the resolver itself, never
			// by a server: refused before any lookup.
			return nil, netip.Addr{}, &deniedAddrError{host: name, why: "loopback (RFC 6761)", operatorOnly: true}
		}
		var err error
		// Rooted, so that no search domain of the host's resolv.conf is
		// tried: "api.example" that does not resolve must not become
		// "api.example.corp.internal", a host the rules never named (and
		// with ndots:5, as in Kubernetes, the search list comes first).
		if addrs, err = p.lookup(ctx, name+"."); err != nil {
			return nil, netip.Addr{}, fmt.Errorf("resolve %s: %w", name, err)
		}
	} else {
		host = ip.String()
	}
	check := func(a netip.Addr) error { return p.checkAddr(r, host, a, port) }
	if d.PublicOnly && name != "" {
		var err error
		if addrs, err = p.admitPublic(r, name, addrs, port); err != nil {
			return nil, netip.Addr{}, err
		}
		check = func(a netip.Addr) error { return p.checkInternet(r, host, a, port) }
	}
	dialer := net.Dialer{Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("dial %s: unparsable address %q", host, address)
		}
		return check(ap.Addr())
	}}
	var errs []error
	for _, a := range addrs {
		// Checked before dialing too, so a forbidden address costs no
		// connect attempt and gets a clear error.
		if err := check(a); err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(a.Unmap().String(), strconv.Itoa(port)))
		if err == nil {
			return c, a.Unmap(), nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, netip.Addr{}, fmt.Errorf("resolve %s: %w", host, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true})
	}
	return nil, netip.Addr{}, errors.Join(errs...)
}

// addrDenied returns the address check that refused every address, if
// that is why a dial failed.
func addrDenied(err error) (*deniedAddrError, bool) {
	var de *deniedAddrError
	return de, errors.As(err, &de)
}
