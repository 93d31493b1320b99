package egress

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// askHook is a Config.Ask that hands each question to the test and
// blocks until the test answers it or ctx ends.
type askHook struct{ calls chan askCall }

type askCall struct {
	q      AskRequest
	ctx    context.Context
	answer chan<- AskAnswer
}

func newAskHook() *askHook { return &askHook{calls: make(chan askCall, 16)} }

func (h *askHook) ask(ctx context.Context, q AskRequest) (AskAnswer, error) {
	ans := make(chan AskAnswer, 1)
	h.calls <- askCall{q: q, ctx: ctx, answer: ans}
	select {
	case a := <-ans:
		return a, nil
	case <-ctx.Done():
		return AskAnswer{}, ctx.Err()
	}
}

func (h *askHook) next(t *testing.T) askCall {
	t.Helper()
	select {
	case c := <-h.calls:
		return c
	case <-time.After(waitFor):
		t.Fatal("the approvals hook was never called")
		return askCall{}
	}
}

// noMoreCalls checks that nobody was asked again.
func (h *askHook) noMoreCalls(t *testing.T) {
	t.Helper()
	select {
	case c := <-h.calls:
		t.Errorf("asked again: %+v", c.q)
	default:
	}
}

// askReply is the proxy's answer to a held client: an HTTP status, or a
// SOCKS reply code.
type askReply struct {
	code   int
	header http.Header
	body   string
	err    error
}

// askProto drives one protocol: start sends a request for target from a
// new client connection and returns the proxy's answer on a channel, so
// a test can see that none comes while the connection is held.
type askProto struct {
	name     string
	upstream func(t *testing.T) *tcpServer
	start    func(t *testing.T, tp *testProxy, target string) (*clientConn, <-chan askReply)
	// carried checks what reaches the client once the connection is
	// allowed: the upstream's answer.
	carried func(t *testing.T, c *clientConn, r askReply)
	okCode  int
	refused int // the refusal's status or reply code
}

func helloServer(t *testing.T) *tcpServer {
	return startTCP(t, rawHTTP("", func(*http.Request) string { return "hello" }, func(http.Header) {}))
}

func readReply(c *clientConn, req *http.Request) <-chan askReply {
	ch := make(chan askReply, 1)
	go func() {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			ch <- askReply{err: err}
			return
		}
		var body []byte
		if resp.StatusCode != http.StatusOK || req == nil {
			body, err = io.ReadAll(resp.Body)
		}
		ch <- askReply{code: resp.StatusCode, header: resp.Header, body: string(body), err: err}
	}()
	return ch
}

var askProtos = []askProto{
	{name: "http", upstream: helloServer, okCode: http.StatusOK, refused: http.StatusForbidden,
		start: func(t *testing.T, tp *testProxy, target string) (*clientConn, <-chan askReply) {
			c := tp.dial(t, tp.httpAddr)
			io.WriteString(c.Conn, get(target))
			return c, readReply(c, nil)
		},
		carried: func(t *testing.T, _ *clientConn, r askReply) {
			if r.body != "hello" {
				t.Errorf("body %q, want the upstream's %q", r.body, "hello")
			}
		}},
	{name: "connect", upstream: startEcho, okCode: http.StatusOK, refused: http.StatusForbidden,
		start: func(t *testing.T, tp *testProxy, target string) (*clientConn, <-chan askReply) {
			c := tp.dial(t, tp.httpAddr)
			fmt.Fprintf(c.Conn, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", target)
			return c, readReply(c, &http.Request{Method: http.MethodConnect})
		},
		carried: func(t *testing.T, c *clientConn, _ askReply) { echoOnce(t, c, "ping") }},
	{name: "socks5", upstream: startEcho, okCode: socksOK, refused: socksNotAllowed,
		start: func(t *testing.T, tp *testProxy, target string) (*clientConn, <-chan askReply) {
			c := tp.dial(t, tp.socksAddr)
			c.Write([]byte{5, 1, 0})
			var greet [2]byte
			if _, err := io.ReadFull(c, greet[:]); err != nil || greet != [2]byte{5, 0} {
				t.Fatalf("SOCKS greeting: % x, %v; want 05 00", greet, err)
			}
			ap := netip.MustParseAddrPort(target)
			c.Write(append(append([]byte{5, 1, 0}, socksIP(ap.Addr().String())...), byte(ap.Port()>>8), byte(ap.Port())))
			ch := make(chan askReply, 1)
			go func() {
				var rep [10]byte
				_, err := io.ReadFull(c, rep[:])
				ch <- askReply{code: int(rep[1]), err: err}
			}()
			return c, ch
		},
		carried: func(t *testing.T, c *clientConn, _ askReply) { echoOnce(t, c, "ping") }},
}

// wait returns the proxy's answer.
func wait(t *testing.T, ch <-chan askReply) askReply {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("reading the proxy's answer: %v", r.err)
		}
		return r
	case <-time.After(waitFor):
		t.Fatal("no answer from the proxy")
		return askReply{}
	}
}

