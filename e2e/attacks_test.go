package e2e

// Attacks an outside review ran against Airlock as a hostile tenant and a
// careless operator would, each one a test named for the attack; every
// one of them once worked.

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// tenantOn makes a tenant on s and returns a client with its key.
func tenantOn(t *testing.T, s *server, name string) *client.Client {
	t.Helper()
	must[client.Tenant](t)(s.admin().CreateTenant(ctx, client.TenantRequest{Name: name}))
	key := must[client.NewKey](t)(s.admin().CreateKey(ctx, name, ""))
	return client.New(s.url, key.Key)
}

// hostUIDBase is the host uid that root of sandbox id maps to, read from
// its /proc/self/uid_map.
func hostUIDBase(t *testing.T, c *client.Client, id string) int {
	t.Helper()
	res, err := c.Exec(ctx, id, client.ExecRequest{Cmd: []string{"cat", "/proc/self/uid_map"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("read uid_map in %s: %v %+v", id, err, res)
	}
	f := strings.Fields(res.Stdout)
	if len(f) != 3 || f[0] != "0" {
		t.Fatalf("uid_map of %s: %q", id, res.Stdout)
	}
	base, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// TestAttackSharedUIDRangeAcrossServers: two servers on two data dirs
// used to give their first sandboxes the same host uid range, so tenants
// of different servers shared per-uid kernel limits. Now no two live
// sandboxes on the host share a range, whoever started them.
func TestAttackSharedUIDRangeAcrossServers(t *testing.T) {
	servers := []*server{startServer(t, ""), startServer(t, "")}
	const each = 20
	type owned struct{ server, id string }
	var mu sync.Mutex
	bases := map[int]owned{}
	var wg sync.WaitGroup
	for si, s := range servers {
		c := tenantOn(t, s, "uids")
		for i := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sb, err := c.CreateSandbox(ctx, client.CreateRequest{MemoryMB: 64})
				if err != nil {
					t.Errorf("server %d: create %d: %v", si, i, err)
					return
				}
				base := hostUIDBase(t, c, sb.ID)
				mu.Lock()
				defer mu.Unlock()
				if prev, dup := bases[base]; dup {
					t.Errorf("host uid %d is the root of %s on server %s and of %s on server %d", base, prev.id, prev.server, sb.ID, si)
				}
				bases[base] = owned{fmt.Sprint(si), sb.ID}
			}()
		}
	}
	wg.Wait()
	if len(bases) != 2*each {
		t.Errorf("%d distinct uid ranges for %d sandboxes", len(bases), 2*each)
	}
}

// inotifyHog opens inotify instances until the kernel refuses, prints how
// many it got, and keeps them open.
const inotifyHog = `import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while libc.inotify_init1(0) >= 0:
    n += 1
print(n, ctypes.get_errno(), flush=True)
time.sleep(600)
`

const inotifyOne = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
print("ok" if fd >= 0 else os.strerror(ctypes.get_errno()))
`

// TestAttackInotifyExhaustionAcrossServers: a sandbox of one server opened
// fs.inotify.max_user_instances inotify instances, and a sandbox of
// another server (and root on the host) then failed inotify_init1 with
// EMFILE. Each sandbox's counts are its own now.
func TestAttackInotifyExhaustionAcrossServers(t *testing.T) {
	s1, s2 := startServer(t, ""), startServer(t, "")
	c1, c2 := tenantOn(t, s1, "victim"), tenantOn(t, s2, "hog")
	hog := must[client.Sandbox](t)(c2.CreateSandbox(ctx, client.CreateRequest{}))
	victim := must[client.Sandbox](t)(c1.CreateSandbox(ctx, client.CreateRequest{}))
	proc := must[client.Process](t)(c2.StartProcess(ctx, hog.ID, client.ExecRequest{Cmd: []string{"python3", "-c", inotifyHog}}, "hog"))
	var out strings.Builder
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "\n"); time.Sleep(50 * time.Millisecond) {
		out.Reset()
		if _, _, _, err := c2.ProcessOutput(ctx, hog.ID, proc.Pid, 0, false, &out, &out); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hog never reported: %q", out.String())
		}
	}
	f := strings.Fields(out.String())
	if n, _ := strconv.Atoi(f[0]); n < 64 || len(f) < 2 || f[1] != strconv.Itoa(int(syscall.EMFILE)) {
		t.Fatalf("the hog got %q inotify instances: it must have hit the per-user limit", out.String())
	}
	res, err := c1.Exec(ctx, victim.ID, client.ExecRequest{Cmd: []string{"python3", "-c", inotifyOne}})
	if err != nil || strings.TrimSpace(res.Stdout) != "ok" {
		t.Errorf("inotify_init1 in another server's sandbox: %v %q %q", err, res.Stdout, res.Stderr)
	}
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		t.Errorf("inotify_init1 as root on the host: %v", err)
	} else {
		syscall.Close(fd)
	}
}
