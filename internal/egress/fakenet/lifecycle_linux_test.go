package fakenet

import (
	"net"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestStopRemovesEverything checks the teardown Start registers: no link,
// no route, and a later Start can take the addresses again.
func TestStopRemovesEverything(t *testing.T) {
	linuxtest.Require(t)
	for range 2 {
		startStop(t)
		if diff := cmp.Diff("", leftovers(t)); diff != "" {
			t.Fatalf("left behind after stop (-want +got):\n%s", diff)
		}
	}
}

func startStop(t *testing.T) {
	n, stop, err := start(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	// While it runs, every prefix tests name leads into the namespace.
	for _, a := range []string{"203.0.113.200", MetaIP, "10.99.200.1"} {
		out, err := exec.Command("ip", "-o", "route", "get", a).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "dev "+linkPrefix) {
			t.Errorf("ip route get %s: %s %v, want a route over the veth", a, out, err)
		}
	}
	c, err := net.Dial("tcp", net.JoinHostPort(AllowedIP, "7"))
	if err != nil {
		t.Fatalf("dial before stop: %v", err)
	}
	defer c.Close()
	// Stop must cut a connection still open, not wait for it.
	stopped = true
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := n.NS.Close(); err == nil {
		t.Error("stop left the namespace file open")
	}
}

// TestStartRemovesStaleLinks stands in for a test process killed before its
// cleanup ran: the veth it left (here a fake one) must not block the next.
func TestStartRemovesStaleLinks(t *testing.T) {
	linuxtest.Require(t)
	stale := linkPrefix + "st0"
	if out, err := exec.Command("ip", "link", "add", stale, "type", "veth", "peer", "name", linkPrefix+"st1").CombinedOutput(); err != nil {
		t.Fatalf("create stale veth: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "link", "del", stale).Run() })
	Start(t)
	if _, err := net.InterfaceByName(stale); err == nil {
		t.Fatalf("Start left the stale %s in place", stale)
	}
}

// TestRefusesTakenPrefix checks that a host route for one of the fake
// prefixes stops Start instead of being overridden. The route sits in a
// table no rule uses, so it changes nothing on the host while it exists.
func TestRefusesTakenPrefix(t *testing.T) {
	linuxtest.Require(t)
	// Held so that no other process's Start sees the route meanwhile.
	unlock, err := lock(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if out, err := exec.Command("ip", "route", "add", "blackhole", "10.99.5.0/24", "table", "4242").CombinedOutput(); err != nil {
		t.Fatalf("add route: %v: %s", err, out)
	}
	defer exec.Command("ip", "route", "del", "blackhole", "10.99.5.0/24", "table", "4242").Run()
	_, _, err = pickTransit()
	if err == nil || !strings.Contains(err.Error(), "refusing to take over 10.99.0.0/16") {
		t.Fatalf("pickTransit with 10.99.5.0/24 routed: %v, want a refusal", err)
	}
}

// TestStartsWaitForEachOther checks that a second Net waits for the first
// to be removed rather than fighting over the routes.
func TestStartsWaitForEachOther(t *testing.T) {
	linuxtest.Require(t)
	_, stopA, err := start(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	var stopped atomic.Bool
	type result struct {
		stop       func() error
		err        error
		afterStopA bool
	}
	done := make(chan result)
	go func() {
		_, stop, err := start(t.Logf)
		done <- result{stop, err, stopped.Load()}
	}()
	stopped.Store(true)
	errA := stopA()
	r := <-done
	if r.stop != nil {
		t.Cleanup(func() {
			if err := r.stop(); err != nil {
				t.Error(err)
			}
		})
	}
	if errA != nil || r.err != nil {
		t.Fatalf("stop first: %v; start second: %v", errA, r.err)
	}
	if !r.afterStopA {
		t.Fatal("second Net started while the first still existed")
	}
}

// leftovers lists links and routes of a fake internet still on the host.
func leftovers(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{
		{"-o", "link", "show"},
		{"route", "show", "table", "all"},
	} {
		out, err := exec.Command("ip", args...).Output()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(out)) {
			if strings.Contains(line, linkPrefix) || strings.Contains(line, "203.0.113.") ||
				strings.Contains(line, MetaIP) || strings.Contains(line, "10.99.") {
				b.WriteString(line)
			}
		}
	}
	return b.String()
}
