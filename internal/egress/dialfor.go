package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// DialFor connects to addr ("host:port") for the server itself, on a
// tenant's behalf (an image pull), under rules r, exactly as the proxy
// dials for a sandbox: the host must match r's allow-list, a name is
// resolved here, and every address is checked against the forbidden
// ranges, which only the operator's AllowPrivate with an IP rule of r
// opens. The server's own reach (its API, the host's services, the cloud
// metadata address) is no more a tenant's through this than through a
// sandbox.
func (p *Proxy) DialFor(ctx context.Context, r *Rules, network, addr string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil, fmt.Errorf("egress: dial %s %s: only tcp", network, addr)
	}
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("egress: dial %s: %w", addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("egress: dial %s: bad port", addr)
	}
	name, ip := host, netip.Addr{}
	if a, err := netip.ParseAddr(host); err == nil {
		name, ip = "", a.Unmap()
	}
	d := r.Match(name, ip, port)
	if !d.Allowed {
		return nil, fmt.Errorf("egress: %s refused: %s", addr, d.Reason)
	}
	c, _, err := p.dial(ctx, r, d, name, ip, port)
	if err != nil {
		return nil, fmt.Errorf("egress: %s: %w", addr, err)
	}
	return c, nil
}
