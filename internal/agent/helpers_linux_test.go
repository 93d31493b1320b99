package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
)

// The reaping server must be PID 1 or a subreaper and wait4(-1): that would
// steal children from the test binary, so it runs in a child process.
const helperEnv = "AGENT_TEST_HELPER_SOCKET"

func TestMain(m *testing.M) {
	if sock := os.Getenv(helperEnv); sock != "" {
		os.Exit(runHelper(sock))
	}
	os.Exit(m.Run())
}

func runHelper(sock string) int {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cfg := Config{UID: -1, GID: -1, Root: "/", Workdir: os.Getenv("AGENT_TEST_WORKDIR"), Env: []string{"PATH=/usr/bin:/bin", "BASE=base", "FOO=base"}, Reap: true}
	if err := Serve(ctx, ln, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// socketPath returns a short socket path (sun_path holds 108 bytes, test
// temp dirs can be longer).
func socketPath(t *testing.T) string {
	dir, err := os.MkdirTemp("", "agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s")
}

// startServer runs Serve in this process and returns a client for it.
func startServer(t *testing.T, cfg Config) *Client {
	t.Helper()
	sock := socketPath(t)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return Dial(sock)
}

// startReaper runs a Reap server in a child process with workdir as its
// workdir and "/" as its root.
func startReaper(t *testing.T, workdir string) *Client {
	t.Helper()
	sock := socketPath(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+sock, "AGENT_TEST_WORKDIR="+workdir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("reaper helper: %v", err)
		}
	})
	c := Dial(sock)
	waitFor(t, "helper agent to answer", func() bool { return c.Ping(context.Background()) == nil })
	return c
}

// waitFor polls cond. The deadline only bounds a broken test; nothing
// asserts how long cond took.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// proc identifies a process across pid reuse (pid_max can be small and
// other tests fork too).
type proc struct {
	pid   int
	start uint64
}

func procOf(pid int) proc {
	return proc{pid, procStatOf(pid).start}
}

func procStatOf(pid int) procStat {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}
	}
	st, _ := parseStat(b)
	return st
}

// state returns the state letter of the process, or 0 when it is gone.
func (p proc) state() byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat")
	if err != nil {
		return 0
	}
	if st, ok := parseStat(b); !ok || st.start != p.start {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	return b[i+2]
}

// dead reports that the process no longer runs (gone, or a zombie).
func (p proc) dead() bool {
	s := p.state()
	return s == 0 || s == 'Z' || s == 'X'
}

// kill cleans up after a failing test so no sleeper outlives it.
func (p proc) kill() {
	if p.pid > 0 && !p.dead() {
		if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			fmt.Fprintln(os.Stderr, "kill", p.pid, err)
		}
	}
}

// readPid waits for a pid written to file by a test process.
func readPid(t *testing.T, file string) proc {
	t.Helper()
	var pid int
	waitFor(t, "pid file "+file, func() bool {
		b, err := os.ReadFile(file)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	p := procOf(pid)
	if p.start == 0 {
		t.Fatalf("process %d from %s exited before the test could observe it", pid, file)
	}
	return p
}

func requiresRoot(t *testing.T) {
	t.Helper()
	testenv.RequiresRoot(t, "switch to uid 65534")
}