// stillHeld checks that the client has had no answer: no byte written to
// it. It can only miss an early answer, never fail a correct proxy.
func stillHeld(t *testing.T, ch <-chan askReply) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("the client got an answer while the connection was held: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
}

// refusedEvent is the event of a held connection refused with reason.
func refusedEvent(p askProto, port int, approval, reason string) Event {
	ev := Event{SandboxID: "sb1", TenantID: "tenant1", Protocol: p.name, Host: "127.0.0.1", Port: port,
		Decision: Denied, Reason: reason, Approval: approval}
	if p.name != "socks5" {
		ev.Status = http.StatusForbidden
	}
	return ev
}

// checkRefused checks a refusal's answer: for HTTP and CONNECT the
// proxy's 403, its headers saying how the approval ended and its body
// the reason.
func checkRefused(t *testing.T, p askProto, r askReply, approval, reason string) {
	t.Helper()
	if r.code != p.refused {
		t.Fatalf("answer %d, want %d", r.code, p.refused)
	}
	if p.name == "socks5" {
		return
	}
	got := map[string]string{"X-Airlock-Egress": r.header.Get("X-Airlock-Egress"),
		"X-Airlock-Egress-Approval": r.header.Get("X-Airlock-Egress-Approval"),
		"X-Airlock-Egress-Rule":     r.header.Get("X-Airlock-Egress-Rule")}
	want := map[string]string{"X-Airlock-Egress": "denied", "X-Airlock-Egress-Approval": approval,
		"X-Airlock-Egress-Rule": "default deny (no allow rule matched)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refusal headers (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.body, reason) {
		t.Errorf("refusal body %q does not say %q", r.body, reason)
	}
}

var askAll = Policy{Mode: ModeAllowlist, Ask: Ask{All: true}}

// TestAskHeld: a connection the policy asks about is held, the client
// answered nothing and the upstream not dialed, until the hook decides;
// allowed, the upstream's answer reaches the client; denied, the client
// gets the proxy's refusal.
func TestAskHeld(t *testing.T) {
	for _, p := range askProtos {
		for _, allow := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/allow=%v", p.name, allow), func(t *testing.T) {
				up := p.upstream(t)
				h := newAskHook()
				tp := startProxy(t, Config{Ask: h.ask}, askAll)
				before := time.Now()
				c, reply := p.start(t, tp, up.addr())
				call := h.next(t)
				wantQ := AskRequest{SandboxID: "sb1", TenantID: "tenant1", Protocol: p.name, Host: "127.0.0.1", Port: up.port()}
				if diff := cmp.Diff(wantQ, call.q, cmpopts.IgnoreFields(AskRequest{}, "Deadline")); diff != "" {
					t.Errorf("question (-want +got):\n%s", diff)
				}
				if d := call.q.Deadline.Sub(before); d < 59*time.Second || d > 61*time.Second {
					t.Errorf("deadline %v after the request, want the default 60s", d)
				}
				stillHeld(t, reply)
				if n := up.accepted(t); n != 0 {
					t.Fatalf("the upstream was dialed %d times before anyone decided", n)
				}
				call.answer <- AskAnswer{Allow: allow, Reason: "by alice: testing"}
				r := wait(t, reply)
				if !allow {
					checkRefused(t, p, r, ApprovalDenied, "approval denied: by alice: testing")
					want := refusedEvent(p, up.port(), ApprovalDenied, "approval denied: by alice: testing")
					if diff := cmp.Diff([]Event{want}, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
						t.Errorf("events (-want +got):\n%s", diff)
					}
					return
				}
				if r.code != p.okCode {
					t.Fatalf("answer %d (%s), want %d", r.code, r.body, p.okCode)
				}
				p.carried(t, c, r)
				c.Close()
				want := Event{SandboxID: "sb1", TenantID: "tenant1", Protocol: p.name, Host: "127.0.0.1",
					Port: up.port(), Addr: "127.0.0.1", Decision: Allowed, Reason: "approved: by alice: testing",
					Approval: ApprovalAllowed}
				if p.name == "http" {
					want.Status = http.StatusOK
				}
				if diff := cmp.Diff([]Event{want}, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				h.noMoreCalls(t)
			})
		}
	}
}

