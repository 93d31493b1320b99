package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// serveHTTP serves one connection to the HTTP proxy listener: absolute-form
// requests are forwarded one by one, CONNECT turns it into a tunnel.
func (s *Sandbox) serveHTTP(c net.Conn) {
	cc := &countConn{Conn: c, s: s}
	br := bufio.NewReaderSize(cc, maxHead)
	for {
		// A request's bytes count from its first one, which br may
		// already hold from an earlier read.
		up0, down0 := cc.mark()
		up0 -= int64(br.Buffered())
		c.SetReadDeadline(time.Now().Add(s.p.cfg.IdleTimeout))
		hosts, err := peekHosts(br)
		if err != nil {
			switch {
			case errors.Is(err, errHeadTooLarge):
				s.refuse(cc, Event{Protocol: "http"}, http.StatusRequestHeaderFieldsTooLarge, err.Error(), "")
			case errors.Is(err, errFoldedHead):
				s.refuse(cc, Event{Protocol: "http"}, http.StatusBadRequest, err.Error(), "")
			}
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			s.refuse(cc, Event{Protocol: "http"}, http.StatusBadRequest, "malformed request: "+err.Error(), "")
			return
		}
		c.SetReadDeadline(time.Time{})
		if req.Method == http.MethodConnect {
			s.connect(cc, br, req, up0, down0)
			return
		}
		if !s.forward(cc, br, req, hosts, up0, down0) {
			return
		}
	}
}

// refuse answers a request the proxy will not carry, logs it as denied,
// and closes the connection.
func (s *Sandbox) refuse(cc *countConn, ev Event, status int, reason, rule string) {
	ev.Decision, ev.Reason, ev.Rule, ev.Status = Denied, reason, rule, status
	s.refuseWith(cc, ev, status, reason, rule, s.hint(ev))
}

// refuseWith is refuse with its own hint ("" for none).
func (s *Sandbox) refuseWith(cc *countConn, ev Event, status int, reason, rule, hint string) {
	ev.Decision, ev.Reason, ev.Rule, ev.Status = Denied, reason, rule, status
	// Logged before the answer goes out: whoever reads the log after
	// seeing the refusal finds it there.
	s.event(ev)
	writeRefusal(cc, ev, hint)
	cc.Close()
}

// operatorHint says who can open an address no rule of a sandbox reaches:
// telling a tenant to add it to the allow-list would send them to a 400.
func operatorHint(de *deniedAddrError) string {
	if !de.addr.IsValid() {
		return "" // a localhost name: nobody
	}
	return fmt.Sprintf("the server's operator must open it for every sandbox (airlock serve --egress-allow-private %s), then list it in the allow list",
		netip.PrefixFrom(de.addr, de.addr.BitLen()))
}

// writeRefusal writes the proxy's own error answer. A policy denial names
// the rule that decided and how to allow the target, so an agent (or its
// operator) reading the error knows what to change, and one a person was
// asked about says how that ended (X-Airlock-Egress-Approval), so that
// an agent tells "refused by a person" from "nobody decided in time";
// an upstream failure says that the allow-list let it through and what
// failed instead.
func writeRefusal(w io.Writer, ev Event, hint string) {
	verb := "failed"
	if ev.Decision == Denied {
		verb = "denied"
	}
	body := fmt.Sprintf("airlock egress: %s %s:%d %s: %s\n", ev.Protocol, ev.Host, ev.Port, verb, ev.Reason)
	if ev.UpstreamError != "" {
		verb = "upstream-error"
		body = fmt.Sprintf("airlock egress: %s: %s\n", net.JoinHostPort(ev.Host, strconv.Itoa(ev.Port)), ev.Reason)
	}
	if hint != "" {
		body += "to allow it, " + hint + "\n"
	}
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nX-Airlock-Egress: %s\r\n",
		ev.Status, http.StatusText(ev.Status), len(body), verb)
	if ev.UpstreamError != "" {
		fmt.Fprintf(w, "X-Airlock-Egress-Error: %s\r\n", ev.UpstreamError)
	}
	if ev.Decision == Denied {
		rule := ev.Rule
		if rule == "" {
			rule = "default deny (no allow rule matched)"
		}
		fmt.Fprintf(w, "X-Airlock-Egress-Rule: %s\r\n", headerSafe(rule))
	}
	if hint != "" {
		fmt.Fprintf(w, "X-Airlock-Egress-Allow: %s\r\n", headerSafe(hint))
	}
	if ev.Approval != "" {
		fmt.Fprintf(w, "X-Airlock-Egress-Approval: %s\r\n", ev.Approval)
	}
	fmt.Fprintf(w, "Connection: close\r\n\r\n%s", body)
}

