package linux_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/testenv"
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
	// The bomb's own agent still serves while its commands hold every pid
	// they may: calls at once (each may want a thread of the agent's own)
	// answer, and a command it cannot fork is refused, not the agent lost.
	errs := make(chan error, 8)
	for i := range cap(errs) {
		go func() {
			path := fmt.Sprintf("/tmp/during-bomb-%d", i)
			if _, err := bomb.WriteFile(ctx, path, strings.NewReader("x"), 0o644); err != nil {
				errs <- err
				return
			}
			_, err := bomb.Stat(ctx, path)
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("file call in the bomb's sandbox while its pids are full: %v", err)
		}
	}
	if st, err := bomb.Exec(ctx, runtime.ExecRequest{Shell: "true"}); err == nil && st.Code == 0 {
		t.Logf("an exec still forked beside the bomb (it had a pid free): %+v", st)
	}
	if _, err := bomb.ListDir(ctx, "/tmp"); err != nil {
		t.Errorf("the bomb's agent after a refused exec: %v", err)
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

// TestCommandsCgroup: where the pids controller is v1, the init's fork
// thread, and every command it starts, sit in the sandbox group's
// commands subgroup, and the init's other threads in the group: the
// commands' limit is theirs alone, and the agent needs no threads started
// ahead (the idle init keeps few).
func TestCommandsCgroup(t *testing.T) {
	host, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\d+:pids:`).Match(host) {
		testenv.Unsupported(t, "pids is not a v1 controller on this host: the init keeps its threads started instead (TestForkBombStopsAtPidsLimit covers that)")
	}
	sb := newSandbox(t, runtime.Limits{Pids: 32})
	initPid := sb.(interface{ InitPid() int }).InitPid()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/cgroup", initPid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("the init's threads: %v %v", tasks, err)
	}
	commands := regexp.MustCompile(`(?m):pids:(/\S+/commands)$`)
	var group string
	var inCommands int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := commands.FindSubmatch(b); m != nil {
			group, inCommands = string(m[1]), inCommands+1
		}
	}
	if inCommands != 1 {
		t.Fatalf("%d of the init's %d threads in the commands subgroup, want 1 (the fork thread)", inCommands, len(tasks))
	}
	if len(tasks) >= 16 {
		t.Errorf("the idle init has %d threads: none should be started ahead", len(tasks))
	}
	// Commands land there, and the sandbox's pids count them alone.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := sb.Start(ctx, runtime.ExecRequest{Shell: "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 100 & done; wait"}); err != nil {
		t.Fatal(err)
	}
	var sleeps int
	var procs []byte
	for deadline := time.Now().Add(10 * time.Second); sleeps < 10 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if procs, err = os.ReadFile(filepath.Join("/sys/fs/cgroup/pids", group, "cgroup.procs")); err != nil {
			t.Fatal(err)
		}
		sleeps = 0
		for _, pid := range strings.Fields(string(procs)) {
			if cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline"); strings.HasPrefix(string(cmd), "sleep\x00") {
				sleeps++
			}
		}
	}
	if sleeps != 10 {
		t.Errorf("%d sleeps in the commands subgroup (%s), want 10", sleeps, procs)
	}
	st, err := sb.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The shell and its ten sleeps; the fork thread is the agent's.
	if st.Pids != 11 {
		t.Errorf("Stats().Pids = %d with a shell and 10 sleeps running, want 11", st.Pids)
	}
}
