package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// Helpers of the attacks in attacks_test.go.

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

// hostService is a TCP listener on the host that counts who connected.
type hostService struct {
	ln   net.Listener
	hits atomic.Int64
}

func listenHost(t *testing.T, addr string) *hostService {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h := &hostService{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.hits.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return h
}

func (h *hostService) addr() string { return h.ln.Addr().String() }

func (h *hostService) port() string { return strconv.Itoa(h.ln.Addr().(*net.TCPAddr).Port) }

type egressAttackEnv struct {
	n      *fakenet.Net
	s      *server
	key    string // the hostile tenant's
	c      *client.Client
	loop   *hostService // on 127.0.0.1
	own    *hostService // on the host's own address (fakenet's end of the veth)
	apiHP  string       // the daemon's API, host:port
	apiPrt string
}

func startEgressAttacks(t *testing.T) *egressAttackEnv {
	n := fakenet.Start(t)
	s := startServer(t, "", "--egress-dns", n.DNS)
	admin := s.admin()
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "mallory"}))
	key := must[client.NewKey](t)(admin.CreateKey(ctx, "mallory", "m")).Key
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	return &egressAttackEnv{n: n, s: s, key: key, c: client.New(s.url, key),
		loop: listenHost(t, "127.0.0.1:0"), own: listenHost(t, net.JoinHostPort(n.HostIP.String(), "0")),
		apiHP: u.Host, apiPrt: u.Port()}
}

// storedBytes is the size of the server's database with its WAL.
func storedBytes(t *testing.T, dataDir string) int64 {
	t.Helper()
	var n int64
	for _, f := range []string{"airlock.db", "airlock.db-wal"} {
		if fi, err := os.Stat(filepath.Join(dataDir, f)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// markers returns the data of a sandbox's audit.output_capped events and
// how many exec starts and exits its log has.
func markers(t *testing.T, c *client.Client, id string) (capped []map[string]any, started, exited int) {
	t.Helper()
	for _, e := range must[[]client.AuditEvent](t)(c.AuditEvents(ctx, id, client.AuditQuery{})) {
		switch e.Type {
		case "audit.output_capped":
			var m map[string]any
			json.Unmarshal(e.Data, &m)
			capped = append(capped, m)
		case "exec.started":
			started++
		case "exec.exited":
			exited++
		}
	}
	return capped, started, exited
}

func tenantNamed(t *testing.T, c *client.Client, name string) (client.Tenant, error) {
	t.Helper()
	for _, tn := range must[[]client.Tenant](t)(c.ListTenants(ctx)) {
		if tn.Name == name {
			return tn, nil
		}
	}
	return client.Tenant{}, fmt.Errorf("no tenant %q", name)
}
