package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// sniTimeout bounds the wait for a tunnel's first bytes.
const sniTimeout = 10 * time.Second

// connect opens a tunnel for a CONNECT request whose first byte the
// sandbox sent at up0 and whose first answer byte goes at down0. Policy
// and address checks answer 403 before any tunnel exists; once it does, a
// TLS ClientHello naming another server than the CONNECT target closes it
// (domain fronting: the allow-list saw one name, the TLS server would
// route by another). The Host header is not consulted: the tunnel goes to
// the target the allow-list checked, and clients (node's http.request
// among them) send the proxy's own address there. TLS to a host a secret is bound to is intercepted.
func (s *Sandbox) connect(cc *countConn, br *bufio.Reader, req *http.Request, up0, down0 int64) {
	start := time.Now()
	ev := Event{Protocol: "connect"}
	t, err := requestTarget(req, nil)
	ev.Host, ev.Port = t.host(), t.port
	if err != nil {
		s.refuse(cc, ev, http.StatusBadRequest, "bad CONNECT target: "+err.Error(), "")
		return
	}

	up, ok := s.decide(cc, br, &ev, t)
	if !ok {
		return
	}
	defer up.Close()
	defer s.holdUp(up, ev)()
	// The tunnel's checks below report in ev.Reason; who approved it, if
	// a person did, is its reason only if nothing else is.
	approved := ev.Reason
	ev.Reason = ""
	if _, err := io.WriteString(cc, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	ev.Decision = Allowed
	passed := func() bool { return ev.Decision == Allowed && ev.Reason == "" }
	idle := s.p.cfg.IdleTimeout
	if set := s.secrets.Load(); set.binds(t) {
		// Interception runs its own TLS client on the raw upstream, so
		// not one upstream byte may be copied to the sandbox before the
		// ClientHello says whether it happens: a server that speaks first
		// waits for the sandbox here. Bound hosts speak HTTPS, where the
		// client speaks first.
		isTLS := s.checkSNI(cc, br, t, &ev)
		switch {
		case !passed():
		case isTLS:
			// TLS to a host a secret is bound to: terminated here so
			// that the placeholder can be swapped for the value.
			ev.Reason, ev.UpstreamError = s.intercept(cc, br, up, t, set, ev)
		default:
			splice(cc, br, up, idle)
		}
	} else {
		// Upstream bytes flow at once, since a server may speak first
		// (SMTP, FTP, MySQL); the sandbox's go up only once its first
		// bytes pass the SNI check.
		spliceGated(cc, br, up, idle, func() bool {
			s.checkSNI(cc, br, t, &ev)
			return passed()
		})
	}
	up1, down1 := cc.mark()
	up1 -= int64(br.Buffered()) // read ahead but never sent
	ev.BytesUp, ev.BytesDown = up1-up0, down1-down0
	ev.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	if ev.Reason == "" {
		ev.Reason = approved
	}
	s.event(ev)
}

// checkSNI peeks at the tunnel's first bytes and refuses (in ev) a TLS
// ClientHello naming another server than t. It reports whether they are a
// readable ClientHello.
func (s *Sandbox) checkSNI(cc *countConn, br *bufio.Reader, t target, ev *Event) (isTLS bool) {
	cc.SetReadDeadline(time.Now().Add(sniTimeout))
	sni, err := peekSNI(br)
	cc.SetReadDeadline(time.Time{})
	switch {
	case errors.Is(err, errNotTLS) || (err == nil && sni == ""):
		// ssh, plain TCP or TLS without a name: nothing to compare.
	case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
		// ErrClosed: the upstream half of a gated splice ended the
		// tunnel (idle, reset) or Close cut it while this waited.
		ev.Reason = "closed before sending anything"
	case err != nil:
		ev.Decision, ev.Reason = Denied, "unreadable TLS ClientHello: "+err.Error()
	default:
		if n, ip, perr := ParseHost(sni); perr != nil || !(target{name: n, ip: ip}).sameHost(t) {
			ev.Decision, ev.Reason = Denied, fmt.Sprintf("TLS server name %q differs from the CONNECT target %s (domain fronting guard)", sni, t.host())
		}
	}
	return err == nil
}
