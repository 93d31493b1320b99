package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/live"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// startService is what the start-command templates of these tests run: it
// counts its starts in /tmp/starts, then serves HTTP on port $1.
const startService = `#!/bin/sh
echo start >> /tmp/starts
echo "serving on $1" >&2
exec python3 -m http.server "$1" --bind 127.0.0.1
`

// buildStartTemplate saves a template named name whose /usr/local/bin
// holds startService, with start st, and deletes it when the test ends.
func buildStartTemplate(t *testing.T, svc *sandbox.Service, admin sandbox.Caller, name string, st *runtime.TemplateStart) runtime.TemplateInfo {
	t.Helper()
	ctx := context.Background()
	b, err := svc.Create(ctx, admin, sandbox.CreateRequest{Build: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.WriteFile(ctx, admin, b.ID, "/usr/local/bin/start-svc", strings.NewReader(startService), 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := svc.CommitTemplate(ctx, admin, sandbox.CommitTemplateRequest{Name: name, SandboxID: b.ID, Start: st})
	if err != nil {
		t.Fatalf("commit %s: %v", name, err)
	}
	t.Cleanup(func() { svc.DeleteTemplate(context.Background(), admin, name) })
	return info
}

// startProcs is the sandbox's background processes tagged as its
// template's start command.
func startProcs(t *testing.T, svc *sandbox.Service, c sandbox.Caller, id string) []sandbox.ProcInfo {
	t.Helper()
	ps, err := svc.ListProcesses(context.Background(), c, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []sandbox.ProcInfo
	for _, p := range ps {
		if p.Tag == live.StartTag {
			out = append(out, p)
		}
	}
	return out
}

// TestTemplateStart: a template's start command is kept with it, runs once
// in each sandbox made from it, which is handed out only once its port
// accepts connections; a build sandbox on it runs nothing, and a template
// built on it keeps the command.
func TestTemplateStart(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	admin := c
	admin.Admin = true
	ctx := context.Background()
	st := &runtime.TemplateStart{Command: "start-svc 8123", ReadyPort: 8123}
	info := buildStartTemplate(t, svc, admin, "start-http", st)
	if diff := cmp.Diff(st, info.Start); diff != "" {
		t.Errorf("committed start (-want +got):\n%s", diff)
	}
	got, err := svc.Template(ctx, "start-http")
	if err != nil || !cmp.Equal(st, got.Start) {
		t.Errorf("template read back: start %+v, %v", got.Start, err)
	}

	sb := create(t, svc, c, sandbox.CreateRequest{Template: "start-http"})
	// Ready means ready: the first connection after create is served.
	conn, err := svc.DialPort(ctx, c, sb.ID, 8123)
	if err != nil {
		t.Fatalf("dial the start command's port right after create: %v", err)
	}
	conn.Close()
	if res := run(t, svc, c, sb.ID, "python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:8123/\").status)'; wc -l < /tmp/starts"); res.Stdout != "200\n1\n" {
		t.Errorf("in the sandbox: %q (stderr %q), want the service answering 200, started once", res.Stdout, res.Stderr)
	}
	if ps := startProcs(t, svc, c, sb.ID); len(ps) != 1 || ps[0].State != "running" || ps[0].Command != st.Command {
		t.Errorf("start processes: %+v", ps)
	}

	// A build on it runs nothing of it, and what it saves keeps the
	// start command unless it names its own.
	b, err := svc.Create(ctx, admin, sandbox.CreateRequest{Template: "start-http", Build: true})
	if err != nil {
		t.Fatal(err)
	}
	if ps := startProcs(t, svc, admin, b.ID); len(ps) != 0 {
		t.Errorf("a build sandbox ran the start command: %+v", ps)
	}
	derived, err := svc.CommitTemplate(ctx, admin, sandbox.CommitTemplateRequest{Name: "start-http-derived", SandboxID: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.DeleteTemplate(context.Background(), admin, "start-http-derived") })
	if !cmp.Equal(st, derived.Start) {
		t.Errorf("a template built on start-http: start %+v, want it kept", derived.Start)
	}
	b, err = svc.Create(ctx, admin, sandbox.CreateRequest{Template: "start-http", Build: true})
	if err != nil {
		t.Fatal(err)
	}
	none, err := svc.CommitTemplate(ctx, admin, sandbox.CommitTemplateRequest{Name: "start-http-none", SandboxID: b.ID, Start: &runtime.TemplateStart{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.DeleteTemplate(context.Background(), admin, "start-http-none") })
	if none.Start != nil {
		t.Errorf("start {} kept %+v, want none", none.Start)
	}
}

// TestTemplateStartFails: a start command that exits before it is ready,
// or is not ready in time, fails the create with the end of its stderr,
// and nothing of the sandbox is left; a ready command is waited for.
func TestTemplateStartFails(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	admin := c
	admin.Admin = true
	ctx := context.Background()
	buildStartTemplate(t, svc, admin, "start-exits", &runtime.TemplateStart{Command: "echo boom >&2; exit 3", ReadyPort: 8124})
	buildStartTemplate(t, svc, admin, "start-slow", &runtime.TemplateStart{Command: "echo still warming up >&2; sleep 600", ReadyPort: 8125, ReadyTimeoutS: 1})
	buildStartTemplate(t, svc, admin, "start-cmd", &runtime.TemplateStart{
		Command: "sleep 1; touch /tmp/ready; exec sleep 600", ReadyCommand: "test -e /tmp/ready"})

	for _, tc := range []struct{ template, want string }{
		{"start-exits", "start command exited 3 before it was ready; its stderr ends:\nboom\n"},
		{"start-slow", "start command not ready after 1s: nothing accepts connections on port 8125; its stderr ends:\nstill warming up\n"},
	} {
		_, err := svc.Create(ctx, c, sandbox.CreateRequest{Template: tc.template})
		if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("create from %s: %v, want unavailable with %q", tc.template, err, tc.want)
		}
		list, lerr := svc.List(ctx, c, sandboxrec.Filter{State: sandboxrec.Failed})
		if lerr != nil {
			t.Fatal(lerr)
		}
		for _, sb := range list {
			if sb.Template == tc.template && runtimeHas(t, sb.ID) {
				t.Errorf("the failed sandbox %s from %s is still in the runtime", sb.ID, tc.template)
			}
		}
	}

	sb := create(t, svc, c, sandbox.CreateRequest{Template: "start-cmd"})
	if res := run(t, svc, c, sb.ID, "test -e /tmp/ready && echo ready"); res.Stdout != "ready\n" {
		t.Errorf("create returned before the ready command passed: %q", res.Stdout)
	}

	for _, bad := range []*runtime.TemplateStart{
		{ReadyPort: 80},
		{Command: "x", ReadyPort: 70000},
		{Command: "x", ReadyPort: 3128},
		{Command: "x", ReadyTimeoutS: 601},
		{Command: "x\x00y"},
	} {
		b, err := svc.Create(ctx, admin, sandbox.CreateRequest{Build: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.CommitTemplate(ctx, admin, sandbox.CommitTemplateRequest{Name: "start-bad", SandboxID: b.ID, Start: bad}); !errors.Is(err, sandbox.ErrInvalid) {
			t.Errorf("commit with start %+v: %v, want invalid", bad, err)
		}
		svc.Delete(ctx, admin, b.ID)
	}
}

// TestTemplateStartRestart: a daemon restart adopts a sandbox's running
// start command, which goes on serving, and never starts it again.
func TestTemplateStartRestart(t *testing.T) {
	ctx := context.Background()
	svc1 := newService(t)
	c := tenant(t, 0, 0)
	admin := c
	admin.Admin = true
	buildStartTemplate(t, svc1, admin, "start-restart", &runtime.TemplateStart{Command: "start-svc 8126", ReadyPort: 8126})
	sb := create(t, svc1, c, sandbox.CreateRequest{Template: "start-restart"})
	before := startProcs(t, svc1, c, sb.ID)
	svc1.Close()

	rt2, err := linux.New(linux.Config{StateDir: fx.StateDir(), Binary: linuxtest.Init(t)})
	if err != nil {
		t.Fatal(err)
	}
	svc2, err := sandbox.NewManager(ctx, shared, rt2, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc2.Close()
	after := startProcs(t, svc2, c, sb.ID)
	if len(before) != 1 || len(after) != 1 || after[0].Pid != before[0].Pid || after[0].State != "running" {
		t.Errorf("start process before the restart %+v, after %+v: want the same one, running", before, after)
	}
	if res := run(t, svc2, c, sb.ID, "python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:8126/\").status)'; wc -l < /tmp/starts"); res.Stdout != "200\n1\n" {
		t.Errorf("after the restart: %q (stderr %q), want the service answering, started once", res.Stdout, res.Stderr)
	}
	if err := svc2.Delete(ctx, c, sb.ID); err != nil {
		t.Error(err)
	}
}

// TestTemplateStartIdle: the start command is the sandbox's service, not
// work in progress: it does not keep the sandbox from its idle timeout.
func TestTemplateStartIdle(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	admin := c
	admin.Admin = true
	ctx := context.Background()
	buildStartTemplate(t, svc, admin, "start-idle", &runtime.TemplateStart{Command: "exec sleep 600"})
	sb, err := svc.Create(ctx, c, sandbox.CreateRequest{Template: "start-idle", IdleTimeoutS: 2})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := shared.GetSandbox(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == sandboxrec.Stopped {
			if got.Reason != sandbox.ReasonIdle {
				t.Errorf("stopped for %q, want %q", got.Reason, sandbox.ReasonIdle)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox running only its start command still %s after 15 s", got.State)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestTemplateStartCutByRestart: a create a daemon stop cut off while it
// waited for the start command is failed at the next start (its creator
// was told it failed; whether its service runs nobody knows), and its
// runtime sandbox is reclaimed; one of a template without a start command
// is kept, as ever.
func TestTemplateStartCutByRestart(t *testing.T) {
	ctx := context.Background()
	rt1 := testRuntime(t)
	svc1 := newService(t)
	c := tenant(t, 0, 0)
	admin := c
	admin.Admin = true
	buildStartTemplate(t, svc1, admin, "start-cut", &runtime.TemplateStart{Command: "start-svc 8127", ReadyPort: 8127})
	tpl, err := rt1.Template(ctx, "start-cut")
	if err != nil {
		t.Fatal(err)
	}
	cut := sandboxrec.Sandbox{ID: "sb-startcut000001", TenantID: c.TenantID, State: sandboxrec.Creating,
		Template: tpl.Name, CPUs: 1, MemoryMB: 512, Pids: 256, DiskMB: 1024,
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := shared.CreateSandbox(ctx, cut); err != nil {
		t.Fatal(err)
	}
	if _, err := rt1.Create(ctx, runtime.Spec{ID: cut.ID, Template: tpl.Name}); err != nil {
		t.Fatal(err)
	}
	svc1.Close()

	rt2, err := linux.New(linux.Config{StateDir: fx.StateDir(), Binary: linuxtest.Init(t)})
	if err != nil {
		t.Fatal(err)
	}
	svc2, err := sandbox.NewManager(ctx, shared, rt2, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc2.Close()
	got, err := svc2.Get(ctx, c, cut.ID)
	if err != nil || got.State != sandboxrec.Failed || !strings.Contains(got.Reason, "cut off before its template's start command was ready") {
		t.Errorf("after the restart: %s %q (%v), want failed, cut off", got.State, got.Reason, err)
	}
	if runtimeHas(t, cut.ID) {
		t.Errorf("the cut-off sandbox %s is still in the runtime", cut.ID)
	}
}
