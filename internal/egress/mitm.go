package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// mitm is one intercepted tunnel to a bound host: TLS from the sandbox
// ends here with a certificate from the sandbox's CA, and the proxy opens
// its own, verified, TLS to the upstream. Requests are read, rewritten and
// sent one at a time over one upstream connection.
type mitm struct {
	s      *Sandbox
	client *plainConn // the sandbox's requests and answers, decrypted
	cbr    *bufio.Reader
	up     *tls.Conn
	ubr    *bufio.Reader
	t      target
	base   Event
	tr     *targetRules
}

// intercept serves a CONNECT tunnel to a host a secret is bound to, after
// the policy, the address checks and the SNI guard let it through; raw is
// the dialed upstream, which the caller holds for Sandbox.Close to cut (a
// request waiting on the upstream's answer would not see the sandbox's
// side close). It returns a reason for the tunnel's event, "" if
// nothing went wrong, and the kind of upstream failure if that was it.
func (s *Sandbox) intercept(cc *countConn, br *bufio.Reader, raw net.Conn, t target, set *secretSet, tun Event) (reason, upstream string) {
	idle := s.p.cfg.IdleTimeout
	leaf, err := set.ca.leaf(t.name, time.Now())
	if err != nil {
		return "intercept: " + err.Error(), ""
	}
	client := tls.Server(&idleConn{Conn: newBufConn(cc, br), idle: idle}, &tls.Config{
		Certificates: []tls.Certificate{*leaf},
		NextProtos:   []string{"http/1.1"}, // requests are rewritten as HTTP/1.1 only
		MinVersion:   tls.VersionTLS12,
	})
	defer client.Close()
	if err := handshake(client, sniTimeout); err != nil {
		return "intercept: TLS handshake with the sandbox (does it trust the sandbox CA?): " + err.Error(), ""
	}
	up := tls.Client(&idleConn{Conn: raw, idle: idle}, s.p.upstreamTLS(t.name))
	defer up.Close()
	pc := &plainConn{Conn: client}
	m := &mitm{s: s, client: pc, cbr: bufio.NewReaderSize(pc, maxHead),
		up: up, ubr: bufio.NewReaderSize(up, maxHead), t: t, base: tun}
	m.base.Protocol, m.base.Decision, m.base.Reason = "https", Allowed, ""
	m.base.Approval = "" // the tunnel's own event says who approved it
	var upErr *upstreamError
	if err := handshake(up, s.p.cfg.DialTimeout); err != nil {
		upErr = upstreamFailure(err, true)
	}
	for m.serve(upErr) {
	}
	if upErr != nil {
		return set.scrubString(upErr.msg), upErr.kind
	}
	return "", ""
}

func handshake(c *tls.Conn, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.HandshakeContext(ctx)
}

// serve handles one request and logs it; it reports whether the tunnel
// may carry another. A failed upstream handshake is answered 502 to the
// first request, so that the agent reads why.
func (m *mitm) serve(upErr *upstreamError) bool {
	start := time.Now()
	up0, down0 := m.mark()
	ev := m.base
	keep := m.handle(&ev, upErr)
	if ev.Status == 0 {
		return false // closed between requests: nothing to log
	}
	up1, down1 := m.mark()
	ev.BytesUp, ev.BytesDown = up1-up0, down1-down0
	ev.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	m.s.event(ev)
	return keep
}

// mark returns the plaintext bytes of requests read and answers written
// so far. TLS reads ahead, so the raw counts (the tunnel's event) cannot be
// split by request.
func (m *mitm) mark() (up, down int64) {
	return m.client.in.Load() - int64(m.cbr.Buffered()), m.client.out.Load()
}

func (m *mitm) handle(ev *Event, upErr *upstreamError) bool {
	hosts, err := peekHosts(m.cbr)
	if err != nil {
		switch {
		case errors.Is(err, errHeadTooLarge):
			return m.refuse(ev, http.StatusRequestHeaderFieldsTooLarge, Denied, err.Error())
		case errors.Is(err, errFoldedHead):
			return m.refuse(ev, http.StatusBadRequest, Denied, err.Error())
		}
		return false
	}
	req, err := http.ReadRequest(m.cbr)
	if err != nil {
		return m.refuse(ev, http.StatusBadRequest, Denied, "malformed request: "+err.Error())
	}
	defer req.Body.Close()
	if reason := m.checkTarget(req, hosts); reason != "" {
		return m.refuse(ev, http.StatusForbidden, Denied, reason)
	}
	if upErr != nil {
		return m.failUpstream(ev, upErr)
	}
	call := newModelCall(req) // nil unless a model API call
	if err := m.s.gateModelCall(call); err != nil {
		return m.denyBudget(ev, req, call, err)
	}
	upgrade := req.Header.Get("Upgrade") != ""
	clean(req.Header, upgrade)
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// Answered here: the upstream's own 100 would come too late,
		// after the body the client is holding back for it.
		req.Header.Del("Expect")
		if _, err := io.WriteString(m.client, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	tr := m.rules()
	use := tr.rewriteRequest(req)
	// Compressed answers would hide an echoed value from the scrubbing.
	req.Header.Set("Accept-Encoding", "identity")
	req.RequestURI = ""
	req.Trailer = nil
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // or net/http adds its own
	}
	return m.roundTrip(ev, req, use, upgrade, call)
}

