package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// Attacks of issue 18 item 2: a hostile tenant tries to open its
// sandbox's egress to the host and the networks behind it, on every path
// that sets a policy, then from inside the sandbox tries to reach a
// loopback service, the daemon's own API and a service on the host's own
// (public-looking) address. Each attack is refused; nothing is reached.

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

// TestAttackEgressTenantOpensHost: every entry that names only the host,
// its loopback or a private network is a 400 naming the entry and its
// range, on every path that takes a policy, and changes nothing.
func TestAttackEgressTenantOpensHost(t *testing.T) {
	e := startEgressAttacks(t)
	entries := []struct{ entry, want string }{
		{"127.0.0.1:" + e.loop.port(), "loopback"},
		{e.apiHP, "loopback"}, // Airlock's own API
		{"127.0.0.0/8", "loopback range 127.0.0.0/8"},
		{"[::1]:" + e.apiPrt, "loopback"},
		{"localhost:" + e.apiPrt, "loopback"},
		{"*.localhost", "loopback"},
		{"10.0.0.0/8", "private range 10.0.0.0/8"},
		{"192.168.0.0/16", "private"},
		{"169.254.169.254", "metadata"},
		{"100.64.0.0/10", "cgnat"},
		{"fd00::/8", "unique-local"},
		{"224.0.0.0/4", "multicast"},
		{"0x7f.1:" + e.apiPrt, "canonical form"},
		{"[::ffff:127.0.0.1]:" + e.apiPrt, "IPv4-mapped"},
		{"[64:ff9b::7f00:1]:" + e.apiPrt, "nat64-embedded-loopback"},
		{e.own.addr(), "this host's own addresses"},
	}
	sb := must[client.Sandbox](t)(e.c.CreateSandbox(ctx, client.CreateRequest{Network: client.AllowOnly(fakenet.AllowedName)}))
	t.Cleanup(func() { e.c.DeleteSandbox(ctx, sb.ID) })
	cs := mcpHTTP(t, e.s.url, e.key, nil)
	quoted := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, en := range entries {
		allow := fmt.Sprintf(`["pypi.org",%s]`, quoted(en.entry))
		field := `network.allow[1] ` + strings.Trim(quoted(quoted(en.entry)), `"`)
		paths := []struct {
			name, method, path, hdr, body string
		}{
			{"create", "POST", "/v1/sandboxes", "", `{"network":{"mode":"allowlist","allow":` + allow + `}}`},
			{"put network", "PUT", "/v1/sandboxes/" + sb.ID + "/network", "", `{"mode":"allowlist","allow":` + allow + `}`},
			{"template build", "POST", "/v1/sandboxes", "", `{"build":true,"network":{"mode":"allowlist","allow":` + allow + `}}`},
			{"task", "POST", "/v1/tasks", "", `{"harness":"generic","command":["true"],"allow":` + allow + `}`},
			{"e2b allowOut", "POST", "/e2b/sandboxes", "e2b", `{"templateID":"base","network":{"allowOut":` + allow + `}}`},
		}
		for _, p := range paths {
			t.Run(p.name+" "+en.entry, func(t *testing.T) {
				hdr := map[string]string{"Content-Type": "application/json"}
				key := e.key
				if p.hdr == "e2b" {
					hdr["X-API-Key"], key = e.key, ""
				}
				code, body := callWith(t, e.s, key, p.method, p.path, hdr, p.body)
				if code != http.StatusBadRequest || !strings.Contains(body, field) || !strings.Contains(body, en.want) {
					t.Errorf("%s %s = %d %s, want 400 naming %s and %q", p.method, p.path, code, body, field, en.want)
				}
			})
		}
		t.Run("mcp "+en.entry, func(t *testing.T) {
			msg := mcpToolError(t, cs, "sandbox_create", map[string]any{"allow": []string{"pypi.org", en.entry}})
			if !strings.Contains(msg, "allow[1]") || !strings.Contains(msg, en.want) {
				t.Errorf("sandbox_create: %q, want it to name allow[1] and %q", msg, en.want)
			}
		})
	}
	// Nothing changed: the one sandbox, its policy as it was, no task.
	page := must[client.Page](t)(e.c.ListSandboxes(ctx, client.ListOptions{}))
	if len(page.Sandboxes) != 1 {
		t.Errorf("the tenant has %d sandboxes, want the 1 it made", len(page.Sandboxes))
	}
	pol := must[client.NetworkPolicy](t)(e.c.GetNetwork(ctx, sb.ID))
	if len(pol.Allow) != 1 || pol.Allow[0] != fakenet.AllowedName {
		t.Errorf("policy after refused PUTs: %+v", pol)
	}
	if tp := must[client.TaskPage](t)(e.c.ListTasks(ctx, client.TaskListOptions{})); len(tp.Tasks) != 0 {
		t.Errorf("%d tasks stored from refused submissions", len(tp.Tasks))
	}
}

