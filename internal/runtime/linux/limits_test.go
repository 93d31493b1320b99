package linux_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

func TestForkBombStopsAtPidsLimit(t *testing.T) {
	bomb := newSandbox(t, runtime.Limits{Pids: 64})
	neighbour := newSandbox(t, runtime.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Forks forever; past the limit each fork fails and the loop goes on
	// (a shell would end at its first failed fork, and its children with
	// it, maybe between two polls below).
	const forkForever = `python3 -c '
import os, time
while True:
    try:
        if os.fork() == 0:
            time.sleep(1000)
            os._exit(0)
    except OSError:
        time.sleep(0.001)
'`
	p, err := bomb.Start(ctx, runtime.ExecRequest{Shell: forkForever, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		st  runtime.ExitStatus
		err error
	}
	exited := make(chan result, 1)
	go func() {
		st, err := p.Wait()
		exited <- result{st, err}
	}()
	// Wait until the bomb has filled its pids budget.
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case r := <-exited:
			t.Fatalf("the fork bomb ended before it filled its budget: %+v, %v", r.st, r.err)
		default:
		}
		st, err := bomb.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Pids > 64 {
			t.Fatalf("sandbox has %d tasks, limit is 64", st.Pids)
		}
		if st.Pids >= 60 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fork bomb never reached the limit (%d tasks)", st.Pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out := mustSh(t, neighbour, "echo alive"); out != "alive\n" {
		t.Errorf("neighbour sandbox: %q", out)
	}
	if err := bomb.Destroy(context.Background()); err != nil {
		t.Fatalf("destroy the bomb's sandbox: %v", err)
	}
	// Whatever status arrives once the sandbox is gone, Wait must return.
	<-exited
}

func TestMemoryHogIsOOMKilled(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{MemoryMB: 64, TmpMB: 16})
	r := sh(t, sb, `python3 -c 'a = b"a" * (512 << 20); print(len(a))'`)
	if !r.st.OOMKilled || r.st.Code != 137 {
		t.Errorf("memory hog: %+v, want OOM-killed with exit 137", r.st)
	}
	// The agent survived: the sandbox still runs commands.
	if out := mustSh(t, sb, "echo alive"); out != "alive\n" {
		t.Errorf("after OOM: %q", out)
	}
}

func TestDiskFillStopsAtLimit(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{DiskMB: 64})
	r := sh(t, sb, "dd if=/dev/zero of=/home/user/fill bs=1M count=256 2>&1; stat -c %s /home/user/fill")
	if r.st.Code != 0 {
		t.Fatalf("stat after fill: %+v %s", r.st, r.stderr)
	}
	if !strings.Contains(r.stdout, "Disk quota exceeded") && !strings.Contains(r.stdout, "No space left") {
		t.Errorf("dd did not fail with EDQUOT/ENOSPC: %q", r.stdout)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	size, _ := strconv.ParseInt(lines[len(lines)-1], 10, 64)
	if size > 64<<20 {
		t.Errorf("file grew to %d bytes past the 64 MiB limit", size)
	}
	if size < 32<<20 {
		t.Errorf("file stopped at %d bytes, far below the limit", size)
	}
}

func TestTimeoutKillsProcessTree(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	r := execIn(t, sb, runtime.ExecRequest{
		Shell:   "sleep 300 & (setsid sleep 301 &); sleep 302",
		Timeout: time.Second,
	})
	if !r.st.TimedOut {
		t.Errorf("status %+v, want timed out", r.st)
	}
	out := mustSh(t, sb, "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done")
	for _, s := range []string{"sleep 300", "sleep 301", "sleep 302"} {
		if strings.Contains(out, s) {
			t.Errorf("%q survived the timeout", s)
		}
	}
}

// TestDestroyLeavesNothing starts a process that escapes its exec (double
// fork, setsid) and checks that destroy removes every trace.
func TestDestroyLeavesNothing(t *testing.T) {
	r := testRuntime(t)
	ctx := context.Background()
	id := fmt.Sprintf("leak%d", os.Getpid())
	sb, err := r.Create(ctx, runtime.Spec{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	mustSh(t, sb, "(setsid sh -c 'sleep 1000' </dev/null >/dev/null 2>&1 &) ; sleep 0.1")
	initPid := sb.(interface{ InitPid() int }).InitPid()
	pidNS, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", initPid))
	netNS, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", initPid))
	if pidNS == "" || netNS == "" {
		t.Fatalf("cannot read the init's namespaces")
	}
	if err := sb.Destroy(ctx); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		for ns, want := range map[string]string{"pid": pidNS, "net": netNS} {
			if l, _ := os.Readlink(p + "/ns/" + ns); l == want {
				t.Errorf("process %s still in the sandbox's %s namespace", p, ns)
			}
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), id) {
		t.Errorf("host mount table still mentions %s", id)
	}
	cgs, _ := filepath.Glob("/sys/fs/cgroup/*/airlock/" + id)
	cgs2, _ := filepath.Glob("/sys/fs/cgroup/airlock/" + id)
	if len(cgs)+len(cgs2) > 0 {
		t.Errorf("cgroups left: %v %v", cgs, cgs2)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "sandboxes", id)); !os.IsNotExist(err) {
		t.Errorf("sandbox directory left (stat: %v)", err)
	}
	if ids, _ := r.List(ctx); strings.Contains(strings.Join(ids, " "), id) {
		t.Errorf("runtime still lists %s", id)
	}
}
