package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// sniTimeout bounds the wait for a tunnel's first bytes.
const sniTimeout = 10 * time.Second

// connect opens a tunnel for a CONNECT request. Policy and address checks
// answer 403 before any tunnel exists; once it does, a TLS ClientHello
// naming another server than the CONNECT target closes it (domain
// fronting: the allow-list saw one name, the TLS server would route by
// another).
func (s *Sandbox) connect(cc *countConn, br *bufio.Reader, req *http.Request) {
	start := time.Now()
	up0, down0 := cc.mark()
	ev := Event{Protocol: "connect"}
	t, err := requestTarget(req, nil)
	ev.Host, ev.Port = t.host(), t.port
	if err != nil {
		s.refuse(cc, ev, http.StatusBadRequest, "bad CONNECT target: "+err.Error(), "")
		return
	}
	up, ok := s.decide(cc, &ev, t)
	if !ok {
		return
	}
	defer up.Close()
	if _, err := io.WriteString(cc, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	cc.SetReadDeadline(time.Now().Add(sniTimeout))
	sni, err := peekSNI(br)
	cc.SetReadDeadline(time.Time{})
	ev.Decision = Allowed
	switch {
	case errors.Is(err, errNotTLS) || (err == nil && sni == ""):
		// ssh, plain TCP or TLS without a name: nothing to compare.
	case err != nil && errors.Is(err, io.EOF):
		ev.Reason = "closed before sending anything"
	case err != nil:
		ev.Decision, ev.Reason = Denied, "unreadable TLS ClientHello: "+err.Error()
	default:
		if n, ip, perr := ParseHost(sni); perr != nil || !(target{name: n, ip: ip}).sameHost(t) {
			ev.Decision, ev.Reason = Denied, fmt.Sprintf("TLS server name %q differs from the CONNECT target %s (domain fronting guard)", sni, t.host())
		}
	}
	if ev.Decision == Allowed && ev.Reason == "" {
		splice(cc, br, up, s.p.cfg.IdleTimeout)
	}
	up1, down1 := cc.mark()
	ev.BytesUp, ev.BytesDown = up1-up0, down1-down0
	ev.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	s.event(ev)
}