// rules returns what the secrets in force now do to this tunnel's
// requests: SetSecrets takes effect at the next request.
func (m *mitm) rules() *targetRules {
	set := m.s.secrets.Load()
	if m.tr == nil || m.tr.set != set {
		m.tr = set.forTarget(m.t)
	}
	return m.tr
}

// checkTarget refuses a request for another host than the tunnel's: the
// policy, the SNI guard and the bindings all judged the CONNECT target,
// so a Host header or absolute URL naming another site would smuggle a
// request (and a value) past all three.
func (m *mitm) checkTarget(req *http.Request, hosts []string) string {
	if req.Method == http.MethodConnect {
		return "CONNECT inside a tunnel"
	}
	if len(hosts) != 1 {
		return fmt.Sprintf("want exactly one Host header, got %d", len(hosts))
	}
	h, err := parseHostPort(hosts[0], 443)
	if err != nil {
		return "Host header: " + err.Error()
	}
	if !h.sameHost(m.t) || h.port != m.t.port {
		return fmt.Sprintf("Host header %s differs from the tunnel's target %s", h, m.t)
	}
	if req.URL.Host == "" && req.URL.Scheme == "" {
		return ""
	}
	u, err := parseHostPort(req.URL.Host, 443)
	if req.URL.Scheme != "https" || err != nil || !u.sameHost(m.t) || u.port != m.t.port {
		return fmt.Sprintf("request URL %s differs from the tunnel's target %s", quoteShort(req.URL.String()), m.t)
	}
	return ""
}

// failUpstream answers an upstream failure inside the sandbox's TLS
// session, its message scrubbed of secret values; the tunnel ends.
func (m *mitm) failUpstream(ev *Event, ue *upstreamError) bool {
	ev.UpstreamError = ue.kind
	return m.refuse(ev, ue.status(), Allowed, m.rules().set.scrubString(ue.msg))
}

// refuse answers inside the sandbox's TLS session; the tunnel ends.
func (m *mitm) refuse(ev *Event, status int, decision, reason string) bool {
	ev.Status, ev.Decision, ev.Reason = status, decision, reason
	writeRefusal(m.client, *ev, "")
	return false
}

// roundTrip sends the rewritten request and relays the scrubbed answer.
func (m *mitm) roundTrip(ev *Event, req *http.Request, use *requestUse, upgrade bool, call *modelCall) bool {
	werr := req.Write(m.up)
	for _, e := range use.events(*ev) {
		// Logged even if the write failed part way: the value may have
		// left.
		m.s.event(e)
	}
	if werr != nil {
		return m.failUpstream(ev, upstreamFailure(werr, false))
	}
	resp, err := readResponse(m.ubr, req)
	if err != nil {
		return m.failUpstream(ev, upstreamFailure(err, false))
	}
	defer resp.Body.Close()
	switching := upgrade && resp.StatusCode == http.StatusSwitchingProtocols
	clean(resp.Header, switching)
	m.tr.set.scrubResponse(resp, req)
	ev.Status = resp.StatusCode
	call.watch(m.s, resp, use, *ev)
	defer call.finish()
	keep := !switching && req.ProtoAtLeast(1, 1) && !req.Close && !resp.Close
	resp.Close = !keep && !switching
	if err := resp.Write(m.client); err != nil {
		ev.Reason = "writing the answer to the sandbox: " + m.tr.set.scrubString(err.Error())
		return false
	}
	if switching {
		// WebSocket and other upgrades: the handshake was rewritten,
		// what follows is passed through as is.
		splice(m.client, m.cbr, newBufConn(m.up, m.ubr), m.s.p.cfg.IdleTimeout)
	}
	return keep
}

// readResponse reads the answer to req, skipping informational ones (100
// Continue, 103 Early Hints) but not 101 Switching Protocols.
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := readHopResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		resp.Body.Close()
	}
}
