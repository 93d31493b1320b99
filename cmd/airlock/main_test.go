package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	linuxtest.Cleanup()
	os.Exit(code)
}

// airlock runs the built binary with its own state directory, which is
// unmounted and removed when the test ends.
func airlock(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	linuxtest.Require(t)
	// Not t.TempDir: its parent is private to root, and a sandbox's root
	// (an unprivileged host uid) must traverse the state dir.
	state := linuxtest.StateDir(t)
	// Embedded, whatever server this machine may run.
	return runCLI(t, []string{"AIRLOCK_DATA_DIR=" + state, "AIRLOCK_RUN_LOCAL=1"}, strings.NewReader(stdin), args...)
}

func TestRunExitCode(t *testing.T) {
	_, stderr, code := airlock(t, "", "run", "--", "sh", "-c", "exit 7")
	if code != 7 {
		t.Errorf("exit code %d, want 7 (stderr %q)", code, stderr)
	}
}

func TestRunPython(t *testing.T) {
	out, stderr, code := airlock(t, "", "run", "--", "python3", "-c", "print(6*7)")
	if out != "42\n" || code != 0 {
		t.Errorf("got %q exit %d (stderr %q), want 42", out, code, stderr)
	}
}

func TestRunStdinAndFlags(t *testing.T) {
	out, stderr, code := airlock(t, "hello\n", "run", "--memory", "256M", "--cpus", "1", "--pids", "64",
		"--disk", "128M", "--env", "GREETING=hi", "--workdir", "/tmp", "--", "sh", "-c", `read l; echo "$GREETING $l $(pwd)"`)
	if out != "hi hello /tmp\n" || code != 0 {
		t.Errorf("got %q exit %d (stderr %q)", out, code, stderr)
	}
}

func TestRunKilledBySignal(t *testing.T) {
	_, _, code := airlock(t, "", "run", "--", "sh", "-c", "kill -TERM $$")
	if code != 128+15 {
		t.Errorf("exit code %d, want 143", code)
	}
}

func TestRunBadInput(t *testing.T) {
	linuxtest.Require(t)
	for _, args := range [][]string{
		{"run"},
		{"run", "--memory", "lots", "--", "true"},
		{"run", "--cpus", "9999", "--", "true"},
		{"run", "--env", "NOEQUALS", "--", "true"},
		{"nosuchcommand"},
	} {
		_, stderr, code := airlock(t, "", args...)
		if code == 0 || stderr == "" {
			t.Errorf("airlock %v: exit %d, stderr %q; want an error", args, code, stderr)
		}
	}
}

// TestRunRootless runs the CLI as an unprivileged user: user namespaces,
// the overlay root, landlock and seccomp still apply; doctor says what not.
func TestRunRootless(t *testing.T) {
	linuxtest.Require(t)
	bin, _ := linuxtest.Build(t)
	home, err := os.MkdirTemp("", "airlock-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(home)
	os.Chmod(home, 0o777)
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"HOME=" + home, "XDG_DATA_HOME=" + home + "/data", "PATH=/usr/bin:/bin", "AIRLOCK_RUN_LOCAL=1"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	out, code := run("run", "--", "sh", "-c", "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; echo x 2>/dev/null > /usr/f || echo denied")
	// The first line says the run is embedded.
	if notice, rest, _ := strings.Cut(out, "\n"); strings.HasPrefix(notice, "airlock: running embedded") {
		out = rest
	}
	want := "CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n"
	if code != 0 || !strings.HasPrefix(out, want) || !strings.HasSuffix(out, "denied\n") {
		t.Errorf("rootless run: exit %d, output %q", code, out)
	}
	out, code = run("doctor")
	if code == 0 || !strings.Contains(out, "[NO ] cgroup limits") || !strings.Contains(out, "[yes] seccomp filter") {
		t.Errorf("rootless doctor: exit %d, output %q", code, out)
	}
}

// TestRunCrashLeavesNothing kills `airlock run` mid-command: its sandbox
// dies with it, and the next run on the same state dir removes what is left.
func TestRunCrashLeavesNothing(t *testing.T) {
	linuxtest.Require(t)
	bin, _ := linuxtest.Build(t)
	state := linuxtest.StateDir(t)
	env := append(os.Environ(), "AIRLOCK_DATA_DIR="+state, "AIRLOCK_RUN_LOCAL=1")
	crash := exec.Command(bin, "run", "--", "sleep", "100")
	crash.Env = env
	if err := crash.Start(); err != nil {
		t.Fatal(err)
	}
	ids := filepath.Join(state, "ids")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if e, _ := os.ReadDir(ids); len(e) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sandbox never appeared")
		}
	}
	crash.Process.Kill()
	crash.Wait()
	// The init dies with its creator (SIGKILL on parent death); wait for
	// that, as a later run would only ever come after it.
	b, _ := os.ReadFile(filepath.Join(state, "sandboxes", mustOne(t, ids), "state.json"))
	var st struct{ Pid int }
	json.Unmarshal(b, &st)
	for deadline := time.Now().Add(10 * time.Second); st.Pid > 0; time.Sleep(5 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", st.Pid))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sandbox init outlived the killed airlock run")
		}
	}
	after := exec.Command(bin, "run", "--", "true")
	after.Env = env
	if out, err := after.CombinedOutput(); err != nil {
		t.Fatalf("next run: %v %s", err, out)
	}
	for _, d := range []string{"ids", "sandboxes"} {
		entries, _ := os.ReadDir(filepath.Join(state, d))
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") {
				t.Errorf("left in %s: %s", d, e.Name())
			}
		}
	}
}

func mustOne(t *testing.T, dir string) string {
	t.Helper()
	e, err := os.ReadDir(dir)
	if err != nil || len(e) != 1 {
		t.Fatalf("%s: %v entries, %v", dir, len(e), err)
	}
	return e[0].Name()
}
