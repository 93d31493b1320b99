package sandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// TestIdleTimeout: an unused sandbox is destroyed after its idle timeout;
// one running a background process is not, however long it is not called.
func TestIdleTimeout(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	idle, err := svc.Create(ctx, c, sandbox.CreateRequest{IdleTimeoutS: 2})
	if err != nil {
		t.Fatal(err)
	}
	busy := create(t, svc, c, sandbox.CreateRequest{IdleTimeoutS: 2})
	if _, err := svc.StartBackground(ctx, c, busy.ID, sandbox.ExecRequest{Command: "sleep 30", Background: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, c, sandbox.CreateRequest{IdleTimeoutS: -1}); !errors.Is(err, sandbox.ErrInvalid) {
		t.Errorf("negative idle timeout: %v", err)
	}
	// Not a timed assertion on speed: poll with a generous bound.
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := shared.GetSandbox(ctx, idle.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == sandboxrec.Stopped {
			if got.Reason != sandbox.ReasonIdle {
				t.Errorf("stopped for %q, want %q", got.Reason, sandbox.ReasonIdle)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle sandbox still %s after 15 s", got.State)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got, err := shared.GetSandbox(ctx, busy.ID); err != nil || got.State != sandboxrec.Running {
		t.Errorf("sandbox with a running process: %+v, %v", got, err)
	}
	if runtimeHas(t, idle.ID) {
		t.Errorf("the idle sandbox is still in the runtime")
	}
}

// TestIdleAttached: a client attached to a session's terminal keeps the
// sandbox in use however long nobody types; once it detaches, the idle
// timeout runs again.
func TestIdleAttached(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	sb := create(t, svc, c, sandbox.CreateRequest{IdleTimeoutS: 2})
	ses, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{Mode: sandbox.SessionModeInteractive})
	if err != nil {
		t.Fatal(err)
	}
	term, err := svc.AttachSession(ctx, c, sb.ID, ses.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(term.Close)
	// Read from the store directly: a call on the service would be use.
	state := func() sandboxrec.Sandbox {
		t.Helper()
		got, err := shared.GetSandbox(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// Well past the timeout (the reaper looks at least every second).
	time.Sleep(5 * time.Second)
	if got := state(); got.State != sandboxrec.Running {
		t.Fatalf("sandbox with an attached terminal: %s %q after 5 s, want running", got.State, got.Reason)
	}
	term.Close()
	closed := time.Now()
	deadline := closed.Add(15 * time.Second)
	for {
		got := state()
		if got.State == sandboxrec.Stopped {
			if got.Reason != sandbox.ReasonIdle {
				t.Errorf("stopped for %q, want %q", got.Reason, sandbox.ReasonIdle)
			}
			// The idle period starts at the detach, not before.
			if d := got.EndedAt.Sub(closed); d < 1500*time.Millisecond {
				t.Errorf("stopped %v after the detach, want about 2 s or more", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox still %s 15 s after the detach", got.State)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if runtimeHas(t, sb.ID) {
		t.Errorf("the idle sandbox is still in the runtime")
	}
}
