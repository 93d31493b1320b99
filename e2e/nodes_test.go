package e2e

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// nodeProc is one `airlock node` process on its own data dir.
type nodeProc struct {
	t       *testing.T
	bin     string
	dataDir string
	addr    string
	extra   []string // flags of every start
	cmd     *exec.Cmd
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs the node with args and waits until it serves its API.
func (n *nodeProc) start(args ...string) {
	t := n.t
	args = append(append([]string{"node", "--data-dir", n.dataDir, "--addr", n.addr}, n.extra...), args...)
	n.cmd = exec.Command(n.bin, args...)
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	n.cmd.Stderr = os.Stderr
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	up := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving the node API") {
				up <- struct{}{}
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(60 * time.Second):
		t.Fatal("node did not start")
	}
}

func (n *nodeProc) stop(sig syscall.Signal) {
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Signal(sig)
	n.cmd.Wait()
	n.cmd = nil
}

// waitNode waits up to within for the node to be in state, and returns
// it.
func waitNode(t *testing.T, c *client.Client, name, state string, within time.Duration) client.Node {
	t.Helper()
	var last client.Node
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		n, err := c.GetNode(ctx, name)
		if err == nil && n.State == state {
			return n
		}
		last = n
	}
	t.Fatalf("node %s is %q (last error %q) after %s, want %s", name, last.State, last.LastError, within, state)
	return last
}

// TestNodesJoin: a node joins a server with a one-time token and the CA
// pin, is listed ready with its capacity, is lost within 20 s of a kill
// -9 and ready again when it restarts (without a token), can be drained
// and removed; spent and unknown tokens are refused, and the node
// registry is for admin keys only.
func TestNodesJoin(t *testing.T) {
	s := startServer(t, "")
	out, code := s.cli(s.adminKey, "nodes", "token", "--ttl", "10m")
	if code != 0 {
		t.Fatalf("nodes token: %d: %s", code, out)
	}
	lines := strings.Split(out, "\n")
	tok := strings.TrimSpace(lines[0])
	i := strings.Index(out, "--ca-hash ")
	if !strings.HasPrefix(tok, "alj_") || i < 0 {
		t.Fatalf("nodes token printed %q", out)
	}
	hash := strings.Fields(out[i+len("--ca-hash "):])[0]

	n := &nodeProc{t: t, bin: s.bin, dataDir: tornDownDataDir(t), addr: freeAddr(t)}
	n.start("--join", s.url, "--token", tok, "--ca-hash", hash, "--name", "n1")
	defer func() { n.stop(syscall.SIGTERM) }()
	admin := s.admin()
	got := waitNode(t, admin, "n1", "ready", 10*time.Second)
	if got.Addr != n.addr || got.Capacity.CPUs < 1 || got.Capacity.MemoryMB < 1 || got.Capacity.Sandboxes < 1 || got.Capacity.DiskMB < 1 || got.Version == "" || got.Use.Sandboxes != 0 {
		t.Errorf("node: %+v", got)
	}
	out, code = s.cli(s.adminKey, "nodes", "ls", "--json")
	var list []client.Node
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Name != "n1" || list[0].State != "ready" {
		t.Errorf("nodes ls --json: %d: %s", code, out)
	}
	if out, code = s.cli(s.adminKey, "nodes", "ls"); code != 0 || !strings.Contains(out, "n1") || !strings.Contains(out, "ready") {
		t.Errorf("nodes ls: %d: %s", code, out)
	}

	// The token is spent; an unknown one opens nothing; neither leaves
	// an identity behind.
	for _, bad := range []struct{ token, want string }{{tok, "used already"}, {"alj_0123456789abcdef.nope", "not known"}} {
		other := &nodeProc{t: t, bin: s.bin, dataDir: linuxtest.StateDir(t), addr: freeAddr(t)}
		cmd := exec.Command(s.bin, "node", "--join", s.url, "--token", bad.token, "--data-dir", other.dataDir, "--addr", other.addr, "--name", "n2")
		b, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(b), bad.want) {
			t.Errorf("join with token %q: %v: %s, want %q", bad.token, err, b, bad.want)
		}
		if _, err := os.Stat(other.dataDir + "/node/node.json"); err == nil {
			t.Errorf("a refused join left an identity")
		}
	}
	// A server's data dir is not a node's.
	if b, err := exec.Command(s.bin, "node", "--data-dir", s.dataDir, "--addr", freeAddr(t)).CombinedOutput(); err == nil || !strings.Contains(string(b), "server's data dir") {
		t.Errorf("node on the server's data dir: %v: %s", err, b)
	}

	// kill -9: lost within 20 s; back without a token: ready.
	n.stop(syscall.SIGKILL)
	killed := time.Now()
	lost := waitNode(t, admin, "n1", "lost", 20*time.Second)
	t.Logf("lost %s after kill -9 (%s)", time.Since(killed).Round(100*time.Millisecond), lost.LastError)
	n.start()
	waitNode(t, admin, "n1", "ready", 10*time.Second)

	// Tenants' keys do not see nodes.
	tenant := must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "nodes-t"}))
	key := must[client.NewKey](t)(admin.CreateKey(ctx, tenant.Name, "k"))
	if out, code := s.cli(key.Key, "nodes", "ls"); code == 0 || !strings.Contains(out, "admin") {
		t.Errorf("nodes ls with a tenant key: %d: %s", code, out)
	}
	if out, code := s.cli(key.Key, "nodes", "token"); code == 0 {
		t.Errorf("nodes token with a tenant key: %d: %s", code, out)
	}

	if out, code := s.cli(s.adminKey, "nodes", "drain", "n1"); code != 0 || !strings.Contains(out, "n1: draining") {
		t.Errorf("nodes drain: %d: %s", code, out)
	}
	waitNode(t, admin, "n1", "draining", 5*time.Second)
	if out, code := s.cli(s.adminKey, "nodes", "undrain", "n1"); code != 0 || !strings.Contains(out, "n1: ready") {
		t.Errorf("nodes undrain: %d: %s", code, out)
	}
	if out, code := s.cli(s.adminKey, "nodes", "rm", "nope"); code == 0 || !strings.Contains(out, "not found") {
		t.Errorf("nodes rm of an unknown node: %d: %s", code, out)
	}
	if out, code := s.cli(s.adminKey, "nodes", "rm", "n1"); code != 0 {
		t.Errorf("nodes rm: %d: %s", code, out)
	}
	if list, err := admin.ListNodes(ctx); err != nil || len(list) != 0 {
		t.Errorf("nodes after rm: %v, %v", list, err)
	}
}
