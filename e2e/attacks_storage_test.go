package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// Attacks on the storage a tenant can make the host keep (issue 18, item
// 3): each test is one attack, against a real `airlock serve`, and what
// bounds it.

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

func tenantNamed(t *testing.T, c *client.Client, name string) (client.Tenant, error) {
	t.Helper()
	for _, tn := range must[[]client.Tenant](t)(c.ListTenants(ctx)) {
		if tn.Name == name {
			return tn, nil
		}
	}
	return client.Tenant{}, fmt.Errorf("no tenant %q", name)
}

// TestAttackDataDirFillsUp: the data dir's filesystem fills up (a real
// one: a tmpfs this test mounts), as a host disk does. Below
// --min-free-disk the server refuses new sandboxes with 503 low_disk
// naming the dir, the free space and the flag; the sandbox already
// running keeps running and its log is kept; once space is freed,
// creates work again.
func TestAttackDataDirFillsUp(t *testing.T) {
	linuxtest.Require(t)
	bin, _ := linuxtest.Build(t)
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
		if rt, err := linux.New(linux.Config{StateDir: dir, Binary: bin}); err != nil {
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
