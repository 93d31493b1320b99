package suite

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/client"
)

// create makes a sandbox that is deleted when t ends.
func create(t *testing.T, c *client.Client, req client.CreateRequest) client.Sandbox {
	t.Helper()
	sb, err := c.CreateSandbox(context.Background(), req)
	if err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	t.Cleanup(func() { c.DeleteSandbox(context.Background(), sb.ID) })
	return sb
}

func testSandboxLifecycle(t *testing.T, s Server) {
	c := s.Client()
	ctx := context.Background()
	if err := c.Health(ctx); err != nil {
		t.Fatalf("Health: %v", err)
	}
	agent := unique("agent")
	sb := create(t, c, client.CreateRequest{MemoryMB: 256, Timeout: 5400*time.Second + 500*time.Millisecond,
		Metadata: map[string]string{"agent": agent}})
	if sb.State != client.StateRunning || sb.Limits.MemoryMB != 256 || sb.Limits.CPUs != 1 || sb.Template != "base" {
		t.Errorf("created %+v; want running base with 256 MiB and the default 1 CPU", sb)
	}
	// Unset, the workdir is the default, /home/user, and says "".
	if sb.Network == nil || sb.Network.Mode != client.NetworkNone || sb.Workdir != "" || sb.Node != "local" {
		t.Errorf("created %+v; want network mode none, workdir \"\", node local", sb)
	}
	// 5400.5 s goes out as 5401 s: whole seconds, rounded up (0 would
	// mean the default).
	if got := sb.ExpiresAt.Sub(sb.CreatedAt); got != 5401*time.Second {
		t.Errorf("expires %v after creation; want 1h30m1s", got)
	}
	other := create(t, c, client.CreateRequest{Metadata: map[string]string{"agent": agent + "-b"},
		Network: client.AllowOnly("example.com")})
	if other.Network == nil || other.Network.Mode != client.NetworkAllowlist || !slices.Equal(other.Network.Allow, []string{"example.com"}) {
		t.Errorf("created with an allow-list: network %+v", other.Network)
	}
	got, err := c.GetSandbox(ctx, other.ID)
	if err != nil {
		t.Fatalf("GetSandbox: %v", err)
	}
	// GET says which agent protocol a running sandbox speaks; create does
	// not wait to ask.
	if diff := cmp.Diff(other, got, cmpopts.IgnoreFields(client.Sandbox{}, "AgentVersion")); diff != "" {
		t.Errorf("GetSandbox differs from CreateSandbox (-create +get):\n%s", diff)
	}

	page, err := c.ListSandboxes(ctx, client.ListOptions{Metadata: map[string]string{"agent": agent + "-b"}})
	if err != nil || len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != other.ID {
		t.Errorf("list by metadata agent=%s-b = %+v, %v; want only %s", agent, page, err, other.ID)
	}
	first, err := c.ListSandboxes(ctx, client.ListOptions{Limit: 1})
	if err != nil || len(first.Sandboxes) != 1 || first.Next == "" {
		t.Fatalf("first page = %+v, %v; want one sandbox and a next", first, err)
	}
	second, err := c.ListSandboxes(ctx, client.ListOptions{Limit: 1, After: first.Next})
	if err != nil || len(second.Sandboxes) != 1 || second.Sandboxes[0].ID == first.Sandboxes[0].ID {
		t.Errorf("second page = %+v, %v; want the other sandbox", second, err)
	}

	sb2, err := c.SetTimeout(ctx, sb.ID, time.Minute)
	if err != nil || time.Until(sb2.ExpiresAt) > time.Minute+time.Second || time.Until(sb2.ExpiresAt) < 50*time.Second {
		t.Errorf("SetTimeout(1m) = expires %v, %v", sb2.ExpiresAt, err)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
	// A deleted sandbox is kept, stopped, to say how it ended; a call
	// that needs it is a conflict, and the client explains it.
	gone, err := c.GetSandbox(ctx, sb.ID)
	if err != nil || gone.State != client.StateStopped || gone.EndedAt.IsZero() {
		t.Errorf("GetSandbox after delete = %+v, %v; want it stopped, with ended_at", gone, err)
	}
	page, err = c.ListSandboxes(ctx, client.ListOptions{State: client.StateStopped, Metadata: map[string]string{"agent": agent}})
	if err != nil || len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != sb.ID {
		t.Errorf("list of stopped sandboxes = %+v, %v; want %s", page, err, sb.ID)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Errorf("DeleteSandbox again: %v; want nothing to happen", err)
	}
	_, err = c.Exec(ctx, sb.ID, client.ExecRequest{Command: "true"})
	var ended *client.EndedError
	if !errors.Is(err, client.ErrConflict) || !errors.As(c.SandboxEnded(ctx, sb.ID), &ended) {
		t.Errorf("Exec in a deleted sandbox: %v; want ErrConflict, and SandboxEnded to say it ended", err)
	}
	for what, err := range map[string]error{
		"SetTimeout": errOf(c.SetTimeout(ctx, sb.ID, time.Hour)),
		"Pause":      errOf(c.PauseSandbox(ctx, sb.ID)),
		"ReadFile":   errOf(c.ReadFile(ctx, sb.ID, "x", io.Discard)),
		"Snapshot":   errOf(c.CreateSnapshot(ctx, sb.ID, "")),
	} {
		if !errors.Is(err, client.ErrConflict) {
			t.Errorf("%s of a deleted sandbox: %v; want ErrConflict", what, err)
		}
	}
	if err := c.DeleteSandbox(ctx, "sb-nope"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("DeleteSandbox of no sandbox: %v; want ErrNotFound", err)
	}
}

func errOf[T any](_ T, err error) error { return err }

func testExec(t *testing.T, s Server) {
	c := s.Client()
	ctx := context.Background()
	sb := create(t, c, client.CreateRequest{})
	res, err := c.Exec(ctx, sb.ID, client.ExecRequest{Cmd: argvOut, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if res.ExitCode != 3 || res.Signal != 0 || res.Stdout != "out:a,b c" || res.Stderr != "err" || res.TimedOut || res.Truncated {
		t.Errorf("Exec = %+v", res)
	}

	var out, errb bytes.Buffer
	res, err = c.ExecStream(ctx, sb.ID, client.ExecRequest{Command: scriptOut}, &out, &errb)
	if err != nil {
		t.Fatalf("ExecStream: %v", err)
	}
	if res.ExitCode != 3 || out.String() != "hi\n" || errb.String() != "oops\n" || res.Stdout != "" {
		t.Errorf("ExecStream = %+v, stdout %q, stderr %q", res, out.String(), errb.String())
	}
	res, err = c.Exec(ctx, sb.ID, client.ExecRequest{Command: scriptKilled})
	if err != nil || res.Signal != 9 || res.ExitCode != 137 {
		t.Errorf("Exec of a command killed by SIGKILL = %+v, %v; want signal 9, exit 137", res, err)
	}
	_, err = c.Exec(ctx, sb.ID, client.ExecRequest{})
	if !errors.Is(err, client.ErrInvalid) {
		t.Errorf("Exec without a command: %v; want ErrInvalid", err)
	}
	_, err = c.Exec(ctx, sb.ID, client.ExecRequest{Cmd: []string{"true"}, Command: "true"})
	if !errors.Is(err, client.ErrInvalid) {
		t.Errorf("Exec with both cmd and command: %v; want ErrInvalid", err)
	}
}

func testFiles(t *testing.T, s Server) {
	c := s.Client()
	ctx := context.Background()
	sb := create(t, c, client.CreateRequest{})
	if err := c.Mkdir(ctx, sb.ID, "dir", 0o755); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	data := []byte("hello\x00\xff world\n")
	n, err := c.WriteFile(ctx, sb.ID, "dir/a.txt", bytes.NewReader(data), 0o600)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("WriteFile = %d, %v", n, err)
	}
	if err := c.Mkdir(ctx, sb.ID, "/home/user/dir/sub", 0o700); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	if err := c.Move(ctx, sb.ID, "dir/a.txt", "dir/b.txt"); err != nil {
		t.Fatalf("Move: %v", err)
	}
	var got bytes.Buffer
	n, err = c.ReadFile(ctx, sb.ID, "/home/user/dir/b.txt", &got)
	if err != nil || n != int64(len(data)) || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("ReadFile = %d %q, %v; want %q", n, got.Bytes(), err, data)
	}
	entries, err := c.ListDir(ctx, sb.ID, "dir")
	if err != nil {
		t.Fatalf("ListDir: %v", err)
	}
	var short []string
	for _, e := range entries {
		short = append(short, e.Name+" "+e.Path+" "+e.Type+" "+e.Mode)
	}
	want := []string{"b.txt /home/user/dir/b.txt file 0600", "sub /home/user/dir/sub dir 0700"}
	if diff := cmp.Diff(want, short); diff != "" {
		t.Errorf("ListDir (-want +got):\n%s", diff)
	}
	if err := c.Remove(ctx, sb.ID, "dir", false); !errors.Is(err, client.ErrConflict) {
		t.Errorf("Remove of a non-empty dir: %v; want ErrConflict", err)
	}
	if err := c.Remove(ctx, sb.ID, "dir", true); err != nil {
		t.Errorf("Remove recursive: %v", err)
	}
	if _, err := c.ReadFile(ctx, sb.ID, "dir/b.txt", io.Discard); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("ReadFile after Remove: %v; want ErrNotFound", err)
	}
	if err := c.Remove(ctx, sb.ID, "dir", false); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("Remove of what is gone: %v; want ErrNotFound", err)
	}
}

