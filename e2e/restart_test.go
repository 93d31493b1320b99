package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
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
	lost := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	running := make(chan error, 1)
	go func() {
		// A JSON exec: its client does not re-attach (ExecStream would).
		_, err := c.Exec(ctx, kept.ID, client.ExecRequest{Command: "sleep 60"})
		running <- err
	}()
	time.Sleep(300 * time.Millisecond)
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	s.cmd = nil
	if err := <-running; err == nil {
		t.Errorf("the command's request survived the daemon's death")
	}
	// While the daemon is down, one sandbox dies (its init, which this
	// test's daemon started, is killed by pid).
	killInit(t, s, lost.ID)
	s.start()
	c = s.admin()
	got := must[client.Sandbox](t)(c.GetSandbox(ctx, kept.ID))
	if got.State != client.StateRunning {
		t.Fatalf("after restart: %+v", got)
	}
	// The command cut off from its client goes on (it outlives the
	// daemon, as background processes do).
	res := must[client.ExecResult](t)(c.Exec(ctx, kept.ID, client.ExecRequest{Command: "cat state; echo; pgrep -c sleep || true"}))
	if res.Stdout != "survives\n1\n" {
		t.Errorf("re-attached sandbox: %q (the interrupted sleep goes on)", res.Stdout)
	}
	// The dead one is reported failed with a reason, never silently lost.
	if got := must[client.Sandbox](t)(c.GetSandbox(ctx, lost.ID)); got.State != client.StateFailed || !strings.Contains(got.Reason, "lost") {
		t.Errorf("sandbox whose init died: %+v", got)
	}
	if _, err := c.Exec(ctx, lost.ID, client.ExecRequest{Command: "true"}); !errors.Is(err, client.ErrConflict) {
		t.Errorf("exec in the failed sandbox: %v, want conflict", err)
	}
	for _, id := range []string{kept.ID, gone.ID} {
		if err := c.DeleteSandbox(ctx, id); err != nil {
			t.Error(err)
		}
	}
	assertNoSandboxesLeft(t, s, kept.ID, gone.ID, lost.ID)
	assertNoMountsLeft(t, s)
	for _, tag := range []string{"kept", "gone"} {
		if procs := procsWithEnv("AIRLOCK_SANDBOX=" + tag); len(procs) > 0 {
			t.Errorf("processes of sandbox %s left: %v", tag, procs)
		}
	}
}

// killInit kills the init of sandbox id, found through the runtime's state
// file, and waits until it is gone.
func killInit(t *testing.T, s *server, id string) {
	t.Helper()
	pid := initPid(t, s, id)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("init %d of %s still alive", pid, id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// initPid is the host pid of sandbox id's init (its agent), from the
// runtime's state file.
func initPid(t *testing.T, s *server, id string) int {
	t.Helper()
	name, err := os.Readlink(filepath.Join(s.dataDir, "ids", id))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(s.dataDir, "sandboxes", name, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Pid int }
	if err := json.Unmarshal(b, &st); err != nil || st.Pid <= 1 {
		t.Fatalf("state of %s: %s (%v)", id, b, err)
	}
	return st.Pid
}

// assertNoMountsLeft checks the host's mount table: the only mount under
// the data dir is the disk pool itself (sandbox mounts live in their own
// mount namespaces and must never show here).
func assertNoMountsLeft(t *testing.T, s *server) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	pool := filepath.Join(s.dataDir, "sandboxes")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if mp := f[4]; strings.HasPrefix(mp, s.dataDir+"/") && mp != pool {
			t.Errorf("mount left under the data dir: %s", line)
		}
	}
}
