package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// SOCKS5 (RFC 1928) reply codes.
const (
	socksOK             = 0
	socksFailure        = 1
	socksNotAllowed     = 2
	socksNetUnreach     = 3
	socksHostUnreach    = 4
	socksRefused        = 5
	socksTTLExpired     = 6
	socksCmdUnsupported = 7
	socksAddrUnsupport  = 8
)

// errSOCKSCommand: a command other than CONNECT (BIND, UDP ASSOCIATE).
var errSOCKSCommand = errors.New("only the CONNECT command is supported")

// serveSOCKS serves one SOCKS5 connection: no authentication, CONNECT only,
// names resolved by the proxy (socks5h), never by the sandbox.
func (s *Sandbox) serveSOCKS(c net.Conn) {
	cc := &countConn{Conn: c, s: s}
	start := time.Now()
	br := bufio.NewReader(cc)
	ev := Event{Protocol: "socks5"}
	c.SetReadDeadline(time.Now().Add(sniTimeout))
	if err := socksGreeting(br, cc); err != nil {
		ev.Decision, ev.Reason = Denied, "SOCKS greeting: "+err.Error()
		s.event(ev)
		return
	}
	t, err := readSOCKSRequest(br)
	c.SetReadDeadline(time.Time{})
	ev.Host, ev.Port = t.host(), t.port
	if err != nil {
		code := byte(socksFailure)
		switch {
		case errors.Is(err, errSOCKSCommand):
			code = socksCmdUnsupported
		case errors.Is(err, errSOCKSAddrType):
			code = socksAddrUnsupport
		}
		socksReply(cc, code)
		ev.Decision, ev.Reason = Denied, "SOCKS request: "+err.Error()
		s.event(ev)
		return
	}
	r, d, err := s.admit(cc, br, &ev, t)
	if err == nil && !d.Allowed {
		socksReply(cc, socksNotAllowed)
		ev.Decision, ev.Reason = Denied, d.Reason
		s.event(ev)
		return
	}
	var up net.Conn
	var addr netip.Addr
	if err == nil {
		up, addr, err = s.p.dial(s.ctx, r, d, t.name, t.ip, t.port)
	}
	if err != nil {
		code := byte(socksNotAllowed)
		if de, denied := addrDenied(err); denied {
			ev.Decision, ev.Reason = Denied, de.Error()
			if de.rule != "" {
				ev.Rule = de.rule
			}
		} else {
			ue := upstreamFailure(err, false)
			ev.markUpstream(ue)
			code = ue.socksCode()
		}
		socksReply(cc, code)
		s.event(ev)
		return
	}
	defer up.Close()
	ev.Addr, ev.Decision, ev.Rule = addr.String(), Allowed, r.dialedRule(d, addr, t.port)
	if d.Ask {
		ev.Reason = d.Reason // who approved it
	}
	defer s.holdUp(up, ev)()
	if socksReply(cc, socksOK) == nil {
		splice(cc, br, up, s.p.cfg.IdleTimeout)
	}
	ev.BytesUp, ev.BytesDown = cc.mark()
	ev.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	s.event(ev)
}

// socksGreeting reads the client's methods and picks "no authentication".
func socksGreeting(r io.Reader, w io.Writer) error {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return err
	}
	if h[0] != 5 {
		return fmt.Errorf("version %d, want 5", h[0])
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return err
	}
	for _, m := range methods {
		if m == 0 {
			_, err := w.Write([]byte{5, 0})
			return err
		}
	}
	w.Write([]byte{5, 0xff})
	return errors.New("client offers no method without authentication")
}

var errSOCKSAddrType = errors.New("unknown address type")

// readSOCKSRequest reads a CONNECT request. A domain that is an IP literal
// in any spelling is treated as that IP, never resolved as a name.
func readSOCKSRequest(r io.Reader) (target, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return target{}, err
	}
	if h[0] != 5 || h[2] != 0 {
		return target{}, fmt.Errorf("malformed request header % x", h[:])
	}
	var t target
	switch h[3] {
	case 1, 4:
		b := make([]byte, map[byte]int{1: 4, 4: 16}[h[3]])
		if _, err := io.ReadFull(r, b); err != nil {
			return target{}, err
		}
		ip, _ := netip.AddrFromSlice(b)
		t.ip = ip.Unmap()
	case 3:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return target{}, err
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return target{}, err
		}
		// As sent, untrimmed: a name with a NUL, a space or a "%" is
		// refused by ParseHost, never cut or cleaned into another name
		// than the one the client's own checks saw.
		name, ip, err := ParseHost(string(b))
		if err != nil {
			return target{}, err
		}
		t.name, t.ip = name, ip
	default:
		return target{}, errSOCKSAddrType
	}
	var p [2]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return target{}, err
	}
	t.port = int(p[0])<<8 | int(p[1])
	if t.port == 0 {
		return t, errors.New("port 0")
	}
	if h[1] != 1 {
		return t, errSOCKSCommand
	}
	return t, nil
}

func socksReply(w io.Writer, code byte) error {
	_, err := w.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0})
	return err
}