// failUpstream answers and logs an upstream failure of an allowed request
// whose answer has not started, and closes the connection.
func (s *Sandbox) failUpstream(cc *countConn, ev Event, ue *upstreamError) {
	ev.markUpstream(ue)
	ev.Status = ue.status()
	s.event(ev)
	writeRefusal(cc, ev, "")
	cc.Close()
}

// hint says how to allow a denied target, for refusals of a named target.
func (s *Sandbox) hint(ev Event) string {
	if ev.Decision != Denied || ev.Status != http.StatusForbidden || ev.Host == "" {
		return ""
	}
	target := net.JoinHostPort(ev.Host, strconv.Itoa(ev.Port))
	if s.p.cfg.AllowHint != nil {
		return s.p.cfg.AllowHint(s.id, target)
	}
	return fmt.Sprintf("add %q to the sandbox's network allow list: PUT /v1/sandboxes/%s/network", target, s.id)
}

func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// decide checks a target against the rules, holding it for a person if
// they ask (admit), and, if allowed, dials it. On refusal it has answered
// and logged; ok is false. An approved target's ev.Reason says who
// approved it.
func (s *Sandbox) decide(cc *countConn, br *bufio.Reader, ev *Event, t target) (up net.Conn, ok bool) {
	r, d, err := s.admit(cc, br, ev, t)
	if err == nil && !d.Allowed {
		s.refuse(cc, *ev, http.StatusForbidden, d.Reason, d.Rule)
		return nil, false
	}
	var addr netip.Addr
	if err == nil {
		up, addr, err = s.p.dial(s.ctx, r, d, t.name, t.ip, t.port)
	}
	if err != nil {
		if de, denied := addrDenied(err); denied {
			rule := d.Rule
			if de.rule != "" {
				rule = de.rule
			}
			if de.operatorOnly {
				s.refuseWith(cc, *ev, http.StatusForbidden, de.Error(), rule, operatorHint(de))
			} else {
				s.refuse(cc, *ev, http.StatusForbidden, de.Error(), rule)
			}
			return nil, false
		}
		s.failUpstream(cc, *ev, upstreamFailure(err, false))
		return nil, false
	}
	ev.Addr, ev.Rule = addr.String(), r.dialedRule(d, addr, t.port)
	if d.Ask {
		ev.Reason = d.Reason
	}
	return up, true
}

