package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

// AskRequest is a connection the policy's ask holds, as put to the
// approvals service (Config.Ask).
type AskRequest struct {
	SandboxID string
	TenantID  string
	Protocol  string // of the connection that opened the ask: "http", "connect" or "socks5"
	Host      string // a name (lower-case, no trailing dot) or an IP address
	Port      int
	Rule      string    // the ask entry that matched, as written; "" when "ask": true asked
	Deadline  time.Time // when the proxy gives up and refuses
}

// AskAnswer is the decision on an AskRequest.
type AskAnswer struct {
	Allow  bool
	Reason string // who decided and why; logged, and shown in a refusal
}

// pendingAsk is one call of Config.Ask, shared by every connection held
// for its target at the time.
type pendingAsk struct {
	ctx     context.Context // ends at the timeout, with the sandbox, or when nobody waits
	cancel  context.CancelFunc
	timeout time.Duration
	done    chan struct{} // closed once ans and err are set
	ans     AskAnswer
	err     error
	waiters int // guarded by Sandbox.askMu
}

// admit decides t under the rules in force and, when they ask about it,
// holds the connection c (read through br) for a person's decision. It
// returns the rules and decision to dial with: after an approval, rules
// that list t, and a decision that allows it (List "ask", Reason
// "approved: ..."); after a refusal, one that does not, saying why. A
// target no approval could open (a localhost name, an IP literal the
// proxy never dials for the sandbox) is refused without asking, with the
// *deniedAddrError the dial would have returned.
func (s *Sandbox) admit(c net.Conn, br *bufio.Reader, ev *Event, t target) (*Rules, Decision, error) {
	r := s.rules.Load()
	d := r.Match(t.name, t.ip, t.port)
	ev.Rule = d.Rule
	if !d.Ask {
		return r, d, nil
	}
	admitted := r.admitting(t)
	if err := s.p.unreachable(admitted, t); err != nil {
		return r, d, err
	}
	if s.p.cfg.Ask == nil {
		ev.Approval = ApprovalUnavailable
		d.Reason = "approval unavailable: this server has no approvals service to ask"
		return r, d, nil
	}
	gone, stop := watchHangUp(c, br)
	ev.Approval, d.Reason = s.ask(AskRequest{SandboxID: s.id, TenantID: s.tenant, Protocol: ev.Protocol,
		Host: t.host(), Port: t.port, Rule: d.Rule}, r.AskTimeout(), gone)
	stop()
	if ev.Approval != ApprovalAllowed {
		return r, d, nil
	}
	d.Allowed = true
	return admitted, d, nil
}

// unreachable refuses a target the proxy would not dial under r whatever
// a person decided, so that nobody is asked about it: a localhost name,
// or an IP literal in a range only the operator opens. A name's
// addresses are checked when it is dialed, as for any allowed name.
func (p *Proxy) unreachable(r *Rules, t target) error {
	if t.ip.IsValid() {
		return p.checkAddr(r, "", t.ip, t.port)
	}
	if isLocalhostName(t.name) {
		return &deniedAddrError{host: t.name, why: "loopback (RFC 6761)", operatorOnly: true}
	}
	return nil
}

