package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/e2e/modelmock"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// cluster is a control plane without a runtime of its own and nodes
// joined to it, each on its own data dir and port.
type cluster struct {
	s     *server
	admin *client.Client
	nodes map[string]*nodeProc
	net   *fakenet.Net
}

func startCluster(t *testing.T, names ...string) *cluster {
	t.Helper()
	n := fakenet.Start(t)
	caFile := filepath.Join(t.TempDir(), "upstream-ca.pem")
	if err := os.WriteFile(caFile, n.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "", "--no-local-node", "--node-grace", "20s", "--egress-dns", n.DNS, "--egress-ca-file", caFile)
	c := &cluster{s: s, admin: s.admin(), nodes: map[string]*nodeProc{}, net: n}
	for _, name := range names {
		tok := must[client.JoinToken](t)(c.admin.CreateJoinToken(ctx, 0))
		// The node's proxies reach the fake internet as the control
		// plane's would.
		np := &nodeProc{t: t, bin: s.bin, dataDir: tornDownDataDir(t), addr: freeAddr(t), extra: []string{"--egress-dns", n.DNS, "--egress-ca-file", caFile}}
		np.start("--join", s.url, "--token", tok.Token, "--ca-hash", tok.CAHash, "--name", name)
		t.Cleanup(func() { np.stop(syscall.SIGTERM) })
		c.nodes[name] = np
	}
	for _, name := range names {
		waitNode(t, c.admin, name, "ready", 15*time.Second)
	}
	return c
}

