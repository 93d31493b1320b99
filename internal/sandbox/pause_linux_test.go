package sandbox_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// cpuSeconds is the sandbox's CPU time as its cgroup counts it.
func cpuSeconds(t *testing.T, id string) float64 {
	t.Helper()
	sb, err := testRuntime(t).Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sb.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.CPUSeconds
}

// waitState polls the store (a Get would count as use, and hold off an
// idle timeout) until the sandbox is in state, or fails after limit.
func waitState(t *testing.T, id, state string, limit time.Duration) sandboxrec.Sandbox {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		rec, err := shared.GetSandbox(context.Background(), id)
		if err == nil && rec.State == state {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s: %+v, %v; want %s within %v", id, rec, err, state, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPause: a paused sandbox spends no CPU, refuses calls with
// ErrPaused, keeps its processes and memory, and runs on when resumed.
func TestPause(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	sb := create(t, svc, c, sandbox.CreateRequest{})
	// Memory (a /tmp file is tmpfs pages) and a process that spins.
	run(t, svc, c, sb.ID, `echo kept > /tmp/mem`)
	spin, err := svc.StartBackground(ctx, c, sb.ID, sandbox.ExecRequest{Command: "while :; do :; done"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	before := sb.ExpiresAt
	rec, err := svc.Pause(ctx, c, sb.ID)
	if err != nil || rec.State != sandboxrec.Paused {
		t.Fatalf("pause: %+v, %v", rec, err)
	}
	if again, err := svc.Pause(ctx, c, sb.ID); err != nil || again.State != sandboxrec.Paused {
		t.Errorf("pausing a paused sandbox: %+v, %v", again, err)
	}
	cpu0 := cpuSeconds(t, sb.ID)
	time.Sleep(2 * time.Second)
	if used := cpuSeconds(t, sb.ID) - cpu0; used > 0.02 {
		t.Errorf("paused sandbox used %.3f s of CPU in 2 s (a spinning process), want < 1%%", used)
	}
	_, err = svc.Exec(ctx, c, sb.ID, sandbox.ExecRequest{Command: "true"})
	wantKind(t, "exec while paused", err, sandbox.ErrPaused)
	wantKind(t, "exec while paused", err, sandbox.ErrConflict)
	_, err = svc.ReadFile(ctx, c, sb.ID, "/tmp/mem", &strings.Builder{})
	wantKind(t, "read while paused", err, sandbox.ErrPaused)

	rec, err = svc.Resume(ctx, c, sb.ID)
	if err != nil || rec.State != sandboxrec.Running {
		t.Fatalf("resume: %+v, %v", rec, err)
	}
	// The lifetime clock stopped while paused.
	if !rec.ExpiresAt.After(before.Add(time.Second)) {
		t.Errorf("expires_at %v after a 2 s pause, was %v: the clock did not stop", rec.ExpiresAt, before)
	}
	// Running again: it gets CPU (0.1 s of it; on a loaded machine that
	// can take longer than 0.1 s of wall time).
	cpu1 := cpuSeconds(t, sb.ID)
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		used := cpuSeconds(t, sb.ID) - cpu1
		if used >= 0.1 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("resumed spinner used %.3f s of CPU in 10 s: not running", used)
			break
		}
	}
	if res := run(t, svc, c, sb.ID, `cat /tmp/mem; kill -0 `+itoa(spin.Pid)+` && echo alive`); res.Stdout != "kept\nalive\n" {
		t.Errorf("after resume: %q, want the file and the process kept", res.Stdout)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestAutoResume: a sandbox created with auto_resume runs the call that
// finds it paused, resumed first.
func TestAutoResume(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	sb := create(t, svc, c, sandbox.CreateRequest{AutoResume: true})
	if _, err := svc.Pause(ctx, c, sb.ID); err != nil {
		t.Fatal(err)
	}
	if res := run(t, svc, c, sb.ID, "echo up"); res.Stdout != "up\n" {
		t.Errorf("exec on an auto_resume sandbox: %+v", res)
	}
	if rec, _ := svc.Get(ctx, c, sb.ID); rec.State != sandboxrec.Running {
		t.Errorf("after the exec: %s, want running", rec.State)
	}
}

// TestPauseSurvivesRestart: paused stays paused across a daemon restart,
// and the next daemon resumes it with its processes.
func TestPauseSurvivesRestart(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	sb := create(t, svc, c, sandbox.CreateRequest{})
	run(t, svc, c, sb.ID, `echo kept > /tmp/mem`)
	if _, err := svc.Pause(ctx, c, sb.ID); err != nil {
		t.Fatal(err)
	}
	svc.Close()
	svc2 := newService(t)
	if rec, err := svc2.Get(ctx, c, sb.ID); err != nil || rec.State != sandboxrec.Paused {
		t.Fatalf("after restart: %+v, %v; want paused", rec, err)
	}
	_, err := svc2.Exec(ctx, c, sb.ID, sandbox.ExecRequest{Command: "true"})
	wantKind(t, "exec while paused, after restart", err, sandbox.ErrPaused)
	if _, err := svc2.Resume(ctx, c, sb.ID); err != nil {
		t.Fatal(err)
	}
	if res := run(t, svc2, c, sb.ID, "cat /tmp/mem"); res.Stdout != "kept\n" {
		t.Errorf("after resume: %+v", res)
	}
	if err := svc2.Delete(ctx, c, sb.ID); err != nil {
		t.Fatal(err)
	}
}

// TestPausedExpires: a sandbox paused past its max_paused_s is destroyed
// as expired; one whose idle_action is pause is paused when idle.
func TestPausedExpires(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	sb := create(t, svc, c, sandbox.CreateRequest{MaxPausedS: 1})
	if _, err := svc.Pause(ctx, c, sb.ID); err != nil {
		t.Fatal(err)
	}
	rec := waitState(t, sb.ID, sandboxrec.Stopped, 10*time.Second)
	if rec.Reason != sandbox.ReasonExpired || runtimeHas(t, sb.ID) {
		t.Errorf("after max_paused_s: reason %q, runtime has it: %v", rec.Reason, runtimeHas(t, sb.ID))
	}

	idle := create(t, svc, c, sandbox.CreateRequest{IdleTimeoutS: 1, IdleAction: sandbox.IdlePause})
	waitState(t, idle.ID, sandboxrec.Paused, 10*time.Second)
	if _, err := svc.Resume(ctx, c, idle.ID); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Create(ctx, c, sandbox.CreateRequest{IdleAction: "sleep"})
	wantKind(t, "idle_action sleep", err, sandbox.ErrInvalid)
	_, err = svc.Create(ctx, c, sandbox.CreateRequest{IdleAction: sandbox.IdlePause})
	wantKind(t, "idle_action pause without idle_timeout_s", err, sandbox.ErrInvalid)
}