func testTokenReachesOneSandbox(t *testing.T, s Server) {
	c := s.Client()
	ctx := context.Background()
	a := create(t, c, client.CreateRequest{})
	b := create(t, c, client.CreateRequest{})
	tok, err := c.CreateToken(ctx, a.ID, time.Minute)
	if err != nil || !strings.HasPrefix(tok.Token, "alt_") || time.Until(tok.ExpiresAt) > time.Minute+time.Second {
		t.Fatalf("CreateToken = %+v, %v", tok, err)
	}
	tc := client.New(s.URL, tok.Token)
	if _, err := tc.GetSandbox(ctx, a.ID); err != nil {
		t.Errorf("token on its sandbox: %v", err)
	}
	if res, err := tc.Exec(ctx, a.ID, client.ExecRequest{Command: "true"}); err != nil || res.ExitCode != 0 {
		t.Errorf("token runs a command in its sandbox: %+v, %v", res, err)
	}
	if _, err := tc.GetSandbox(ctx, b.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("token on another sandbox: %v; want ErrNotFound", err)
	}
	if _, err := tc.ListTenants(ctx); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("token on an admin route: %v; want ErrForbidden", err)
	}
	if _, err := client.New(s.URL, "alk_nope").GetSandbox(ctx, a.ID); !errors.Is(err, client.ErrUnauthenticated) {
		t.Errorf("an unknown key: %v; want ErrUnauthenticated", err)
	}
}

