package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// TestRestart kills the daemon with SIGKILL while sandboxes exist and a
// command runs; the restarted daemon re-attaches and nothing leaks.
func TestRestart(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	kept := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Env: map[string]string{"AIRLOCK_SANDBOX": "kept"}}))
	must[int64](t)(c.WriteFile(ctx, kept.ID, "state", strings.NewReader("survives"), 0o644))
	gone := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Env: map[string]string{"AIRLOCK_SANDBOX": "gone"}}))
	must[client.ExecResult](t)(c.Exec(ctx, gone.ID, client.ExecRequest{Command: "true"}))
	running := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, kept.ID, client.ExecRequest{Command: "sleep 60"})
		running <- err
	}()
	time.Sleep(300 * time.Millisecond)
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	s.cmd = nil
	if err := <-running; err == nil {
		t.Errorf("the command's stream survived the daemon's death")
	}
	s.start()
	c = s.admin()
	got := must[client.Sandbox](t)(c.GetSandbox(ctx, kept.ID))
	if got.State != client.StateRunning {
		t.Fatalf("after restart: %+v", got)
	}
	res := must[client.ExecResult](t)(c.Exec(ctx, kept.ID, client.ExecRequest{Command: "cat state; echo; pgrep -c sleep || true"}))
	if res.Stdout != "survives\n0\n" {
		t.Errorf("re-attached sandbox: %q (the interrupted sleep must be gone)", res.Stdout)
	}
	for _, id := range []string{kept.ID, gone.ID} {
		if err := c.DeleteSandbox(ctx, id); err != nil {
			t.Error(err)
		}
	}
	assertNoSandboxesLeft(t, s, kept.ID, gone.ID)
	for _, tag := range []string{"kept", "gone"} {
		if procs := procsWithEnv("AIRLOCK_SANDBOX=" + tag); len(procs) > 0 {
			t.Errorf("processes of sandbox %s left: %v", tag, procs)
		}
	}
}
