package events

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
)

// newHTTPClient is the client deliveries go out on. It never follows a
// redirect (a public receiver could send the request on to an internal
// address), never uses a proxy from the environment (the check would then
// see the proxy's address), and, unless private destinations are allowed,
// refuses at dial time every address that is not public: the address
// checked is the one connected to, so a name that resolves to a public
// address when the webhook is created and to 127.0.0.1 or the cloud
// metadata service later (DNS rebinding) is still refused.
func newHTTPClient(o Options) *http.Client {
	dialer := &net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}
	if !o.AllowPrivate {
		dialer.Control = refusePrivate
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    o.Timeout,
		ResponseHeaderTimeout:  o.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// refusePrivate is a net.Dialer Control: it runs after the name is
// resolved, on the address about to be connected.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook destination %q: %w", address, err)
	}
	if bad, name := egress.Forbidden(ap.Addr()); bad {
		return fmt.Errorf("%s is a %s address: the server refuses private destinations (--webhooks-allow-private)", ap.Addr(), name)
	}
	return nil
}
