package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// Attacks an outside review ran against Airlock as a hostile tenant and a
// careless operator would (issue 18's security items), each a test named
// for the attack, against real `airlock serve` processes; every one of them
// once worked. In order: tenants of two servers sharing host uid ranges and
// per-user kernel limits; a tenant opening its sandbox's egress to the host
// and the networks behind it; a tenant making the host keep unbounded
// storage, and a data dir filling up. Their helpers are in
// attack_helpers_test.go.

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
	// Made through the E2B facade, whose allowOut takes the same entries.
	list, _ := json.Marshal(allow)
	code, body := callWith(t, e.s, "", "POST", "/e2b/sandboxes", map[string]string{"Content-Type": "application/json", "X-API-Key": e.key},
		`{"templateID":"base","network":{"allowOut":`+string(list)+`}}`)
	var made struct {
		SandboxID string `json:"sandboxID"`
	}
	if json.Unmarshal([]byte(body), &made); code != http.StatusCreated || made.SandboxID == "" {
		t.Fatalf("E2B create with allowOut %s = %d %s, want 201", list, code, body)
	}
	t.Cleanup(func() { e.c.DeleteSandbox(ctx, made.SandboxID) })
	sb := must[client.Sandbox](t)(e.c.GetSandbox(ctx, made.SandboxID))
	if pol := must[client.NetworkPolicy](t)(e.c.GetNetwork(ctx, sb.ID)); !slices.Equal(pol.Allow, allow) {
		t.Fatalf("policy of the E2B sandbox: %+v, want allow %v", pol, allow)
	}
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