func testTenantsAndKeys(t *testing.T, s Server) {
	c := s.Client()
	ctx := context.Background()
	name := unique("acme")
	ten, err := c.CreateTenant(ctx, client.TenantRequest{Name: name, MaxSandboxes: 3, MaxMemoryMB: 4096})
	if err != nil || ten.Name != name || ten.MaxSandboxes != 3 || ten.MaxMemoryMB != 4096 {
		t.Fatalf("CreateTenant = %+v, %v", ten, err)
	}
	if _, err := c.CreateTenant(ctx, client.TenantRequest{Name: name}); !errors.Is(err, client.ErrConflict) {
		t.Errorf("second tenant %s: %v; want ErrConflict", name, err)
	}
	tenants, err := c.ListTenants(ctx)
	if i := slices.IndexFunc(tenants, func(x client.Tenant) bool { return x.ID == ten.ID }); err != nil || i < 0 || tenants[i] != ten {
		t.Errorf("ListTenants = %+v, %v; want %+v among them", tenants, err, ten)
	}
	two := int64(2)
	up, err := c.UpdateTenant(ctx, name, client.TenantQuota{MaxMemoryMB: &two})
	if err != nil || up.MaxMemoryMB != 2 || up.MaxSandboxes != 3 {
		t.Errorf("UpdateTenant(max_memory_mb 2) = %+v, %v", up, err)
	}
	if _, err := c.UpdateTenant(ctx, unique("nobody"), client.TenantQuota{MaxMemoryMB: &two}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("UpdateTenant of no tenant: %v; want ErrNotFound", err)
	}
	k, err := c.CreateKey(ctx, name, "ci")
	if err != nil || !strings.HasPrefix(k.Key, "alk_") || k.Tenant != name || k.Name != "ci" {
		t.Fatalf("CreateKey = %+v, %v", k, err)
	}
	user := client.New(s.URL, k.Key)
	if _, err := user.ListTenants(ctx); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("tenant key on ListTenants: %v; want ErrForbidden", err)
	}
	keys, err := user.ListKeys(ctx)
	if err != nil || len(keys) != 1 || keys[0].ID != k.ID || keys[0].Tenant != name {
		t.Errorf("ListKeys as %s = %+v, %v; want only its key", name, keys, err)
	}
	if err := c.DeleteKey(ctx, k.ID); err != nil {
		t.Fatalf("DeleteKey: %v", err)
	}
	if _, err := user.ListKeys(ctx); !errors.Is(err, client.ErrUnauthenticated) {
		t.Errorf("deleted key: %v; want ErrUnauthenticated", err)
	}
	if err := c.DeleteKey(ctx, k.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("DeleteKey again: %v; want ErrNotFound", err)
	}
}

