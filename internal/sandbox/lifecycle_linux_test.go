package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

func TestLifecycle(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	sb, err := svc.Create(ctx, c, sandbox.CreateRequest{
		Env: map[string]string{"GREETING": "hi"}, Metadata: map[string]string{"run": "42"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sb.State != sandboxrec.Running || sb.Template != "base" || sb.CPUs != 1 || sb.MemoryMB != 512 ||
		sb.Pids != 256 || sb.DiskMB != 1024 || sb.ExpiresAt.Sub(sb.CreatedAt) != sandbox.DefaultTimeout {
		t.Errorf("created sandbox lacks its defaults: %+v", sb)
	}
	if got, err := svc.Get(ctx, c, sb.ID); err != nil || got.State != sandboxrec.Running {
		t.Errorf("get: %+v, %v", got, err)
	}
	l, err := svc.List(ctx, c, sandboxrec.Filter{Metadata: map[string]string{"run": "42"}})
	if err != nil || len(l) != 1 || l[0].ID != sb.ID {
		t.Errorf("list by metadata: %+v, %v", l, err)
	}
	if l, _ := svc.List(ctx, c, sandboxrec.Filter{Metadata: map[string]string{"run": "7"}}); len(l) != 0 {
		t.Errorf("list by other metadata found %d", len(l))
	}
	if res := run(t, svc, c, sb.ID, `echo $GREETING; pwd`); res.Stdout != "hi\n/home/user\n" || res.ExitCode != 0 {
		t.Errorf("exec: %+v", res)
	}
	if err := shared.CreateToken(ctx, tenancy.Token{ID: "tok-" + sb.ID, SandboxID: sb.ID, TenantID: c.TenantID, Hash: []byte(sb.ID)}); err != nil {
		t.Fatal(err)
	}

	if err := svc.Delete(ctx, c, sb.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	got, err := svc.Get(ctx, c, sb.ID)
	if err != nil || got.State != sandboxrec.Stopped || got.EndedAt.IsZero() {
		t.Errorf("after delete: %+v, %v", got, err)
	}
	if runtimeHas(t, sb.ID) {
		t.Errorf("runtime still lists %s after delete", sb.ID)
	}
	if _, err := shared.TokenByHash(ctx, []byte(sb.ID)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("token of a deleted sandbox: %v", err)
	}
	if err := svc.Delete(ctx, c, sb.ID); err != nil {
		t.Errorf("second delete: %v", err)
	}
	_, err = svc.Exec(ctx, c, sb.ID, sandbox.ExecRequest{Command: "true"})
	wantKind(t, "exec in a stopped sandbox", err, sandbox.ErrConflict)
	_, err = svc.ReadFile(ctx, c, sb.ID, "x", io.Discard)
	wantKind(t, "read from a stopped sandbox", err, sandbox.ErrConflict)
	_, err = svc.SetTimeout(ctx, c, sb.ID, time.Minute)
	wantKind(t, "timeout of a stopped sandbox", err, sandbox.ErrConflict)
}

func TestQuota(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()

	c := tenant(t, 2, 0)
	first := create(t, svc, c, sandbox.CreateRequest{MemoryMB: 64})
	create(t, svc, c, sandbox.CreateRequest{MemoryMB: 64})
	_, err := svc.Create(ctx, c, sandbox.CreateRequest{MemoryMB: 64})
	wantKind(t, "third sandbox of two", err, sandbox.ErrLimitExceeded)
	wantKind(t, "third sandbox of two", err, sandbox.ErrTenantQuota)
	if err := svc.Delete(ctx, c, first.ID); err != nil {
		t.Fatal(err)
	}
	create(t, svc, c, sandbox.CreateRequest{MemoryMB: 64}) // a freed slot is usable

	m := tenant(t, 0, 600)
	create(t, svc, m, sandbox.CreateRequest{}) // 512 MiB by default
	_, err = svc.Create(ctx, m, sandbox.CreateRequest{MemoryMB: 128})
	wantKind(t, "512+128 MiB of 600", err, sandbox.ErrLimitExceeded)
	wantKind(t, "512+128 MiB of 600", err, sandbox.ErrTenantQuota)
	create(t, svc, m, sandbox.CreateRequest{MemoryMB: 64})
}

// TestOtherTenantSeesNothing: tenant B gets ErrNotFound from every method
// for A's sandbox, exactly as for an id that does not exist, and A's
// sandbox is untouched.
func TestOtherTenantSeesNothing(t *testing.T) {
	svc := newService(t)
	a, b := tenant(t, 0, 0), tenant(t, 0, 0)
	sb := create(t, svc, a, sandbox.CreateRequest{})
	if _, err := svc.WriteFile(context.Background(), a, sb.ID, "mine.txt", strings.NewReader("A's"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, err := range allMethods(svc, b, sb.ID) {
		wantKind(t, "tenant B: "+name, err, sandbox.ErrNotFound)
	}
	if l, err := svc.List(context.Background(), b, sandboxrec.Filter{}); err != nil || len(l) != 0 {
		t.Errorf("tenant B lists %d sandboxes (%v)", len(l), err)
	}
	got, err := svc.Get(context.Background(), a, sb.ID)
	if err != nil || got.State != sandboxrec.Running || !got.ExpiresAt.Equal(sb.ExpiresAt) {
		t.Errorf("A's sandbox after B's attempts: %+v, %v", got, err)
	}
	if res := run(t, svc, a, sb.ID, "cat mine.txt"); res.Stdout != "A's" {
		t.Errorf("A's file after B's attempts: %q", res.Stdout)
	}
}

// TestTokenScope: a sandbox token reaches its sandbox and nothing else,
// not even its own tenant's other sandboxes.
func TestTokenScope(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()
	a := tenant(t, 0, 0)
	mine := create(t, svc, a, sandbox.CreateRequest{})
	other := create(t, svc, a, sandbox.CreateRequest{})
	tok := sandbox.Caller{TenantID: a.TenantID, SandboxID: mine.ID}

	for name, err := range allMethods(svc, tok, other.ID) {
		wantKind(t, "token on a sibling: "+name, err, sandbox.ErrNotFound)
	}
	if res, err := svc.Exec(ctx, tok, mine.ID, sandbox.ExecRequest{Cmd: []string{"echo", "ok"}}); err != nil || res.Stdout != "ok\n" {
		t.Errorf("token exec in its sandbox: %+v, %v", res, err)
	}
	l, err := svc.List(ctx, tok, sandboxrec.Filter{})
	if err != nil || len(l) != 1 || l[0].ID != mine.ID {
		t.Errorf("token lists %+v, %v; want only %s", l, err, mine.ID)
	}
	if _, err := svc.Get(ctx, a, other.ID); err != nil {
		t.Errorf("the key still sees the sibling: %v", err)
	}
}

// allMethods calls every per-sandbox method (the destructive ones last)
// and returns each one's error.
func allMethods(svc *sandbox.Service, c sandbox.Caller, id string) map[string]error {
	ctx := context.Background()
	errs := map[string]error{}
	_, errs["Get"] = svc.Get(ctx, c, id)
	_, errs["Exec"] = svc.Exec(ctx, c, id, sandbox.ExecRequest{Command: "true"})
	_, errs["ExecStream"] = svc.ExecStream(ctx, c, id, sandbox.ExecRequest{Command: "true"}, &recorder{})
	var buf bytes.Buffer
	_, errs["ReadFile"] = svc.ReadFile(ctx, c, id, "mine.txt", &buf)
	_, errs["WriteFile"] = svc.WriteFile(ctx, c, id, "mine.txt", strings.NewReader("B's"), 0o644)
	_, errs["ListDir"] = svc.ListDir(ctx, c, id, ".")
	_, errs["Stat"] = svc.Stat(ctx, c, id, "mine.txt")
	errs["Mkdir"] = svc.Mkdir(ctx, c, id, "d", 0o755)
	errs["Move"] = svc.Move(ctx, c, id, "mine.txt", "moved.txt")
	errs["Remove"] = svc.Remove(ctx, c, id, "mine.txt", false)
	_, errs["SetTimeout"] = svc.SetTimeout(ctx, c, id, time.Second)
	errs["Delete"] = svc.Delete(ctx, c, id)
	return errs
}