// TestNodesCluster: a control plane with no runtime of its own and three
// nodes. Sandboxes land on all three; on each, every kind of call works
// through the control plane's one address. A node killed -9 is lost, its
// sandboxes unreachable with calls answered 503, and creates go to the
// others; restarted within the grace period, its sandboxes run again with
// their background processes; lost past it, they fail, and the node
// destroys them when it returns.
func TestNodesCluster(t *testing.T) {
	c := startCluster(t, "n1", "n2", "n3")
	admin := c.admin
	secretValue := "sk-REAL-" + hex.EncodeToString(randBytes(16))
	must[client.Secret](t)(admin.CreateSecret(ctx, client.SecretRequest{Name: "API_KEY", Value: secretValue, Hosts: []string{fakenet.AllowedName}}))

	// 30 sandboxes land on all three nodes.
	on := map[string][]string{}
	for range 30 {
		sb := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Timeout: 10 * time.Minute,
			Secrets: []string{"API_KEY"}, Network: client.AllowOnly(fakenet.AllowedName)}))
		if sb.Node == "" {
			t.Fatalf("sandbox %s has no node", sb.ID)
		}
		on[sb.Node] = append(on[sb.Node], sb.ID)
	}
	for _, name := range []string{"n1", "n2", "n3"} {
		if len(on[name]) == 0 {
			t.Fatalf("no sandbox on %s: %v", name, on)
		}
	}
	if len(on) != 3 {
		t.Errorf("sandboxes on %v", on)
	}
	if out, code := c.s.cli(c.s.adminKey, "ls"); code != 0 || !strings.Contains(out, "NODE") || !strings.Contains(out, "n2") {
		t.Errorf("airlock ls: %d: %s", code, out)
	}

	bg := map[string]int{}          // node -> pid of a background process in its first sandbox
	sessions := map[string]string{} // node -> a session of its first sandbox
	for _, name := range []string{"n1", "n2", "n3"} {
		id := on[name][0]
		got := must[client.Sandbox](t)(admin.GetSandbox(ctx, id))
		if got.Node != name || got.State != "running" {
			t.Errorf("GET %s: node %q state %q, want %s running", id, got.Node, got.State, name)
		}
		// Exec: one-shot, streamed, background.
		res := must[client.ExecResult](t)(admin.Exec(ctx, id, client.ExecRequest{Command: "echo hi-$(hostname | cut -c1-2); exit 3"}))
		if res.ExitCode != 3 || !strings.HasPrefix(res.Stdout, "hi-") {
			t.Errorf("%s: exec: %+v", name, res)
		}
		var out, errb bytes.Buffer
		res = must[client.ExecResult](t)(admin.ExecStream(ctx, id, client.ExecRequest{Command: "for i in 1 2 3; do echo $i; done; echo e >&2"}, &out, &errb))
		if res.ExitCode != 0 || out.String() != "1\n2\n3\n" || errb.String() != "e\n" {
			t.Errorf("%s: streamed exec: %+v %q %q", name, res, out.String(), errb.String())
		}
		p := must[client.Process](t)(admin.StartProcess(ctx, id, client.ExecRequest{Command: "while :; do sleep 1; done"}, "loop"))
		bg[name] = p.Pid
		// A session keeps its shell's state.
		ses := must[client.Session](t)(admin.CreateSession(ctx, id, client.SessionRequest{}))
		sessions[name] = ses.ID
		must[client.SessionResult](t)(admin.SessionExec(ctx, id, ses.ID, "cd /tmp && X=kept", 10*time.Second))
		if r := must[client.SessionResult](t)(admin.SessionExec(ctx, id, ses.ID, "echo $PWD $X", 10*time.Second)); strings.TrimSpace(r.Output) != "/tmp kept" {
			t.Errorf("%s: session: %q", name, r.Output)
		}
		// A terminal over WebSocket.
		tses := must[client.Session](t)(admin.CreateSession(ctx, id, client.SessionRequest{Mode: "interactive", Cols: 80, Rows: 24}))
		term := must[*client.Terminal](t)(admin.AttachSession(ctx, id, tses.ID))
		term.Write(ctx, []byte("echo term-$((6*7))\r"))
		readUntil(t, term, "term-42")
		term.Close()
		// The port proxy.
		must[int64](t)(admin.WriteFile(ctx, id, "echo.py", strings.NewReader(echoServer), 0o644))
		must[client.Process](t)(admin.StartProcess(ctx, id, client.ExecRequest{Cmd: []string{"python3", "echo.py"}}, "web"))
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, body := callWith(t, c.s, c.s.adminKey, "GET", "/v1/sandboxes/"+id+"/ports/8000/x", nil, "")
			if code == 201 && strings.Contains(body, `"path": "/x"`) || code == 201 && strings.Contains(body, `"path":"/x"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: port proxy: %d %s", name, code, body)
			}
			time.Sleep(200 * time.Millisecond)
		}
		// Egress to an allowed host of the fake internet, the secret
		// injected on the way; the sandbox holds only its placeholder.
		r := must[client.ExecResult](t)(admin.Exec(ctx, id, client.ExecRequest{Command: `curl -sS --max-time 20 -H "Authorization: Bearer $API_KEY" https://allowed.test/echo`}))
		if r.ExitCode != 0 || strings.Contains(r.Stdout, secretValue) || !strings.Contains(r.Stdout, "Authorization: Bearer airlock-ph-") {
			t.Errorf("%s: egress with a secret: %+v", name, r)
		}
		if got := lastAuthorization(t, c.net, fakenet.AllowedName); got != "Bearer "+secretValue {
			t.Errorf("%s: the allowed host received %q", name, got)
		}
		// Metering and the audit chain, kept by the control plane. A
		// node's egress events follow by long poll, and a connection's
		// bytes count when it closes: the meter has them once the event
		// has come, shortly after the exec returned.
		var m client.SandboxMetrics
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			m = must[client.SandboxMetrics](t)(admin.SandboxMetrics(ctx, id))
			if m.EgressBytesOut > 0 || time.Now().After(deadline) {
				break
			}
		}
		if m.CPUSeconds <= 0 || m.ExecCount < 3 || m.EgressBytesOut <= 0 {
			t.Errorf("%s: metrics %+v", name, m)
		}
		if v := must[client.AuditVerify](t)(admin.VerifyAudit(ctx, id)); !v.OK || v.Events < 5 {
			t.Errorf("%s: audit verify %+v", name, v)
		}
	}

	// Files: 200 MB up to a sandbox on n1 and back, checked by hash.
	big := on["n1"][0]
	h := sha256.New()
	src := io.TeeReader(io.LimitReader(rand.Reader, 200<<20), h)
	if n := must[int64](t)(admin.WriteFile(ctx, big, "big.bin", src, 0o644)); n != 200<<20 {
		t.Fatalf("wrote %d bytes", n)
	}
	want := h.Sum(nil)
	h2 := sha256.New()
	if n := must[int64](t)(admin.ReadFile(ctx, big, "big.bin", h2)); n != 200<<20 || !bytes.Equal(h2.Sum(nil), want) {
		t.Errorf("200 MB round trip: %d bytes, hash equal %v", n, bytes.Equal(h2.Sum(nil), want))
	}

	// kill -9 of n2: lost, its sandboxes unreachable and their calls 503;
	// creates go to n1 and n3.
	victim := on["n2"][0]
	ticker := must[client.Process](t)(admin.StartProcess(ctx, victim, client.ExecRequest{Command: "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.2; done"}, "ticker"))
	n2 := c.nodes["n2"]
	n2.stop(syscall.SIGKILL)
	waitNode(t, admin, "n2", "lost", 20*time.Second)
	if got := must[client.Sandbox](t)(admin.GetSandbox(ctx, victim)); got.State != "unreachable" || !strings.Contains(got.Reason, "n2") {
		t.Errorf("sandbox on a lost node: %q %q", got.State, got.Reason)
	}
	if code, body := callWith(t, c.s, c.s.adminKey, "POST", "/v1/sandboxes/"+victim+"/exec", map[string]string{"Content-Type": "application/json"}, `{"command":"true"}`); code != http.StatusServiceUnavailable || !strings.Contains(body, "n2") {
		t.Errorf("exec on a lost node: %d %s", code, body)
	}
	for range 6 {
		sb := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{}))
		if sb.Node == "n2" {
			t.Errorf("sandbox %s placed on the lost node", sb.ID)
		}
	}
	// Back within the grace period: running again, its background
	// process alive, new calls served.
	n2.start()
	waitNode(t, admin, "n2", "ready", 15*time.Second)
	if got := must[client.Sandbox](t)(admin.GetSandbox(ctx, victim)); got.State != "running" {
		t.Errorf("sandbox after its node came back: %q %q", got.State, got.Reason)
	}
	if r := must[client.ExecResult](t)(admin.Exec(ctx, victim, client.ExecRequest{Command: fmt.Sprintf("kill -0 %d && echo alive", bg["n2"])})); strings.TrimSpace(r.Stdout) != "alive" {
		t.Errorf("background process after the node's restart: %+v", r)
	}
	// What the control plane followed there goes on: the process's output
	// is followed again, the session's shell takes commands.
	outputOf := func() int64 {
		for _, p := range must[[]client.Process](t)(admin.ListProcesses(ctx, victim)) {
			if p.Pid == ticker.Pid {
				if p.State != "running" {
					t.Errorf("the ticker after the node's restart: %+v", p)
				}
				return p.OutputBytes
			}
		}
		t.Fatalf("the ticker is not listed after the node's restart")
		return 0
	}
	before := outputOf()
	for deadline := time.Now().Add(20 * time.Second); outputOf() <= before; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the ticker's output is not followed after the node's restart")
			break
		}
	}
	if r, err := admin.SessionExec(ctx, victim, sessions["n2"], "echo $PWD $X", 20*time.Second); err != nil || strings.TrimSpace(r.Output) != "/tmp kept" {
		t.Errorf("session after the node's restart: %+v %v", r, err)
	}
	// Its egress proxy listens in the sandbox again within a few seconds.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r := must[client.ExecResult](t)(admin.Exec(ctx, victim, client.ExecRequest{Command: `curl -sS --max-time 20 https://allowed.test/`}))
		if r.ExitCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("egress after the node's restart: %+v", r)
			break
		}
	}

	// Drained, n3 takes nothing new; rm is refused while it holds
	// sandboxes.
	must[client.Node](t)(admin.DrainNode(ctx, "n3", true))
	for range 4 {
		if sb := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{})); sb.Node == "n3" {
			t.Errorf("sandbox %s placed on a drained node", sb.ID)
		}
	}
	if err := admin.RemoveNode(ctx, "n3", false); err == nil || !strings.Contains(err.Error(), "holds") {
		t.Errorf("rm of a node holding sandboxes: %v", err)
	}
	// Forced, its sandboxes fail: nothing reaches them again.
	if err := admin.RemoveNode(ctx, "n3", true); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got := must[client.Sandbox](t)(admin.GetSandbox(ctx, on["n3"][0]))
		if got.State == "failed" && strings.Contains(got.Reason, "node removed") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("a sandbox of a removed node: %q %q", got.State, got.Reason)
			break
		}
	}

	// Lost past the grace period (20 s here): its sandboxes fail; back,
	// the node destroys them.
	n2.stop(syscall.SIGKILL)
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := must[client.Sandbox](t)(admin.GetSandbox(ctx, victim))
		if got.State == "failed" {
			if !strings.Contains(got.Reason, "node lost") {
				t.Errorf("reason %q", got.Reason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox on a node lost past its grace: %q %q", got.State, got.Reason)
		}
		time.Sleep(time.Second)
	}
	n2.start()
	waitNode(t, admin, "n2", "ready", 15*time.Second)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		ids, _ := os.ReadDir(filepath.Join(n2.dataDir, "ids"))
		if len(ids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the returning node kept %d sandboxes that failed while it was lost", len(ids))
		}
	}
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// lastAuthorization is the Authorization header of the newest request
// the named host of the fake internet received.
func lastAuthorization(t *testing.T, n *fakenet.Net, name string) string {
	t.Helper()
	seen := n.Seen()
	for i := len(seen) - 1; i >= 0; i-- {
		if seen[i].Name == name {
			return seen[i].Header.Get("Authorization")
		}
	}
	t.Fatalf("%s received no request", name)
	return ""
}

