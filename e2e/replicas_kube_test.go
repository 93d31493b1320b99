package e2e

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestReplicasKubernetes: two control-plane replicas on one PostgreSQL
// against a real kube-apiserver, three nodes registering with Leases (no
// join token). The leader holds the Lease airlock-leader, each node its
// Lease airlock-node-NAME; sandboxes spread over the nodes and answer
// through either replica; `nodes ls` shows the nodes' names; a node
// drained with `airlock node drain` (the DaemonSet's preStop) takes no new
// sandbox; the leader killed -9 is replaced within 15 s.
func TestReplicasKubernetes(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ns := testenv.NewNamespaceName("airlock-e2e")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) })

	rs := newReplicaSet(t, "--kubeconfig", kc, "--namespace", ns)
	a := rs.replica()
	waitLeader(t, a, a, 30*time.Second)
	b := rs.replica()
	waitLeader(t, b, a, 30*time.Second)
	viaA, viaB := a.admin(), b.admin()
	names := []string{"kn-a", "kn-b", "kn-c"}
	for _, name := range names {
		np := &nodeProc{t: t, bin: rs.bin, dataDir: tornDownDataDir(t), addr: freeAddr(t)}
		np.start("--kubeconfig", kc, "--namespace", ns, "--name", name)
		t.Logf("node %s on %s", name, np.addr)
		t.Cleanup(func() { np.stop(syscall.SIGTERM) })
		rs.nodes[name] = np
	}
	for _, name := range names {
		waitNode(t, viaB, name, "ready", 30*time.Second)
	}
	leases, err := cs.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holders := map[string]string{}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity != nil {
			holders[l.Name] = *l.Spec.HolderIdentity
		}
	}
	// The holder is A's URL, signed (a follower forwards only to that).
	if !strings.HasPrefix(holders["airlock-leader"], a.url+"#") {
		t.Errorf("Lease airlock-leader held by %q, want %s signed (leases: %v)", holders["airlock-leader"], a.url, holders)
	}
	for _, name := range names {
		if holders["airlock-node-"+name] != name {
			t.Errorf("no Lease airlock-node-%s held by the node (leases: %v)", name, holders)
		}
	}
	if out, code := b.cli(rs.adminKey, "nodes", "ls"); code != 0 || !strings.Contains(out, "kn-a") || !strings.Contains(out, "kn-c") {
		t.Errorf("nodes ls through B: %d\n%s", code, out)
	}

	ids := spreadSandboxes(t, viaA, viaB)

	// The DaemonSet's preStop: the node drains and takes no new sandbox.
	out, err := runBin(rs.bin, "node", "drain", "--kubeconfig", kc, "--namespace", ns, "--name", "kn-a", "--wait", "1s")
	if err != nil {
		t.Fatalf("node drain: %v\n%s", err, out)
	}
	waitNode(t, viaB, "kn-a", "draining", 15*time.Second)
	for range 4 {
		sb := must[client.Sandbox](t)(viaB.CreateSandbox(ctx, client.CreateRequest{Timeout: 10 * time.Minute}))
		if sb.Node == "kn-a" {
			t.Errorf("sandbox %s placed on the drained node", sb.ID)
		}
	}

	// kn-b drained through the API stays drained across its restart; kn-a,
	// drained by its preStop, takes sandboxes again once restarted.
	if _, err := viaA.DrainNode(ctx, "kn-b", true); err != nil {
		t.Fatal(err)
	}
	waitNode(t, viaB, "kn-b", "draining", 15*time.Second)
	for _, name := range []string{"kn-a", "kn-b"} {
		np := rs.nodes[name]
		np.stop(syscall.SIGTERM)
		restarted := time.Now() // the old process is gone
		np.start("--kubeconfig", kc, "--namespace", ns, "--name", name)
		waitRegistered(t, cs, ns, name, restarted)
	}
	waitNode(t, viaB, "kn-a", "ready", 15*time.Second)
	if n := waitNode(t, viaB, "kn-b", "draining", 15*time.Second); n.LastHeartbeat == nil {
		t.Errorf("kn-b after its restart: %+v", n)
	}
	for range 4 {
		sb := must[client.Sandbox](t)(viaB.CreateSandbox(ctx, client.CreateRequest{Timeout: 10 * time.Minute}))
		if sb.Node == "kn-b" {
			t.Errorf("sandbox %s placed on kn-b, drained through the API before its restart", sb.ID)
		}
	}

	// Each replica answers /metrics itself: the daemon's series from the
	// leader alone.
	checkMetrics(t, a, rs.adminKey, true)
	checkMetrics(t, b, rs.adminKey, false)

	// Kill -9 the leader: B takes the Lease within 15 s.
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Wait()
	a.cmd = nil
	took := waitLeader(t, b, b, 30*time.Second)
	t.Logf("B took the Lease %s after the leader was killed", took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("takeover took %s, want within 15 s", took)
	}
	for _, id := range ids {
		if r, err := viaB.Exec(ctx, id, client.ExecRequest{Command: "true"}); err != nil || r.ExitCode != 0 {
			t.Errorf("exec on %s after the takeover: %+v %v", id, r, err)
		}
	}
	checkMetrics(t, b, rs.adminKey, true)
}

// waitRegistered waits until the node's Lease was renewed after since,
// when its old process had stopped: the new one registered (its first
// write).
func waitRegistered(t *testing.T, cs *kubernetes.Clientset, ns, name string, since time.Time) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		l, err := cs.CoordinationV1().Leases(ns).Get(ctx, "airlock-node-"+name, metav1.GetOptions{})
		if err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(since) {
			return
		}
	}
	t.Fatalf("node %s did not renew its Lease after its restart", name)
}

// checkMetrics scrapes s's /metrics with an admin key: its process's
// series and airlock_replica_leader from every replica, the daemon's
// series (airlock_sandboxes) from the leader alone.
func checkMetrics(t *testing.T, s *server, adminKey string, leads bool) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := "\n" + string(body)
	want := "\nairlock_replica_leader 0\n"
	if leads {
		want = "\nairlock_replica_leader 1\n"
	}
	if resp.StatusCode != 200 || !strings.Contains(text, want) || !strings.Contains(text, "\ngo_goroutines ") ||
		strings.Contains(text, "\nairlock_sandboxes{") != leads {
		t.Errorf("%s/metrics (leads %v): %d\n%s", s.url, leads, resp.StatusCode, body)
	}
}

// runBin runs the airlock binary with args and returns its output.
func runBin(bin string, args ...string) (string, error) {
	b, err := exec.Command(bin, args...).CombinedOutput()
	return string(b), err
}
