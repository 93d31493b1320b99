package sandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/store"
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
		if got.State == store.StateStopped {
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
	if got, err := shared.GetSandbox(ctx, busy.ID); err != nil || got.State != store.StateRunning {
		t.Errorf("sandbox with a running process: %+v, %v", got, err)
	}
	if runtimeHas(t, idle.ID) {
		t.Errorf("the idle sandbox is still in the runtime")
	}
}
