package linux_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// TestSpawner: inits forked by the spawner are this process's children
// (so Destroy waits on them as before), they do not inherit the spawner's
// socket (which would let a sandbox ask a root process for any program),
// and a spawner that died is replaced on the next create.
func TestSpawner(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	pid := sb.(interface{ InitPid() int }).InitPid()
	if ppid := statPPid(t, pid); ppid != os.Getpid() {
		t.Fatalf("init %d has parent %d, want this process %d", pid, ppid, os.Getpid())
	}
	sp := spawnerPid(t)
	sock, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(sp), "fd", "3"))
	if err != nil || !strings.HasPrefix(sock, "socket:") {
		t.Fatalf("spawner fd 3: %q, %v", sock, err)
	}
	fds, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	for _, fd := range fds {
		if l, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name())); l == sock {
			t.Errorf("init holds the spawner's socket as fd %s", fd.Name())
		}
	}

	if err := syscall.Kill(sp, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// kill only queues the signal: until the spawner has exited, a request
	// sent to it can still be read by it and lost (the create then fails, as
	// it must when the init might be running). Replacing a dead spawner is
	// what this checks, so wait for the death.
	waitExited(t, sp)
	sb2 := newSandbox(t, runtime.Limits{})
	if ppid := statPPid(t, sb2.(interface{ InitPid() int }).InitPid()); ppid != os.Getpid() {
		t.Fatalf("after the spawner died: init's parent %d, want %d", ppid, os.Getpid())
	}
	if sp2 := spawnerPid(t); sp2 == sp {
		t.Fatalf("the dead spawner %d was not replaced", sp)
	}
}

func statPPid(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid ...: comm may hold spaces, so cut after ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}

// waitExited waits until pid, a child of this process, has exited (a
// zombie not yet reaped, or gone).
func waitExited(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil || containsState(b, 'Z') {
			return
		}
	}
	t.Fatalf("process %d still runs 10s after SIGKILL", pid)
}

// spawnerPid finds the live spawner among this process's children.
func spawnerPid(t *testing.T) int {
	t.Helper()
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !strings.HasSuffix(string(cmd), "\x00__spawner\x00") {
			continue
		}
		if b, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "stat")); containsState(b, 'Z') {
			continue // killed, not yet reaped
		}
		if statPPid(t, pid) == os.Getpid() {
			return pid
		}
	}
	t.Fatal("no spawner among this process's children")
	return 0
}