func testPauseAndResume(t *testing.T, s Server) {
	c := s.Client()
	ctx := context.Background()
	sb := create(t, c, client.CreateRequest{Timeout: time.Hour})
	p, err := c.PauseSandbox(ctx, sb.ID)
	if err != nil || p.State != client.StatePaused || p.PausedAt.IsZero() {
		t.Fatalf("PauseSandbox = %+v, %v; want paused", p, err)
	}
	if _, err := c.Exec(ctx, sb.ID, client.ExecRequest{Command: "true"}); !errors.Is(err, client.ErrPaused) {
		t.Errorf("Exec while paused: %v; want ErrPaused", err)
	}
	if _, err := c.SetTimeout(ctx, sb.ID, time.Hour); !errors.Is(err, client.ErrPaused) {
		t.Errorf("SetTimeout while paused: %v; want ErrPaused", err)
	}
	r, err := c.ResumeSandbox(ctx, sb.ID)
	if err != nil || r.State != client.StateRunning || !r.PausedAt.IsZero() {
		t.Fatalf("ResumeSandbox = %+v, %v; want running", r, err)
	}
	if res, err := c.Exec(ctx, sb.ID, client.ExecRequest{Command: "true"}); err != nil || res.ExitCode != 0 {
		t.Errorf("Exec after resume: %+v, %v", res, err)
	}
	// Made with auto_resume, a paused sandbox wakes for a call that needs
	// it running.
	auto := create(t, c, client.CreateRequest{AutoResume: true, IdleAction: "pause", IdleTimeoutS: 600})
	if !auto.AutoResume || auto.IdleAction != "pause" || auto.IdleTimeoutS != 600 {
		t.Errorf("created %+v; want auto_resume, idle_action pause, idle_timeout_s 600", auto)
	}
	if _, err := c.PauseSandbox(ctx, auto.ID); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, auto.ID, client.ExecRequest{Command: "true"}); err != nil || res.ExitCode != 0 {
		t.Errorf("Exec in a paused auto_resume sandbox: %+v, %v", res, err)
	}
	if got, err := c.GetSandbox(ctx, auto.ID); err != nil || got.State != client.StateRunning {
		t.Errorf("after the call it woke for: %+v, %v; want running", got, err)
	}
}

func testServerInfo(t *testing.T, s Server) {
	si, err := s.Client().ServerInfo(context.Background())
	if err != nil || si.Version == "" || si.AgentProtocol < 1 || si.SandboxAgents == nil {
		t.Errorf("ServerInfo = %+v, %v; want a version and an agent protocol", si, err)
	}
}

func testTemplates(t *testing.T, s Server) {
	c := s.Client()
	ctx := context.Background()
	list, err := c.Templates(ctx)
	if err != nil || len(list) == 0 || list[0].Name != "base" {
		t.Fatalf("Templates = %+v, %v; want base first", list, err)
	}
	base, err := c.Template(ctx, "base")
	if err != nil || base.Name != "base" {
		t.Errorf("Template(base) = %+v, %v", base, err)
	}
	if _, err := c.Template(ctx, unique("none")); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("Template of no template: %v; want ErrNotFound", err)
	}
}