// TestAttackOutputFloodPastStorageQuota: a tenant with a 1 MiB storage
// quota pours 16 MB of output out of a sandbox (before the quota, each
// sandbox could make the host keep 64 MiB for 30 days, and any number of
// sandboxes could). Recording stops at the quota with one marker per
// sandbox saying why, the chain verifies, commands are still recorded,
// the database grows by about the quota, the tenant's next sandbox and
// task are refused with 429 storage_quota, another tenant is unaffected,
// and usage reports what the tenant keeps.
func TestAttackOutputFloodPastStorageQuota(t *testing.T) {
	s := startServer(t, "")
	admin := s.admin()
	if out, code := s.cli(s.adminKey, "tenants", "create", "flood", "--max-storage", "1M"); code != 0 {
		t.Fatalf("tenants create --max-storage: exit %d: %s", code, out)
	}
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "bystander"}))
	floodKey := must[client.NewKey](t)(admin.CreateKey(ctx, "flood", "")).Key
	flood := client.New(s.url, floodKey)
	bystander := client.New(s.url, must[client.NewKey](t)(admin.CreateKey(ctx, "bystander", "")).Key)
	for _, tn := range must[[]client.Tenant](t)(admin.ListTenants(ctx)) {
		want := map[string]int64{"flood": 1, "bystander": 2048}[tn.Name]
		if want != 0 && tn.MaxStorageMB != want {
			t.Errorf("tenant %s: max_storage_mb %d, want %d", tn.Name, tn.MaxStorageMB, want)
		}
	}

	first := must[client.Sandbox](t)(flood.CreateSandbox(ctx, client.CreateRequest{}))
	second := must[client.Sandbox](t)(flood.CreateSandbox(ctx, client.CreateRequest{}))
	before := storedBytes(t, s.dataDir)
	res := must[client.ExecResult](t)(flood.Exec(ctx, first.ID, client.ExecRequest{Command: "head -c 16000000 /dev/zero | tr '\\0' a; echo"}))
	if res.ExitCode != 0 {
		t.Fatalf("flood: %+v", res.ExitCode)
	}
	for _, id := range []string{first.ID, second.ID} {
		res := must[client.ExecResult](t)(flood.Exec(ctx, id, client.ExecRequest{Command: "echo still-runs"}))
		if res.Stdout != "still-runs\n" {
			t.Errorf("sandbox %s after the flood: %q", id, res.Stdout)
		}
	}

	t.Run("recording stops with one marker per sandbox, saying why", func(t *testing.T) {
		for _, id := range []string{first.ID, second.ID} {
			capped, started, exited := markers(t, flood, id)
			if len(capped) != 1 || capped[0]["reason"] != "storage_quota" || capped[0]["limit_bytes"] != float64(1<<20) {
				t.Errorf("sandbox %s: markers %v; want one with reason storage_quota and limit_bytes 1 MiB", id, capped)
			}
			if want := map[string]int{first.ID: 2, second.ID: 1}[id]; started != want || exited != want {
				t.Errorf("sandbox %s: %d exec starts, %d exits recorded; want %d of each", id, started, exited, want)
			}
		}
	})
	t.Run("the chains verify", func(t *testing.T) {
		for _, id := range []string{first.ID, second.ID} {
			if out, code := s.cli(floodKey, "audit", "verify", id); code != 0 {
				t.Errorf("airlock audit verify %s: exit %d: %s", id, code, out)
			}
		}
	})
	t.Run("the host keeps about the quota, not the flood", func(t *testing.T) {
		if grew := storedBytes(t, s.dataDir) - before; grew > 8<<20 {
			t.Errorf("the database grew by %d bytes under a 1 MiB quota", grew)
		}
	})
	t.Run("new sandboxes and tasks get 429 storage_quota", func(t *testing.T) {
		for what, req := range map[string]struct{ path, body string }{
			"sandbox": {"/v1/sandboxes", `{}`},
			"task":    {"/v1/tasks", `{"harness":"generic","command":["true"]}`},
		} {
			status, body := call(t, s, floodKey, "POST", req.path, "application/json", req.body)
			var eb struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal([]byte(body), &eb)
			if status != 429 || eb.Error.Code != "storage_quota" ||
				!strings.Contains(eb.Error.Message, "keeps") || !strings.Contains(eb.Error.Message, "1.0 MiB storage quota") {
				t.Errorf("%s create: %d %s; want 429 storage_quota with the usage and the quota", what, status, body)
			}
		}
		if _, err := flood.CreateSandbox(ctx, client.CreateRequest{}); !errors.Is(err, client.ErrLimitExceeded) {
			t.Errorf("the client's kind of a storage_quota answer: %v", err)
		}
	})
	t.Run("another tenant records and creates as before", func(t *testing.T) {
		sb := must[client.Sandbox](t)(bystander.CreateSandbox(ctx, client.CreateRequest{}))
		must[client.ExecResult](t)(bystander.Exec(ctx, sb.ID, client.ExecRequest{Command: "head -c 100000 /dev/zero | tr '\\0' b"}))
		if capped, started, _ := markers(t, bystander, sb.ID); len(capped) != 0 || started != 1 {
			t.Errorf("bystander: markers %v, %d exec starts", capped, started)
		}
		if err := bystander.DeleteSandbox(ctx, sb.ID); err != nil {
			t.Error(err)
		}
	})
	t.Run("usage reports storage_bytes per tenant", func(t *testing.T) {
		rep := must[client.UsageReport](t)(admin.Usage(ctx, time.Time{}, time.Time{}, ""))
		byTenant := map[string]int64{}
		for _, u := range rep.Tenants {
			byTenant[u.TenantID] = u.StorageBytes
		}
		floodID := must[client.Tenant](t)(tenantNamed(t, admin, "flood")).ID
		if n := byTenant[floodID]; n < 1<<20 || n > 2<<20 {
			t.Errorf("flood's storage_bytes %d; want its 1 MiB quota and a little more (%v)", n, byTenant)
		}
		if out, code := s.cli(floodKey, "usage"); code != 0 || !strings.Contains(out, "STORED") || !strings.Contains(out, " MiB") {
			t.Errorf("airlock usage: exit %d:\n%s", code, out)
		}
	})
	t.Run("a lifted quota lets the tenant create again", func(t *testing.T) {
		if out, code := s.cli(s.adminKey, "tenants", "set", "flood", "--max-storage", "0"); code != 0 || !strings.Contains(out, "max storage -") {
			t.Fatalf("tenants set --max-storage 0: exit %d: %s", code, out)
		}
		sb := must[client.Sandbox](t)(flood.CreateSandbox(ctx, client.CreateRequest{}))
		if err := flood.DeleteSandbox(ctx, sb.ID); err != nil {
			t.Error(err)
		}
	})
	for _, id := range []string{first.ID, second.ID} {
		if err := flood.DeleteSandbox(ctx, id); err != nil {
			t.Error(err)
		}
	}
}