// TestNodesControlPlaneRestart: a task runs on a node; a control plane
// that restarts while one of its nodes is down keeps that node's
// sandboxes (unreachable, not failed), and takes them up when the node is
// back: commands, egress and the processes it follows.
func TestNodesControlPlaneRestart(t *testing.T) {
	c := startCluster(t, "m1")
	admin := c.admin
	// A task runs on the node: its harness, its events, its artifacts.
	task := must[client.Task](t)(admin.CreateTask(ctx, client.TaskRequest{
		Harness: "generic", Prompt: "fix it", Command: []string{"./harness.sh"},
		Files:     map[string]string{"harness.sh": taskHarness, "src/main.txt": "broken\n"},
		Artifacts: []string{"answer.txt"},
	}))
	must[int64](t)(admin.FollowTask(ctx, task.ID, 0, func(client.TaskEvent) error { return nil }))
	if got := must[client.Task](t)(admin.GetTask(ctx, task.ID)); got.State != client.TaskSucceeded || got.Summary != "done" {
		t.Errorf("task on a node: %+v", got)
	}
	if arts := must[client.TaskArtifacts](t)(admin.TaskArtifacts(ctx, task.ID)); len(arts.Artifacts) != 1 || arts.Diff == nil || !strings.Contains(arts.Diff.Text, "+fixed") {
		t.Errorf("task artifacts on a node: %+v", arts)
	}
	sb := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Timeout: 10 * time.Minute, Network: client.AllowOnly(fakenet.AllowedName)}))
	ticker := must[client.Process](t)(admin.StartProcess(ctx, sb.ID, client.ExecRequest{Command: "while :; do echo tick; sleep 0.2; done"}, "ticker"))
	m1 := c.nodes["m1"]
	m1.stop(syscall.SIGKILL)
	c.s.stop()
	c.s.start()
	admin = c.s.admin()
	if got := must[client.Sandbox](t)(admin.GetSandbox(ctx, sb.ID)); got.State != "running" && got.State != "unreachable" {
		t.Fatalf("a sandbox whose node was down while the control plane restarted: %q %q", got.State, got.Reason)
	}
	m1.start()
	waitNode(t, admin, "m1", "ready", 20*time.Second)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		// -k: no secret is bound, so the sandbox does not trust the fake
		// internet's CA; what counts is that the proxy carries it.
		r, err := admin.Exec(ctx, sb.ID, client.ExecRequest{Command: `curl -sSk --max-time 20 https://allowed.test/`})
		if err == nil && r.ExitCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("egress after the node came back: %+v %v", r, err)
		}
	}
	var last int64
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		for _, p := range must[[]client.Process](t)(admin.ListProcesses(ctx, sb.ID)) {
			if p.Pid == ticker.Pid && p.State == "running" {
				if last > 0 && p.OutputBytes > last {
					return
				}
				last = p.OutputBytes
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ticker is not followed after the node came back (output %d)", last)
		}
	}
}