// TestAttackEgressWideRuleReachesHost: a wide rule is accepted, and from
// inside the sandbox nothing on the host answers through it: not a
// loopback listener in any spelling, not the daemon's API, not a name
// resolving to loopback, not a service on the host's own address.
func TestAttackEgressWideRuleReachesHost(t *testing.T) {
	e := startEgressAttacks(t)
	lp, op := e.loop.port(), e.own.port()
	allow := []string{"0.0.0.0/0:" + lp, "0.0.0.0/0:" + e.apiPrt, "0.0.0.0/0:" + op, "[::/0]:" + lp,
		fakenet.LoopName + ":" + lp, fakenet.LoopName + ":" + e.apiPrt, "0.0.0.0/0"}
	sb := must[client.Sandbox](t)(e.c.CreateSandbox(ctx, client.CreateRequest{Network: client.AllowOnly(allow...)}))
	t.Cleanup(func() { e.c.DeleteSandbox(ctx, sb.ID) })
	env := &egressEnv{t: t, n: e.n, s: e.s, c: e.c, sb: sb}
	probe := must[[]byte](t)(os.ReadFile("testdata/netprobe.py"))
	must[int64](t)(e.c.WriteFile(ctx, sb.ID, "netprobe.py", strings.NewReader(string(probe)), 0o644))
	attacks := []struct{ name, target string }{
		{"loopback listener", "127.0.0.1:" + lp},
		{"loopback, short form", "127.1:" + lp},
		{"loopback, decimal", "2130706433:" + lp},
		{"loopback, hex", "0x7f.0.0.1:" + lp},
		{"loopback, octal", "0177.0.0.1:" + lp},
		{"loopback, trailing dot", "127.0.0.1.:" + lp},
		{"loopback, IPv4-mapped", "[::ffff:127.0.0.1]:" + lp},
		{"loopback, IPv4-mapped hex", "[::ffff:7f00:1]:" + lp},
		{"loopback, NAT64", "[64:ff9b::7f00:1]:" + lp},
		{"loopback, IPv6", "[::1]:" + lp},
		{"the daemon's API", e.apiHP},
		{"the daemon's API as 0.0.0.0", "0.0.0.0:" + e.apiPrt},
		{"a name resolving to loopback", fakenet.LoopName + ":" + lp},
		{"the API by a name resolving to loopback", fakenet.LoopName + ":" + e.apiPrt},
		{"localhost", "localhost:" + e.apiPrt},
		{"the host's own address", e.own.addr()},
		{"cloud metadata", fakenet.MetaIP + ":80"},
		{"private network", fakenet.PrivateIP + ":80"},
	}
	for _, a := range attacks {
		t.Run("connect "+a.name, func(t *testing.T) {
			if out := env.probe("connect", a.target); !strings.Contains(out, " 403 ") && !strings.Contains(out, " 400 ") {
				t.Errorf("CONNECT %s: %q, want refused", a.target, out)
			}
		})
		t.Run("http "+a.name, func(t *testing.T) {
			if out := env.probe("get", "http://"+a.target+"/", a.target); !strings.Contains(out, " 403 ") && !strings.Contains(out, " 400 ") {
				t.Errorf("GET http://%s/: %q, want refused", a.target, out)
			}
		})
		t.Run("socks5 "+a.name, func(t *testing.T) {
			out, _ := env.sh(sb.ID, "curl -sS -o /dev/null --max-time 10 --socks5-hostname 127.0.0.1:1080 http://"+a.target+"/ 2>&1; echo curl=$?")
			if strings.HasSuffix(out, "curl=0") {
				t.Errorf("SOCKS5 %s: %q, want refused", a.target, out)
			}
		})
	}
	if n := e.loop.hits.Load(); n != 0 {
		t.Errorf("the loopback listener was reached %d times", n)
	}
	if n := e.own.hits.Load(); n != 0 {
		t.Errorf("the host's own address was reached %d times", n)
	}
	for _, addr := range []string{fakenet.MetaIP + ":80", fakenet.PrivateIP + ":80"} {
		if n := e.n.Hits(addr); n != 0 {
			t.Errorf("%s was reached %d times", addr, n)
		}
	}
	// Every refusal is in the network log, as a denial.
	for _, ev := range must[[]client.NetEvent](t)(e.c.NetworkLog(ctx, sb.ID, 0, 0)) {
		if ev.Decision != "denied" {
			t.Errorf("logged %+v, want only denials", ev)
		}
	}
	// Control: the wide rule does reach the public fake internet.
	if out, _ := env.sh(sb.ID, "curl -sS --max-time 10 http://"+fakenet.AllowedIP+"/"); !strings.Contains(out, "hello from") {
		t.Errorf("control, a public address under 0.0.0.0/0: %q", out)
	}
}
