package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
	"github.com/airlockhq/airlock/internal/testenv"
)

// replicaSet is control-plane replicas on one PostgreSQL and the nodes
// that joined them.
type replicaSet struct {
	t        *testing.T
	bin      string
	pg       *testenv.Postgres
	env      []string
	adminKey string
	args     []string
	nodes    map[string]*nodeProc
}

func newReplicaSet(t *testing.T, extra ...string) *replicaSet {
	t.Helper()
	linuxtest.Require(t)
	bin, _ := linuxtest.Build(t)
	rs := &replicaSet{t: t, bin: bin, pg: testenv.StartPostgres(t), nodes: map[string]*nodeProc{}}
	rs.adminKey = "alk_" + hex.EncodeToString(randBytes(24))
	rs.env = []string{"AIRLOCK_MASTER_KEY=" + hex.EncodeToString(randBytes(32)), "AIRLOCK_ADMIN_KEY=" + rs.adminKey}
	rs.args = append([]string{"--store", rs.pg.URL, "--no-local-node", "--node-grace", "1m", "--webhooks-allow-private"}, extra...)
	return rs
}

// replica starts one more replica on a fixed address, so a restart keeps
// its URL.
func (rs *replicaSet) replica() *server {
	addr := freeAddr(rs.t)
	s := &server{t: rs.t, bin: rs.bin, dataDir: tornDownDataDir(rs.t), url: "http://" + addr, adminKey: rs.adminKey, env: rs.env, args: rs.args}
	s.start()
	rs.t.Cleanup(s.stop)
	return s
}

// readyz is a replica's /readyz answer.
type readyz struct {
	Status, Replica, Leader string
}

func getReadyz(s *server) (readyz, error) {
	resp, err := http.Get(s.url + "/readyz")
	if err != nil {
		return readyz{}, err
	}
	defer resp.Body.Close()
	var r readyz
	err = json.NewDecoder(resp.Body).Decode(&r)
	if resp.StatusCode != http.StatusOK {
		return r, errors.New(resp.Status)
	}
	return r, err
}