// TestNodesEgressOnNode: a sandbox's egress proxy runs on its node. Its
// requests, with the secret injected, go on while the control plane is
// killed -9 and down; the events the node logged meanwhile reach the
// control plane's network and audit logs when it is back, none lost.
func TestNodesEgressOnNode(t *testing.T) {
	c := startCluster(t, "e1")
	admin := c.admin
	secretValue := "sk-REAL-" + hex.EncodeToString(randBytes(16))
	must[client.Secret](t)(admin.CreateSecret(ctx, client.SecretRequest{Name: "API_KEY", Value: secretValue, Hosts: []string{fakenet.AllowedName}}))
	sb := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Timeout: 10 * time.Minute,
		Secrets: []string{"API_KEY"}, Network: client.AllowOnly(fakenet.AllowedName)}))
	if _, err := os.Stat(filepath.Join(c.nodes["e1"].dataDir, "node", "egress.journal")); err != nil {
		t.Fatalf("the node keeps no egress journal: %v", err)
	}
	// A question the node's proxy puts to a person reaches the control
	// plane's approvals; the answer goes back to the held connection.
	must[client.NetworkPolicy](t)(admin.SetNetwork(ctx, sb.ID, client.NetworkPolicy{Mode: client.NetworkAllowlist,
		Allow: []string{fakenet.AllowedName}, Ask: client.Ask{All: true}, AskTimeoutS: 60}))
	done := curlBG(t, admin, sb.ID, "http://denied.test/held")
	ap := pending(t, admin, sb.ID, nil)
	if ap.Egress == nil || ap.Egress.Host != fakenet.DeniedName || ap.Egress.Port != 80 {
		t.Errorf("the question: %+v", ap)
	}
	must[client.Approval](t)(admin.DecideApproval(ctx, ap.ID, client.ApprovalDecision{Decision: "allow"}))
	select {
	case out := <-done:
		if !strings.Contains(out, "HTTP/1.1 200") {
			t.Errorf("the approved request: %q", out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the approved request did not finish")
	}

	const n = 30
	seen := func() (paths []string) {
		for _, r := range c.net.Seen() {
			if r.Name == fakenet.AllowedName && strings.HasPrefix(r.Path, "/down-") {
				if got := r.Header.Get("Authorization"); got != "Bearer "+secretValue {
					t.Errorf("%s: Authorization %q", r.Path, got)
				}
				paths = append(paths, r.Path)
			}
		}
		return paths
	}
	must[client.Process](t)(admin.StartProcess(ctx, sb.ID, client.ExecRequest{Command: fmt.Sprintf(
		`for i in $(seq 1 %d); do curl -sS -o /dev/null --max-time 5 -H "Authorization: Bearer $API_KEY" https://allowed.test/down-$i; sleep 0.3; done`, n)}, "requests"))
	waitUntil(t, 20*time.Second, "the first request", func() bool { return len(seen()) > 0 })

	// kill -9 of the control plane: the node's proxy serves on.
	c.s.cmd.Process.Kill()
	c.s.cmd.Wait()
	c.s.cmd = nil
	atKill := len(seen())
	waitUntil(t, 20*time.Second, "requests while the control plane is down", func() bool { return len(seen()) >= atKill+5 })
	c.s.start()
	admin = c.s.admin()
	waitUntil(t, 30*time.Second, "every request", func() bool { return len(seen()) == n })

	// Every request is in the network log and the audit log, in order.
	var events []client.NetEvent
	var all []client.NetEvent
	defer func() {
		if t.Failed() {
			for _, e := range all {
				t.Logf("net event %+v", e)
			}
		}
	}()
	waitUntil(t, 30*time.Second, "the node's events at the control plane", func() bool {
		events = nil
		all = must[[]client.NetEvent](t)(admin.NetworkLog(ctx, sb.ID, 0, 1000))
		for _, e := range all {
			if e.Protocol == "https" && e.Kind == "" && e.Host == fakenet.AllowedName && e.Decision == "allowed" {
				events = append(events, e)
			}
		}
		return len(events) == n
	})
	for i := 1; i < len(events); i++ {
		if events[i].Time.Before(events[i-1].Time) {
			t.Errorf("network log out of order at %d: %v before %v", i, events[i].Time, events[i-1].Time)
		}
	}
	injected := 0
	for _, e := range must[[]client.AuditEvent](t)(admin.AuditEvents(ctx, sb.ID, client.AuditQuery{Limit: 1000})) {
		if e.Type == "secret.injected" {
			injected++
		}
	}
	if injected < n {
		t.Errorf("%d secret.injected audit events, want at least %d", injected, n)
	}
	if v := must[client.AuditVerify](t)(admin.VerifyAudit(ctx, sb.ID)); !v.OK {
		t.Errorf("audit verify %+v", v)
	}
	if m := must[client.SandboxMetrics](t)(admin.SandboxMetrics(ctx, sb.ID)); m.EgressBytesOut <= 0 {
		t.Errorf("metrics %+v", m)
	}
}

// waitUntil polls cond every 100 ms until it holds or within passes.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
	}
}