// readFile is the contents of p in sandbox id.
func readFile(t *testing.T, c *client.Client, id, p string) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := c.ReadFile(context.Background(), id, p, &b); err != nil {
		t.Errorf("ReadFile %s in %s: %v", p, id, err)
	}
	return b.String()
}

// testCreateRefusals: what a create cannot have is refused, each with
// its kind of error.
func testCreateRefusals(t *testing.T, s Server) {
	c := s.Client()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  client.CreateRequest
		want error
	}{
		{"idle_action sleep", client.CreateRequest{IdleAction: "sleep"}, client.ErrInvalid},
		{"a negative memory limit", client.CreateRequest{MemoryMB: -1}, client.ErrInvalid},
		{"a timeout over a day", client.CreateRequest{Timeout: 25 * time.Hour}, client.ErrInvalid},
		{"a secret the tenant does not have", client.CreateRequest{Secrets: []string{"NOPE_" + strings.ReplaceAll(unique("X"), "-", "_")}}, client.ErrInvalid},
		{"no such template", client.CreateRequest{Template: unique("none")}, client.ErrNotFound},
		{"no such snapshot", client.CreateRequest{Snapshot: unique("none")}, client.ErrNotFound},
		{"no such volume", client.CreateRequest{Volumes: []client.VolumeMount{{Name: unique("none"), Path: "/v"}}}, client.ErrNotFound},
	} {
		if sb, err := c.CreateSandbox(ctx, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %+v, %v; want %v", tc.name, sb, err, tc.want)
		}
	}
}