// waitLeader waits up to within until s says leader leads and it answers
// the API through s.
func waitLeader(t *testing.T, s *server, leader *server, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var last readyz
	var err error
	for time.Since(start) < within {
		if last, err = getReadyz(s); err == nil && last.Leader == leader.url {
			if _, err = s.admin().ListSandboxes(ctx, client.ListOptions{}); err == nil {
				return time.Since(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: leader %q (%v) after %s, want %s", s.url, last.Leader, err, within, leader.url)
	return 0
}

// TestReplicas: two control-plane replicas on one PostgreSQL, without
// Kubernetes (the leader is elected with an advisory lock), and three
// nodes. Every call works through either replica; a key deleted through
// one is refused by the other at once; one leader runs the reaper; kill
// -9 the leader and the other takes over within 15 s, with expiry,
// webhooks, the task queue and a process's output stream going on;
// PostgreSQL restarted mid-run loses nothing acknowledged.
func TestReplicas(t *testing.T) {
	rs := newReplicaSet(t)
	a := rs.replica()
	waitLeader(t, a, a, 30*time.Second)
	b := rs.replica()
	waitLeader(t, b, a, 30*time.Second)
	viaA, viaB := a.admin(), b.admin()

	// Nodes join through the follower: the call is forwarded.
	for _, name := range []string{"r1", "r2", "r3"} {
		tok := must[client.JoinToken](t)(viaB.CreateJoinToken(ctx, 0))
		np := &nodeProc{t: t, bin: rs.bin, dataDir: tornDownDataDir(t), addr: freeAddr(t)}
		np.start("--join", b.url, "--token", tok.Token, "--ca-hash", tok.CAHash, "--name", name)
		t.Cleanup(func() { np.stop(syscall.SIGTERM) })
		rs.nodes[name] = np
	}
	for name := range rs.nodes {
		waitNode(t, viaB, name, "ready", 20*time.Second)
	}

	// Sandboxes made through A spread over the nodes and answer through B.
	ids := spreadSandboxes(t, viaA, viaB)
	must[int64](t)(viaA.WriteFile(ctx, ids[0], "note.txt", strings.NewReader("written through A\n"), 0o644))
	var buf bytes.Buffer
	if _, err := viaB.ReadFile(ctx, ids[0], "note.txt", &buf); err != nil || buf.String() != "written through A\n" {
		t.Errorf("read through B: %q %v", buf.String(), err)
	}

	// A terminal opened through A and attached through B (a WebSocket
	// through the forwarding replica).
	ses := must[client.Session](t)(viaA.CreateSession(ctx, ids[2], client.SessionRequest{Mode: "interactive"}))
	term := must[*client.Terminal](t)(viaB.AttachSession(ctx, ids[2], ses.ID))
	term.Write(ctx, []byte("echo through-$((40+2))\r"))
	readUntil(t, term, "through-42")
	term.Close()

	// A key deleted through A is refused through B within a second.
	must[client.Tenant](t)(viaA.CreateTenant(ctx, client.TenantRequest{Name: "rep"}))
	k := must[client.NewKey](t)(viaA.CreateKey(ctx, "rep", "k"))
	if _, err := client.New(b.url, k.Key).ListSandboxes(ctx, client.ListOptions{}); err != nil {
		t.Fatalf("a new key through B: %v", err)
	}
	if err := viaA.DeleteKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	for {
		_, err := client.New(b.url, k.Key).ListSandboxes(ctx, client.ListOptions{})
		if errors.Is(err, client.ErrUnauthenticated) {
			break
		}
		if time.Since(deleted) > time.Second {
			t.Fatalf("a key deleted through A still works through B after 1 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// One leader reaps: a sandbox expiring is destroyed and recorded once.
	expiring := must[client.Sandbox](t)(viaB.CreateSandbox(ctx, client.CreateRequest{Timeout: 2 * time.Second}))
	waitExpired(t, viaA, expiring.ID)

	// A webhook, and a process whose output is followed through the
	// leader, A.
	var mu sync.Mutex
	var hooked []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Type      string `json:"type"`
			SandboxID string `json:"sandbox_id"`
		}
		json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		hooked = append(hooked, ev.Type+" "+ev.SandboxID)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	must[client.Webhook](t)(viaB.CreateWebhook(ctx, client.WebhookRequest{URL: recv.URL, Events: []string{"sandbox.created"}}))
	ticker := must[client.Process](t)(viaA.StartProcess(ctx, ids[1], client.ExecRequest{Command: "i=0; while :; do i=$((i+1)); echo line$i; sleep 0.1; done"}, "ticker"))
	var seen countingWriter
	followCtx, endFollow := context.WithCancel(ctx)
	followed := make(chan error, 1)
	go func() {
		_, _, _, err := viaA.ProcessOutput(followCtx, ids[1], ticker.Pid, 0, true, &seen, io.Discard)
		followed <- err
	}()
	for seen.n() < 50 {
		time.Sleep(50 * time.Millisecond)
	}

	// Kill -9 the leader: B leads within 15 s.
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Wait()
	a.cmd = nil
	took := waitLeader(t, b, b, 20*time.Second)
	t.Logf("B took over %s after the leader was killed", took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("takeover took %s, want within 15 s", took)
	}
	select {
	case <-followed:
	case <-time.After(5 * time.Second):
		// Still retrying the dead replica: the client gives up on it.
	}
	endFollow()
	offset := seen.n()
	var more countingWriter
	next, _, _, err := viaB.ProcessOutput(ctx, ids[1], ticker.Pid, offset, false, &more, io.Discard)
	if err != nil || next <= offset || more.n() == 0 {
		t.Errorf("resume the output stream through B from %d: next %d, %d bytes, %v", offset, next, more.n(), err)
	}
	if !strings.Contains(more.String(), "line") {
		t.Errorf("resumed output: %q", more.String())
	}

	// After the takeover: calls, expiry, webhooks and the task queue go on.
	for _, id := range ids {
		if r, err := viaB.Exec(ctx, id, client.ExecRequest{Command: "true"}); err != nil || r.ExitCode != 0 {
			t.Errorf("exec on %s after the takeover: %+v %v", id, r, err)
		}
	}
	after := must[client.Sandbox](t)(viaB.CreateSandbox(ctx, client.CreateRequest{Timeout: 2 * time.Second}))
	waitExpired(t, viaB, after.ID)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		mu.Lock()
		got := strings.Join(hooked, ",")
		mu.Unlock()
		if strings.Contains(got, "sandbox.created "+after.ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no webhook for a sandbox made after the takeover: %s", got)
		}
	}
	task := must[client.Task](t)(viaB.CreateTask(ctx, client.TaskRequest{
		Harness: "generic", Prompt: "fix it", Command: []string{"./harness.sh"},
		Files: map[string]string{"harness.sh": taskHarness, "src/main.txt": "broken\n"},
	}))
	must[int64](t)(viaB.FollowTask(ctx, task.ID, 0, func(client.TaskEvent) error { return nil }))
	if got := must[client.Task](t)(viaB.GetTask(ctx, task.ID)); got.State != client.TaskSucceeded {
		t.Errorf("a task after the takeover: %+v", got)
	}

	// A comes back as a follower; PostgreSQL crashes and restarts: both
	// replicas reconnect and nothing acknowledged is lost.
	a.start()
	waitLeader(t, a, b, 30*time.Second)
	rs.pg.Restart(t, true)
	// The leader's session, and with it its lock, died with the server:
	// it steps down (within the elector's 2 s ping) and one replica leads
	// again, starting the daemon anew. Calls meanwhile answer 503, which
	// clients retry; wait until both replicas have answered for 5 s in a
	// row.
	waitStable(t, 5*time.Second, 60*time.Second, a, b)
	for _, id := range ids {
		sb := must[client.Sandbox](t)(viaA.GetSandbox(ctx, id))
		if sb.State != "running" {
			t.Errorf("sandbox %s after PostgreSQL restarted: %s %s", id, sb.State, sb.Reason)
		}
		if v := must[client.AuditVerify](t)(viaA.VerifyAudit(ctx, id)); !v.OK || v.Events == 0 {
			t.Errorf("audit chain of %s: %+v", id, v)
		}
	}
	if _, err := viaA.Exec(ctx, ids[0], client.ExecRequest{Command: "cat note.txt"}); err != nil {
		t.Errorf("exec after PostgreSQL restarted: %v", err)
	}
}

// spreadSandboxes creates six sandboxes through one replica, checks they
// landed on more than one node, and that each answers an exec through the
// other replica; it returns their ids.
func spreadSandboxes(t *testing.T, via, other *client.Client) []string {
	t.Helper()
	var ids []string
	on := map[string]int{}
	for range 6 {
		sb := must[client.Sandbox](t)(via.CreateSandbox(ctx, client.CreateRequest{Timeout: 10 * time.Minute}))
		ids = append(ids, sb.ID)
		on[sb.Node]++
	}
	if len(on) < 2 {
		t.Errorf("6 sandboxes all on one node: %v", on)
	}
	for _, id := range ids {
		r, err := other.Exec(ctx, id, client.ExecRequest{Command: "echo $((6*7))"})
		if err != nil || r.ExitCode != 0 || strings.TrimSpace(r.Stdout) != "42" {
			t.Errorf("exec through the other replica on %s: %+v %v", id, r, err)
		}
	}
	return ids
}

// waitStable waits up to within until every replica has answered a
// sandbox list for stable without a failure.
func waitStable(t *testing.T, stable, within time.Duration, replicas ...*server) {
	t.Helper()
	var since time.Time
	var err error
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		err = nil
		for _, s := range replicas {
			if _, e := s.admin().ListSandboxes(ctx, client.ListOptions{}); e != nil {
				err = e
			}
		}
		switch {
		case err != nil:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= stable:
			return
		}
	}
	t.Fatalf("replicas did not answer steadily for %s within %s: %v", stable, within, err)
}

// waitExpired waits for the sandbox to expire and checks its audit log
// records it once.
func waitExpired(t *testing.T, c *client.Client, id string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		sb, err := c.GetSandbox(ctx, id)
		if err == nil && sb.State == "stopped" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s did not expire: %+v %v", id, sb, err)
		}
	}
	evs := must[[]client.AuditEvent](t)(c.AuditEvents(ctx, id, client.AuditQuery{Types: []string{"sandbox.expired"}}))
	if len(evs) != 1 {
		t.Errorf("sandbox %s: %d sandbox.expired events, want 1", id, len(evs))
	}
}

// countingWriter keeps what it is given, and counts it.
type countingWriter struct{ lockedBuffer }

func (w *countingWriter) n() int64 { return int64(len(w.String())) }

// TestReplicaBadFlags: serve refuses, with exit 2 and a message naming
// what to do, a store URL it cannot use, a replica with a runtime of its
// own, a replica without the shared master key, an advertise URL that is
// not one, and an admin key that is not an API key; nothing starts.
func TestReplicaBadFlags(t *testing.T) {
	bin, _ := linuxtest.Build(t)
	pg := "postgres://nobody:x@127.0.0.1:1/none"
	key := "AIRLOCK_MASTER_KEY=" + strings.Repeat("ab", 32)
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--store", "mysql://db/airlock"}, "want a postgres:// or postgresql:// URL"},
		{[]string{key}, []string{"--store", pg}, "add --no-local-node"},
		{nil, []string{"--store", pg, "--no-local-node"}, "set $AIRLOCK_MASTER_KEY"},
		{[]string{key}, []string{"--store", pg, "--no-local-node", "--addr", "0.0.0.0:0"}, "--advertise-url"},
		{[]string{key}, []string{"--store", pg, "--no-local-node", "--addr", "127.0.0.1:0", "--advertise-url", "ftp://x"}, "want http(s)://HOST:PORT"},
		{[]string{key, "AIRLOCK_ADMIN_KEY=hunter2"}, []string{"--store", pg, "--no-local-node"}, "$AIRLOCK_ADMIN_KEY: want an API key"},
		{[]string{"AIRLOCK_ADMIN_KEY=alk_short"}, nil, "$AIRLOCK_ADMIN_KEY: want an API key"},
	} {
		cmd := exec.Command(bin, append([]string{"serve", "--data-dir", t.TempDir()}, c.args...)...)
		cmd.Env = append(os.Environ(), c.env...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("serve %v: %v: %s (want exit 2 and %q)", c.args, err, out, c.want)
		}
	}
}