// TestNodesBudgetOnNode: a budget holds on the node that proxies the
// sandbox's model calls: three calls back to back under a budget of two
// calls' tokens, the third refused 429. (That it holds however fast the
// third call comes, the node waiting until the control plane has counted
// the first two, is egresshost's TestBudgetGateWaitsForTheCount.)
func TestNodesBudgetOnNode(t *testing.T) {
	c := startCluster(t, "b1")
	u := mockUsage
	mock := modelmock.New(modelmock.Script{Usage: &u})
	c.net.Handle("/v1/", mock)
	admin := c.admin
	must[client.Secret](t)(admin.CreateSecret(ctx, client.SecretRequest{Name: "MODEL_KEY", Value: "sk-REAL-" + randHex(16),
		Hosts: []string{fakenet.AllowedName}}))
	script := `for i in 1 2 3; do
  curl -sS -o out$i.json -w '%{http_code}\n' -H "Authorization: Bearer $MODEL_KEY" -H 'content-type: application/json' \
    -d '{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}' https://` + fakenet.AllowedName + `/v1/chat/completions >> codes.txt
done
cat codes.txt out3.json`
	const rounds = 3
	for round := range rounds {
		sb := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Secrets: []string{"MODEL_KEY"},
			Budget: client.TokenBudget(3000)}))
		res := must[client.ExecResult](t)(admin.Exec(ctx, sb.ID, client.ExecRequest{Command: script, Timeout: time.Minute}))
		if !strings.HasPrefix(res.Stdout, "200\n200\n429\n") || !strings.Contains(res.Stdout, "budget") {
			t.Errorf("round %d: three calls under a two-call budget on a node:\n%s%s", round, res.Stdout, res.Stderr)
		}
		admin.DeleteSandbox(ctx, sb.ID)
	}
	if got := len(mock.Requests()); got != 2*rounds {
		t.Errorf("the model got %d calls, want %d", got, 2*rounds)
	}
}