func testSnapshotsAndForks(t *testing.T, s Server) {
	c := s.Client()
	ctx := context.Background()
	sb := create(t, c, client.CreateRequest{})
	if _, err := c.WriteFile(ctx, sb.ID, "f", strings.NewReader("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	name := unique("snap")
	snap, err := c.CreateSnapshot(ctx, sb.ID, name)
	if err != nil || snap.Name != name || snap.Sandbox != sb.ID || snap.Template != "base" || snap.Node != "local" || snap.CreatedAt.IsZero() {
		t.Fatalf("CreateSnapshot = %+v, %v", snap, err)
	}
	t.Cleanup(func() { c.DeleteSnapshot(context.Background(), name) })
	if _, err := c.CreateSnapshot(ctx, sb.ID, name); !errors.Is(err, client.ErrConflict) {
		t.Errorf("a second snapshot %s: %v; want ErrConflict", name, err)
	}
	if got, err := c.GetSnapshot(ctx, name); err != nil || got != snap {
		t.Errorf("GetSnapshot = %+v, %v; want %+v", got, err, snap)
	}
	list, err := c.ListSnapshots(ctx)
	if err != nil || !slices.Contains(list, snap) {
		t.Errorf("ListSnapshots = %+v, %v; want %+v among them", list, err, snap)
	}
	// Later writes are not in the snapshot, nor in a sandbox made from it.
	if _, err := c.WriteFile(ctx, sb.ID, "f", strings.NewReader("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	from := create(t, c, client.CreateRequest{Snapshot: name})
	if from.Snapshot != name || from.Template != "base" {
		t.Errorf("a sandbox from %s: %+v", name, from)
	}
	if got := readFile(t, c, from.ID, "f"); got != "one" {
		t.Errorf("a sandbox from the snapshot reads %q, want one", got)
	}
	forks, err := c.ForkSandbox(ctx, sb.ID, client.ForkRequest{Count: 2, CreateRequest: client.CreateRequest{Metadata: map[string]string{"fork": "yes"}}})
	if err != nil || len(forks) != 2 {
		t.Fatalf("ForkSandbox(2) = %+v, %v", forks, err)
	}
	for _, f := range forks {
		t.Cleanup(func() { c.DeleteSandbox(context.Background(), f.ID) })
		if f.ForkOf != sb.ID || f.State != client.StateRunning || f.Metadata["fork"] != "yes" || f.ID == sb.ID {
			t.Errorf("fork %+v; want a running fork of %s with its metadata", f, sb.ID)
		}
		if got := readFile(t, c, f.ID, "f"); got != "two" {
			t.Errorf("fork reads %q, want two", got)
		}
	}
	if _, err := c.ForkSandbox(ctx, sb.ID, client.ForkRequest{Count: 0}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("ForkSandbox(0): %v; want ErrInvalid", err)
	}
	if err := c.DeleteSnapshot(ctx, name); err != nil {
		t.Fatalf("DeleteSnapshot: %v", err)
	}
	if _, err := c.GetSnapshot(ctx, name); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetSnapshot after delete: %v; want ErrNotFound", err)
	}
	if err := c.DeleteSnapshot(ctx, name); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("DeleteSnapshot again: %v; want ErrNotFound", err)
	}
}

func testVolumes(t *testing.T, s Server) {
	c := s.Client()
	ctx := context.Background()
	name := unique("vol")
	v, err := c.CreateVolume(ctx, name, 64, "")
	if err != nil || v.Name != name || v.SizeMB != 64 || v.Node != "local" || v.CreatedAt.IsZero() {
		t.Fatalf("CreateVolume = %+v, %v", v, err)
	}
	t.Cleanup(func() { c.DeleteVolume(context.Background(), name) })
	if _, err := c.CreateVolume(ctx, name, 64, ""); !errors.Is(err, client.ErrConflict) {
		t.Errorf("a second volume %s: %v; want ErrConflict", name, err)
	}
	if got, err := c.GetVolume(ctx, name); err != nil || got != v {
		t.Errorf("GetVolume = %+v, %v; want %+v", got, err, v)
	}
	if list, err := c.ListVolumes(ctx); err != nil || !slices.Contains(list, v) {
		t.Errorf("ListVolumes = %+v, %v; want %+v among them", list, err, v)
	}
	rw := create(t, c, client.CreateRequest{Volumes: []client.VolumeMount{{Name: name, Path: "/mnt/data"}}})
	if len(rw.Volumes) != 1 || rw.Volumes[0] != (client.VolumeMount{Name: name, Path: "/mnt/data"}) {
		t.Errorf("a sandbox mounting %s: volumes %+v", name, rw.Volumes)
	}
	if _, err := c.WriteFile(ctx, rw.ID, "/mnt/data/x", strings.NewReader("shared"), 0o644); err != nil {
		t.Fatalf("WriteFile to the volume: %v", err)
	}
	// One read-write mount at a time, or many read-only ones.
	roMount := []client.VolumeMount{{Name: name, Path: "/data", ReadOnly: true}}
	if _, err := c.CreateSandbox(ctx, client.CreateRequest{Volumes: roMount}); !errors.Is(err, client.ErrConflict) {
		t.Errorf("a read-only mount beside a read-write one: %v; want ErrConflict", err)
	}
	if err := c.DeleteVolume(ctx, name); !errors.Is(err, client.ErrConflict) {
		t.Errorf("DeleteVolume while mounted: %v; want ErrConflict", err)
	}
	if err := c.DeleteSandbox(ctx, rw.ID); err != nil {
		t.Fatal(err)
	}
	// The files outlive the sandboxes.
	ro := create(t, c, client.CreateRequest{Volumes: roMount})
	ro2 := create(t, c, client.CreateRequest{Volumes: roMount})
	for _, sb := range []client.Sandbox{ro, ro2} {
		if got := readFile(t, c, sb.ID, "/data/x"); got != "shared" {
			t.Errorf("a read-only mount reads %q, want shared", got)
		}
	}
	if _, err := c.WriteFile(ctx, ro.ID, "/data/y", strings.NewReader("no"), 0o644); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("WriteFile to a read-only mount: %v; want ErrInvalid", err)
	}
	if err := c.Remove(ctx, ro.ID, "/data/x", false); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("Remove on a read-only mount: %v; want ErrInvalid", err)
	}
	for _, sb := range []client.Sandbox{ro, ro2} {
		if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DeleteVolume(ctx, name); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	if _, err := c.GetVolume(ctx, name); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetVolume after delete: %v; want ErrNotFound", err)
	}
}
