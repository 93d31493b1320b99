package linux_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

func TestSignal(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	ctx := context.Background()
	p, err := sb.Start(ctx, runtime.ExecRequest{Argv: []string{"sleep", "100"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Signal(ctx, p.Pid(), int(syscall.SIGTERM)); err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait()
	if err != nil || st.Signal != int(syscall.SIGTERM) || st.Code != 143 {
		t.Errorf("after SIGTERM: %+v %v, want signal 15 and exit 143", st, err)
	}
	if err := sb.Signal(ctx, 1, int(syscall.SIGKILL)); err == nil {
		t.Errorf("signalling the agent (pid 1) was allowed")
	}
}

// TestInitSurvivesStraySignals: the signals whose Go handler would end
// the init (or stop it) do not reach it, from inside its pid namespace
// (where it is PID 1) or from the host: only SIGKILL ends a sandbox.
func TestInitSurvivesStraySignals(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	pid := sb.(interface{ InitPid() int }).InitPid()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1,
		syscall.SIGUSR2, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGABRT, syscall.SIGSYS} {
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatalf("kill %v: %v", sig, err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("the init is gone after stray signals: %v", err)
	}
	if !containsState(b, 'S') && !containsState(b, 'R') {
		t.Fatalf("the init's state after stray signals: %s", b)
	}
	if r := sh(t, sb, "echo alive; grep -E '^Sig(Ign|Blk)' /proc/self/status"); r.stdout != "alive\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n" {
		t.Errorf("a command after stray signals: %q (%+v), want it alive with no signal ignored or blocked", r.stdout, r.st)
	}
}

func TestStats(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	mustSh(t, sb, `python3 -c '
import time
a = b"a" * (64 << 20)
t = time.process_time()
while time.process_time() - t < 0.3: pass'`)
	st, err := sb.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUSeconds < 0.25 || st.MemoryPeakBytes < 64<<20 || st.MemoryBytes <= 0 {
		t.Errorf("stats after burning 0.3 s of CPU and 64 MiB: %+v", st)
	}
	// Pids counts the commands' tasks, not the agent's threads.
	if st.Pids != 0 {
		t.Errorf("pids with no command running: %d", st.Pids)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := sb.Start(ctx, runtime.ExecRequest{Shell: "sleep 30 & sleep 30", Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if st, err = sb.Stats(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st.Pids == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pids with a shell and two sleeps running: %d, want 3", st.Pids)
		}
	}
}

// TestReattach plays a daemon restart: a second runtime on the same state
// directory finds the sandbox, runs commands in it and destroys it fully.
func TestReattach(t *testing.T) {
	ctx := context.Background()
	sb := newSandbox(t, runtime.Limits{})
	mustSh(t, sb, "echo kept > /home/user/f")
	r2, err := linux.New(linux.Config{StateDir: stateDir, Binary: linuxtest.Init(t)})
	if err != nil {
		t.Fatal(err)
	}
	again, err := r2.Get(ctx, sb.ID())
	if err != nil {
		t.Fatalf("re-attach: %v", err)
	}
	if out := mustSh(t, again, "cat /home/user/f"); out != "kept\n" {
		t.Errorf("re-attached sandbox reads %q", out)
	}
	initPid := sb.(interface{ InitPid() int }).InitPid()
	if err := again.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	// The first runtime started the init; it must now be gone (a zombie
	// until that runtime's destroy reaps it).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + itoa(initPid) + "/stat")
		if err != nil || containsState(b, 'Z') {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("init %d still alive after destroy from a second runtime", initPid)
		}
	}
}

// TestConcurrentSandboxes creates, uses and destroys sandboxes in parallel:
// uid ranges, ids, cgroups and disk limits must not collide.
func TestConcurrentSandboxes(t *testing.T) {
	r := testRuntime(t)
	ctx := context.Background()
	const n = 6
	errs := make(chan error, n)
	hostUIDs := make(chan string, n)
	for i := range n {
		go func() {
			id := fmt.Sprintf("par%d-%d", os.Getpid(), i)
			sb, err := r.Create(ctx, runtime.Spec{ID: id, Env: map[string]string{"N": fmt.Sprint(i)}})
			if err != nil {
				errs <- err
				return
			}
			var out bytes.Buffer
			st, err := sb.Exec(ctx, runtime.ExecRequest{Shell: `echo $N $(awk '{print $2}' /proc/self/uid_map)`, Stdout: &out})
			derr := sb.Destroy(ctx)
			switch {
			case err != nil || derr != nil:
				errs <- fmt.Errorf("%s: exec %v, destroy %v", id, err, derr)
			case st.Code != 0 || !strings.HasPrefix(out.String(), fmt.Sprint(i)+" "):
				errs <- fmt.Errorf("%s: exit %d output %q", id, st.Code, out.String())
			default:
				f := strings.Fields(out.String())
				hostUIDs <- f[len(f)-1]
				errs <- nil
			}
		}()
	}
	seen := map[string]bool{}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
			continue
		}
		u := <-hostUIDs
		if seen[u] {
			t.Errorf("two concurrent sandboxes share host uid %s", u)
		}
		seen[u] = true
	}
}