// forward carries one plain-HTTP request upstream on a fresh connection and
// relays the answer; the request's first byte came at up0 and its answer's
// goes at down0. It reports whether the client connection may serve
// another request.
func (s *Sandbox) forward(cc *countConn, br *bufio.Reader, req *http.Request, hosts []string, up0, down0 int64) bool {
	start := time.Now()
	ev := Event{Protocol: "http"}
	t, err := requestTarget(req, hosts)
	ev.Host, ev.Port = t.host(), t.port
	if err != nil {
		status := http.StatusBadRequest
		var fe *frontingError
		if errors.As(err, &fe) {
			status = http.StatusForbidden
		}
		s.refuse(cc, ev, status, err.Error(), "")
		return false
	}
	up, ok := s.decide(cc, br, &ev, t)
	if !ok {
		return false
	}
	defer up.Close()
	defer s.holdUp(up, ev)()
	s.flagCleartext(req, t, ev)
	upgrade := req.Header.Get("Upgrade") != ""
	clean(req.Header, upgrade)
	req.RequestURI = ""
	if !upgrade {
		req.Header.Set("Connection", "close")
	}
	finish := func(status int, err error) {
		up1, down1 := cc.mark()
		up1 -= int64(br.Buffered()) // the next request's, read ahead
		ev.Decision, ev.Status = Allowed, status
		var ue *upstreamError
		switch {
		case errors.As(err, &ue):
			ev.markUpstream(ue)
		case err != nil:
			ev.Reason = "relaying the answer: " + err.Error()
		}
		ev.BytesUp, ev.BytesDown = up1-up0, down1-down0
		ev.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		s.event(ev)
	}
	if upgrade {
		// WebSocket and other upgrades: the request goes up as is and the
		// connection becomes a tunnel to the same, already checked, host.
		if err := req.Write(up); err != nil {
			ue := upstreamFailure(err, false)
			writeRefusal(cc, Event{Protocol: "http", Host: ev.Host, Port: ev.Port, Status: ue.status(), UpstreamError: ue.kind, Reason: ue.msg}, "")
			finish(ue.status(), ue)
			return false
		}
		splice(cc, br, up, s.p.cfg.IdleTimeout)
		finish(http.StatusSwitchingProtocols, nil)
		return false
	}
	status, keep, err := relay(cc, up, req, ev, s.p.cfg.IdleTimeout)
	finish(status, err)
	return keep && err == nil
}

// relay writes req to up and its response back to the client. The idle
// timeout bounds each wait for progress, not the whole exchange: a long
// answer that keeps flowing (a model streaming tokens) is not cut. A
// failure before the answer starts is answered here and returned as an
// *upstreamError.
func relay(cc *countConn, up net.Conn, req *http.Request, ev Event, idle time.Duration) (status int, keep bool, err error) {
	up = &idleConn{Conn: up, idle: idle}
	fail := func(err error) (int, bool, error) {
		ue := upstreamFailure(err, false)
		ev.markUpstream(ue)
		ev.Status = ue.status()
		writeRefusal(cc, ev, "")
		return ev.Status, false, ue
	}
	if err := req.Write(up); err != nil {
		return fail(err)
	}
	resp, err := readHopResponse(bufio.NewReaderSize(up, maxHead), req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	clean(resp.Header, false)
	keep = !req.Close && req.ProtoAtLeast(1, 1)
	resp.Close = !keep
	if err := resp.Write(&idleConn{Conn: cc, idle: idle}); err != nil {
		return resp.StatusCode, false, err
	}
	cc.SetWriteDeadline(time.Time{})
	return resp.StatusCode, keep && !resp.Close, nil
}

// readHopResponse reads a response from br with its Connection header as
// the upstream sent it, for clean: http.ReadResponse deletes a Connection
// header that says close, and with it the names of the other hop-by-hop
// headers it lists, which would then reach the client.
func readHopResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	conn, err := peekHeader(br, "connection")
	if errors.Is(err, errHeadTooLarge) {
		return nil, errors.New("response head too large")
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, err
	}
	if len(conn) > 0 {
		resp.Header["Connection"] = conn
	}
	return resp, nil
}

// hopHeaders are meaningful only between two hops (RFC 9110 7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// clean removes hop-by-hop headers, and those the Connection header names;
// an upgrade keeps Connection and Upgrade, which the next hop needs.
func clean(h http.Header, upgrade bool) {
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" && !(upgrade && strings.EqualFold(f, "upgrade")) {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		if upgrade && (k == "Connection" || k == "Upgrade") {
			continue
		}
		h.Del(k)
	}
}