// ask waits for the decision on q, joining a call for the same target
// already in flight, until it comes, the call's ctx ends or gone closes
// (the client hung up). It returns the outcome (Event.Approval) and the
// reason to log.
func (s *Sandbox) ask(q AskRequest, timeout time.Duration, gone <-chan struct{}) (outcome, reason string) {
	key := net.JoinHostPort(q.Host, strconv.Itoa(q.Port))
	pa := s.joinAsk(key, q, timeout)
	defer s.leaveAsk(key, pa)
	hungUp := false
	select {
	case <-pa.done:
	case <-pa.ctx.Done():
	case <-gone:
		hungUp = true
	}
	switch {
	case s.ctx.Err() != nil:
		// Checked first: Close cuts the client too, which reads as a
		// hang-up.
		return ApprovalAbandoned, "approval abandoned: the proxy stopped (the daemon stopped, or the sandbox ended)"
	case hungUp:
		return ApprovalAbandoned, "approval abandoned: the client closed the connection while it was held"
	}
	var err error
	select {
	case <-pa.done:
		switch {
		case pa.err != nil:
			err = pa.err
		case pa.ans.Allow:
			return ApprovalAllowed, "approved: " + orElse(pa.ans.Reason, "a person allowed it")
		default:
			return ApprovalDenied, "approval denied: " + orElse(pa.ans.Reason, "a person refused it")
		}
	default:
	}
	switch {
	case errors.Is(pa.ctx.Err(), context.DeadlineExceeded):
		return ApprovalTimedOut, fmt.Sprintf("approval timed out after %ds", int64(pa.timeout/time.Second))
	case err != nil:
		return ApprovalUnavailable, "approval failed: " + err.Error()
	}
	return ApprovalUnavailable, "approval failed: the approvals service answered nothing"
}

func orElse(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// joinAsk returns the call in flight for key, or starts one: one
// approval per target, however many connections an agent opens to it
// (a client retrying, a browser's parallel fetches) while it waits.
func (s *Sandbox) joinAsk(key string, q AskRequest, timeout time.Duration) *pendingAsk {
	s.askMu.Lock()
	defer s.askMu.Unlock()
	pa := s.asks[key]
	if pa == nil || pa.ctx.Err() != nil {
		pa = &pendingAsk{timeout: timeout, done: make(chan struct{})}
		pa.ctx, pa.cancel = context.WithTimeout(s.ctx, timeout)
		q.Deadline, _ = pa.ctx.Deadline()
		if s.asks == nil {
			s.asks = map[string]*pendingAsk{}
		}
		s.asks[key] = pa
		// Not in s.wg: Close must not hang on a service that ignores
		// its ctx; the held connections stop waiting for it anyway.
		go s.callAsk(key, pa, q)
	}
	pa.waiters++
	return pa
}

func (s *Sandbox) callAsk(key string, pa *pendingAsk, q AskRequest) {
	pa.ans, pa.err = s.p.cfg.Ask(pa.ctx, q)
	close(pa.done)
	// Decided: the next connection to the target asks anew (a decision
	// to remember is the daemon's, through SetRules).
	s.askMu.Lock()
	if s.asks[key] == pa {
		delete(s.asks, key)
	}
	s.askMu.Unlock()
	pa.cancel()
}

// leaveAsk is a held connection's end of waiting; the last one to leave
// cancels the call, so that nobody is asked about a connection gone.
func (s *Sandbox) leaveAsk(key string, pa *pendingAsk) {
	s.askMu.Lock()
	pa.waiters--
	last := pa.waiters == 0
	if last && s.asks[key] == pa {
		delete(s.asks, key)
	}
	s.askMu.Unlock()
	if last {
		pa.cancel()
	}
}

// watchHangUp watches a held client connection without consuming what
// the client sent: gone closes when the client hangs up (EOF or an
// error, as net/http's server reads a hang-up), and stop ends the watch,
// leaving br with every byte it read still buffered. A client that keeps
// sending until br is full is watched no longer: it has not hung up, and
// the ask's timeout still bounds the wait.
func watchHangUp(c net.Conn, br *bufio.Reader) (gone <-chan struct{}, stop func()) {
	g, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for n := br.Buffered() + 1; n <= br.Size(); n = br.Buffered() + 1 {
			if _, err := br.Peek(n); err != nil {
				// A deadline is stop's doing, and leaves br and c usable.
				if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, bufio.ErrBufferFull) {
					close(g)
				}
				return
			}
		}
	}()
	return g, func() {
		c.SetReadDeadline(time.Unix(1, 0))
		<-exited
		c.SetReadDeadline(time.Time{})
	}
}
