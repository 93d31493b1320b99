package cluster

import (
	"context"
	"io"
	"log"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/airlockhq/airlock/internal/testenv"
)

// kubeNamespace connects to the suite's kube-apiserver and makes a
// namespace of t's own, deleted when t ends. The namespace is made with
// client-go's clientset, which the tests may use and the binary not.
func kubeNamespace(t *testing.T) (*Kube, string) {
	t.Helper()
	k, conf, err := Connect(testenv.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.NewNamespaceName("cluster")
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
			t.Logf("delete namespace %s: %v", ns, err)
		}
	})
	return k, ns
}

// waitFor polls cond every 50 ms until it holds, or fails t after
// timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

// running is an elector run by a test, stopped by cancel (and at the
// end of the test).
type running struct {
	Elector
	id     string
	cancel context.CancelFunc
	done   chan struct{}
	seen   chan []bool // the changes it saw, once Changes closed
}

func run(t *testing.T, id string, e Elector) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Elector: e, id: id, cancel: cancel, done: make(chan struct{}), seen: make(chan []bool, 1)}
	go func() {
		defer close(r.done)
		e.Run(ctx)
	}()
	go func() {
		var seen []bool
		for c := range e.Changes() {
			seen = append(seen, c)
		}
		r.seen <- seen
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *running) stop() {
	r.cancel()
	<-r.done
}

// leaders returns those of rs that lead now.
func leaders(rs []*running) []*running {
	var out []*running
	for _, r := range rs {
		if r.IsLeader() {
			out = append(out, r)
		}
	}
	return out
}

// checkOneLeader waits for a leader among rs, checks for a while that
// there is exactly one and that every elector names it, and returns it.
func checkOneLeader(t *testing.T, rs []*running, within time.Duration) *running {
	t.Helper()
	waitFor(t, within, "a leader", func() bool { return len(leaders(rs)) > 0 })
	var leader *running
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		l := leaders(rs)
		if len(l) != 1 {
			t.Fatalf("%d leaders, want 1", len(l))
		}
		if leader != nil && l[0] != leader {
			t.Fatalf("leadership moved from %s to %s with no cause", leader.id, l[0].id)
		}
		leader = l[0]
	}
	waitFor(t, 5*time.Second, "every elector names the leader", func() bool {
		for _, r := range rs {
			if r.Leader() != leader.id {
				return false
			}
		}
		return true
	})
	return leader
}

// discardLog quiets a test server's refusals, which are the point.
func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
