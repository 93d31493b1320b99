package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// TestExpiry: a sandbox is destroyed within 2 s of its expiry, whether the
// expiry was set at create or moved closer with SetTimeout; a sandbox whose
// timeout was extended keeps running.
func TestExpiry(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	short := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 1})
	moved := create(t, svc, c, sandbox.CreateRequest{})
	if _, err := svc.SetTimeout(ctx, c, moved.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	extended := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 1})
	if _, err := svc.SetTimeout(ctx, c, extended.ID, 10*time.Minute); err != nil {
		t.Fatal(err)
	}

	for _, id := range []string{short.ID, moved.ID} {
		var got sandboxrec.Sandbox
		for {
			var err error
			if got, err = svc.Get(ctx, c, id); err != nil {
				t.Fatal(err)
			}
			if got.State != sandboxrec.Running || time.Now().After(got.ExpiresAt.Add(3*time.Second)) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got.State != sandboxrec.Stopped || got.Reason != sandbox.ReasonExpired {
			t.Errorf("%s 3 s past its expiry: state %s, reason %q", id, got.State, got.Reason)
			continue
		}
		if late := got.EndedAt.Sub(got.ExpiresAt); late < 0 || late > 2*time.Second {
			t.Errorf("%s stopped %v after its expiry, want within 2 s", id, late)
		}
		if runtimeHas(t, id) {
			t.Errorf("runtime still lists expired %s", id)
		}
	}
	if got, _ := svc.Get(ctx, c, extended.ID); got.State != sandboxrec.Running {
		t.Errorf("extended sandbox: %s %q", got.State, got.Reason)
	}
}

// TestRestart plays a daemon restart: a new Service on the same store and
// a new runtime on the same state dir re-attaches to live sandboxes, marks
// the one that vanished meanwhile failed, finishes a create that crashed
// between runtime and store, and destroys a runtime sandbox nobody owns.
func TestRestart(t *testing.T) {
	ctx := context.Background()
	rt1 := testRuntime(t)
	svc1 := newService(t)
	c := tenant(t, 0, 0)
	kept := create(t, svc1, c, sandbox.CreateRequest{})
	if _, err := svc1.WriteFile(ctx, c, kept.ID, "state.txt", stringsReader("before restart"), 0o644); err != nil {
		t.Fatal(err)
	}
	lost := create(t, svc1, c, sandbox.CreateRequest{})
	sb, err := rt1.Get(ctx, lost.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Destroy(ctx); err != nil { // behind the Service's back
		t.Fatal(err)
	}
	// A crash after the runtime created the sandbox but before the record
	// said running.
	half := sandboxrec.Sandbox{ID: "sb-halfcreated0001", TenantID: c.TenantID, State: sandboxrec.Creating,
		Template: "base", CPUs: 1, MemoryMB: 512, Pids: 256, DiskMB: 1024,
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := shared.CreateSandbox(ctx, half); err != nil {
		t.Fatal(err)
	}
	if _, err := rt1.Create(ctx, runtime.Spec{ID: half.ID}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc1.Delete(ctx, c, half.ID) })
	orphan := "sb-orphan00000001"
	if _, err := rt1.Create(ctx, runtime.Spec{ID: orphan}); err != nil {
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

	if res := run(t, svc2, c, kept.ID, "cat state.txt"); res.Stdout != "before restart" {
		t.Errorf("re-attached sandbox reads %q", res.Stdout)
	}
	for id, want := range map[string]string{kept.ID: sandboxrec.Running, half.ID: sandboxrec.Running, lost.ID: sandboxrec.Failed} {
		if got, err := svc2.Get(ctx, c, id); err != nil || got.State != want {
			t.Errorf("%s after restart: %s (%v), want %s", id, got.State, err, want)
		}
	}
	if got, _ := svc2.Get(ctx, c, lost.ID); got.Reason != sandbox.ReasonLostOnRestart || got.EndedAt.IsZero() {
		t.Errorf("lost sandbox: reason %q, ended %v", got.Reason, got.EndedAt)
	}
	if runtimeHas(t, orphan) {
		t.Errorf("orphaned runtime sandbox %s survived the restart", orphan)
	}
	if _, err := svc2.Exec(ctx, c, lost.ID, sandbox.ExecRequest{Command: "true"}); err == nil {
		t.Error("exec in the lost sandbox succeeded")
	}
}