// TestAttackDataDirFillsUp: the data dir's filesystem fills up (a real
// one: a tmpfs this test mounts), as a host disk does. Below
// --min-free-disk the server refuses new sandboxes with 503 low_disk
// naming the dir, the free space and the flag; the sandbox already
// running keeps running and its log is kept; once space is freed,
// creates work again.
func TestAttackDataDirFillsUp(t *testing.T) {
	linuxtest.Require(t)
	dir := linuxtest.StateDir(t)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=256m,mode=0711"); err != nil {
		t.Fatalf("mount a tmpfs for the data dir: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the data dir's tmpfs: %v", err)
		}
	})
	// Runs after the server stops (cleanups run last first).
	t.Cleanup(func() {
		if rt, err := linux.New(linux.Config{StateDir: dir, Binary: linuxtest.Init(t)}); err != nil {
			t.Errorf("runtime for cleanup: %v", err)
		} else if err := rt.Teardown(); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	s := startServer(t, dir, "--min-free-disk", "50")
	c := s.admin()
	running := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	must[client.ExecResult](t)(c.Exec(ctx, running.ID, client.ExecRequest{Command: "echo before"}))

	// Fill the filesystem to 30% free.
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	total, free := int64(st.Blocks)*st.Bsize, int64(st.Bavail)*st.Bsize
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, free-total*30/100); err != nil {
		t.Fatalf("fill the data dir: %v", err)
	}
	f.Close()
	time.Sleep(1100 * time.Millisecond) // the guard looks at most once a second

	status, body := call(t, s, s.adminKey, "POST", "/v1/sandboxes", "application/json", `{}`)
	var eb struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal([]byte(body), &eb)
	if status != 503 || eb.Error.Code != "low_disk" {
		t.Fatalf("create on a full data dir: %d %s; want 503 low_disk", status, body)
	}
	for _, want := range []string{dir, "free of", "--min-free-disk", "50%"} {
		if !strings.Contains(eb.Error.Message, want) {
			t.Errorf("message %q lacks %q", eb.Error.Message, want)
		}
	}
	if res := must[client.ExecResult](t)(c.Exec(ctx, running.ID, client.ExecRequest{Command: "echo during"})); res.Stdout != "during\n" {
		t.Errorf("the running sandbox on a full data dir: %q", res.Stdout)
	}
	if _, started, _ := markers(t, c, running.ID); started != 2 {
		t.Errorf("the running sandbox's log: %d exec starts, want 2", started)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	again := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	for _, id := range []string{running.ID, again.ID} {
		if err := c.DeleteSandbox(ctx, id); err != nil {
			t.Error(err)
		}
	}
}

// TestAttackMinFreeDiskOutOfRange: a guard set past 100% (or below 0) is
// refused at start, with the range, rather than read as "always full".
func TestAttackMinFreeDiskOutOfRange(t *testing.T) {
	bin, _ := linuxtest.Build(t)
	for _, v := range []string{"101", "-1"} {
		out, err := exec.Command(bin, "serve", "--data-dir", t.TempDir(), "--min-free-disk", v).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--min-free-disk") || !strings.Contains(string(out), "0 (no guard) to 100") {
			t.Errorf("serve --min-free-disk %s: %v: %s", v, err, out)
		}
	}
}