// TestAskRefusedUndecided: nobody decides in ask_timeout_s, or there is
// nobody to ask: refused as a denied host is, saying which.
func TestAskRefusedUndecided(t *testing.T) {
	for _, p := range askProtos {
		t.Run(p.name+"/timeout", func(t *testing.T) {
			up := p.upstream(t)
			h := newAskHook()
			pol := askAll
			pol.AskTimeoutS = 1
			tp := startProxy(t, Config{Ask: h.ask}, pol)
			_, reply := p.start(t, tp, up.addr())
			call := h.next(t)
			r := wait(t, reply)
			checkRefused(t, p, r, ApprovalTimedOut, "approval timed out after 1s")
			if err := call.ctx.Err(); err != context.DeadlineExceeded {
				t.Errorf("the hook's ctx: %v, want it past its deadline", err)
			}
			want := refusedEvent(p, up.port(), ApprovalTimedOut, "approval timed out after 1s")
			if diff := cmp.Diff([]Event{want}, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
		t.Run(p.name+"/no hook", func(t *testing.T) {
			up := p.upstream(t)
			tp := startProxy(t, Config{}, askAll)
			_, reply := p.start(t, tp, up.addr())
			reason := "approval unavailable: this server has no approvals service to ask"
			checkRefused(t, p, wait(t, reply), ApprovalUnavailable, reason)
			want := refusedEvent(p, up.port(), ApprovalUnavailable, reason)
			if diff := cmp.Diff([]Event{want}, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if n := up.accepted(t); n != 0 {
				t.Errorf("the upstream was dialed %d times", n)
			}
		})
	}
}

// TestAskHookError: an approvals service that fails refuses the
// connection with its error.
func TestAskHookError(t *testing.T) {
	up := helloServer(t)
	tp := startProxy(t, Config{Ask: func(context.Context, AskRequest) (AskAnswer, error) {
		return AskAnswer{}, fmt.Errorf("approvals store: disk full")
	}}, askAll)
	resp, body := tp.dial(t, tp.httpAddr).do(t, get(up.addr()))
	reason := "approval failed: approvals store: disk full"
	checkRefused(t, askProtos[0], askReply{code: resp.StatusCode, header: resp.Header, body: body}, ApprovalUnavailable, reason)
	if diff := cmp.Diff([]Event{refusedEvent(askProtos[0], up.port(), ApprovalUnavailable, reason)}, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestAskClientHangUp: a client that hangs up while held cancels the
// question.
func TestAskClientHangUp(t *testing.T) {
	for _, p := range askProtos {
		t.Run(p.name, func(t *testing.T) {
			up := p.upstream(t)
			h := newAskHook()
			tp := startProxy(t, Config{Ask: h.ask}, askAll)
			c, _ := p.start(t, tp, up.addr())
			call := h.next(t)
			c.Close()
			select {
			case <-call.ctx.Done():
			case <-time.After(waitFor):
				t.Fatal("the hook's ctx did not end when the client hung up")
			}
			want := refusedEvent(p, up.port(), ApprovalAbandoned,
				"approval abandoned: the client closed the connection while it was held")
			if diff := cmp.Diff([]Event{want}, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// pendingWaiters is how many connections wait on the question for key.
func pendingWaiters(s *Sandbox, key string) int {
	s.askMu.Lock()
	defer s.askMu.Unlock()
	if pa := s.asks[key]; pa != nil {
		return pa.waiters
	}
	return 0
}

func waitWaiters(t *testing.T, s *Sandbox, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for pendingWaiters(s, key) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections wait on %s, want %d", pendingWaiters(s, key), key, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAskCoalesced: connections held for one host and port at the same
// time share one question and its answer; one of them hanging up does
// not withdraw it for the others.
func TestAskCoalesced(t *testing.T) {
	up := helloServer(t)
	h := newAskHook()
	tp := startProxy(t, Config{Ask: h.ask}, askAll)
	p := askProtos[0]
	_, first := p.start(t, tp, up.addr())
	call := h.next(t)
	quitter, _ := p.start(t, tp, up.addr())
	_, third := p.start(t, tp, up.addr())
	waitWaiters(t, tp.sb, up.addr(), 3)
	quitter.Close()
	waitWaiters(t, tp.sb, up.addr(), 2)
	if err := call.ctx.Err(); err != nil {
		t.Fatalf("the question ended when one of three clients hung up: %v", err)
	}
	h.noMoreCalls(t)
	call.answer <- AskAnswer{Allow: true, Reason: "by bob"}
	for _, reply := range []<-chan askReply{first, third} {
		if r := wait(t, reply); r.code != http.StatusOK || r.body != "hello" {
			t.Errorf("answer %d %q, want 200 %q", r.code, r.body, "hello")
		}
	}
	h.noMoreCalls(t)
	var got []string
	for _, e := range tp.waitLog(t, 3) {
		got = append(got, e.Approval)
	}
	if diff := cmp.Diff([]string{ApprovalAbandoned, ApprovalAllowed, ApprovalAllowed}, got); diff != "" {
		t.Errorf("events' approvals (-want +got):\n%s", diff)
	}

	// Decided: the next connection is asked about anew.
	_, again := p.start(t, tp, up.addr())
	h.next(t).answer <- AskAnswer{Allow: false}
	checkRefused(t, p, wait(t, again), ApprovalDenied, "approval denied: a person refused it")
}

// TestAskNeverAsked: a target a deny entry lists, one the allow list
// admits, one no ask entry covers, and one no approval could open are
// decided without asking anyone.
func TestAskNeverAsked(t *testing.T) {
	up := helloServer(t)
	port := strconv.Itoa(up.port())
	tests := []struct {
		name   string
		cfg    Config
		policy Policy
		target string
		status int
		reason string
	}{
		{"denied", Config{}, Policy{Mode: ModeAllowlist, Deny: []string{"127.0.0.1"}, Ask: Ask{All: true}}, up.addr(),
			http.StatusForbidden, `denied by rule "127.0.0.1"`},
		{"allowed", Config{}, Policy{Mode: ModeAllowlist, Allow: []string{up.addr()}, Ask: Ask{All: true}}, up.addr(),
			http.StatusOK, ""},
		{"not in the ask list", Config{}, Policy{Mode: ModeAllowlist, Ask: Ask{Patterns: []string{"127.0.0.1:1"}}}, up.addr(),
			http.StatusForbidden, "no allow rule matches " + up.addr()},
		{"loopback the operator did not open", Config{AllowPrivate: []netip.Prefix{}}, askAll, up.addr(),
			http.StatusForbidden, "127.0.0.1 is a loopback address"},
		{"localhost name", Config{}, askAll, "localhost:" + port,
			http.StatusForbidden, "localhost is a loopback (RFC 6761) name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newAskHook()
			tt.cfg.Ask = h.ask
			tp := startProxy(t, tt.cfg, tt.policy)
			resp, body := tp.dial(t, tp.httpAddr).do(t, get(tt.target))
			if resp.StatusCode != tt.status || resp.Header.Get("X-Airlock-Egress-Approval") != "" {
				t.Errorf("answer %s (approval %q): %s; want %d, nobody asked", resp.Status,
					resp.Header.Get("X-Airlock-Egress-Approval"), body, tt.status)
			}
			if ev := tp.waitLog(t, 1)[0]; ev.Reason != tt.reason || ev.Approval != "" {
				t.Errorf("event reason %q, approval %q; want %q and none", ev.Reason, ev.Approval, tt.reason)
			}
			h.noMoreCalls(t)
		})
	}
}

// TestAskApprovedStillChecked: an approval opens the target as the allow
// list would, no further: a name that resolves to loopback is refused
// after it as before.
func TestAskApprovedStillChecked(t *testing.T) {
	up := helloServer(t)
	dns, _ := startDNS(t, map[string]netip.Addr{"sneaky.test": netip.MustParseAddr("127.0.0.1")})
	h := newAskHook()
	tp := startProxy(t, Config{DNS: dns, Ask: h.ask}, askAll)
	target := "sneaky.test:" + strconv.Itoa(up.port())
	c, reply := askProtos[0].start(t, tp, target)
	defer c.Close()
	h.next(t).answer <- AskAnswer{Allow: true, Reason: "by carol"}
	r := wait(t, reply)
	if r.code != http.StatusForbidden || !strings.Contains(r.body, "sneaky.test resolves to loopback address 127.0.0.1") {
		t.Errorf("answer %d %q, want 403 naming the loopback address", r.code, r.body)
	}
	if n := up.accepted(t); n != 0 {
		t.Errorf("the loopback upstream was reached %d times", n)
	}
}

// TestAskHeldCounts: a held connection counts against the sandbox's
// connection limit, and the sandbox's Close ends the wait.
func TestAskHeldCounts(t *testing.T) {
	up := helloServer(t)
	h := newAskHook()
	tp := startProxy(t, Config{Ask: h.ask, MaxConns: 1}, askAll)
	_, reply := askProtos[0].start(t, tp, up.addr())
	call := h.next(t)
	wantClosed(t, tp.dial(t, tp.httpAddr), "second connection with MaxConns 1 and one held")
	if err := tp.sb.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-call.ctx.Done():
	case <-time.After(waitFor):
		t.Fatal("the hook's ctx did not end with the sandbox")
	}
	<-reply
	var got []string
	for _, e := range tp.waitLog(t, 2) {
		got = append(got, e.Reason)
	}
	want := []string{"too many open connections (limit 1)",
		"approval abandoned: the proxy stopped (the daemon stopped, or the sandbox ended)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event reasons (-want +got):\n%s", diff)
	}
}
