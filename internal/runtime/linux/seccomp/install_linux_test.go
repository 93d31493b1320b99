package seccomp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/testenv"
)

// childEnv switches the re-executed test binary into a filtered child: the
// filter cannot be removed, so it must never be installed in the test
// process itself.
const childEnv = "AIRLOCK_SECCOMP_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		child(os.Args[1:])
		return
	}
	os.Exit(m.Run())
}

// child installs the filter, then either runs args under it or reports
// what a set of calls returned, as one JSON object.
func child(args []string) {
	// Threads that exist before Install must end up filtered too.
	block := make(chan struct{})
	for i := 0; i < 4; i++ {
		go func() {
			runtime.LockOSThread()
			<-block
		}()
	}
	if err := Install(); err != nil {
		fmt.Fprintln(os.Stderr, "install:", err)
		os.Exit(3)
	}
	if len(args) > 0 {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "run:", err)
			os.Exit(4)
		}
		os.Exit(0)
	}
	got := map[string]string{}
	errno := func(e unix.Errno) string {
		if e == 0 {
			return "ok"
		}
		return unix.ErrnoName(e)
	}
	result := func(err error) string {
		var e unix.Errno
		if err == nil {
			return "ok"
		}
		if errors.As(err, &e) {
			return errno(e)
		}
		return err.Error()
	}
	_, _, e := unix.Syscall(unix.SYS_UNSHARE, unix.CLONE_NEWUSER, 0, 0)
	got["unshare(CLONE_NEWUSER)"] = errno(e)
	got["mount"] = result(unix.Mount("none", "/nonexistent-airlock", "tmpfs", 0, ""))
	if unix.Getpid() == os.Getpid() {
		got["getpid"] = "ok"
	}
	_, _, e = unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
	got["clone3"] = errno(e)
	got["exec true"] = result(exec.Command("true").Run())
	nsCmd := exec.Command("true")
	nsCmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
	got["exec true in a new user namespace"] = result(nsCmd.Run())
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	got["socket(AF_INET, SOCK_RAW)"] = result(err)
	if fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE); err == nil {
		unix.Close(fd)
	}
	got["socket(AF_NETLINK, SOCK_RAW)"] = result(err)
	var c byte
	_, _, e = unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	got["ioctl(TIOCSTI)"] = errno(e)
	_, _, e = unix.Syscall(unix.SYS_PERSONALITY, 0x0008, 0, 0)
	got["personality(PER_LINUX32)"] = errno(e)
	got["every thread filtered"] = threadsFiltered()
	close(block)
	json.NewEncoder(os.Stdout).Encode(got)
	os.Exit(0)
}

// threadsFiltered checks each thread's status: the filter and
// no_new_privs must be on all of them, not only the one that installed.
func threadsFiltered() string {
	dirs, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err.Error()
	}
	if len(dirs) < 5 {
		return fmt.Sprintf("only %d threads, want at least 5", len(dirs))
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", d.Name(), "status"))
		if err != nil {
			return err.Error()
		}
		s := string(b)
		if !strings.Contains(s, "\nNoNewPrivs:\t1\n") || !strings.Contains(s, "\nSeccomp:\t2\n") {
			return "thread " + d.Name() + " is not filtered"
		}
	}
	return "ok"
}

func runChild(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("filtered child: %v\n%s", err, stderr.Bytes())
	}
	return out
}

func requireFilter(t *testing.T) {
	t.Helper()
	if ok, detail := Supported(); !ok {
		testenv.Unsupported(t, "seccomp unavailable: "+detail)
	}
}

func TestInstall(t *testing.T) {
	requireFilter(t)
	var got map[string]string
	if err := json.Unmarshal(runChild(t), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"unshare(CLONE_NEWUSER)":            "EPERM",
		"mount":                             "EPERM",
		"getpid":                            "ok",
		"clone3":                            "ENOSYS",
		"exec true":                         "ok",
		"exec true in a new user namespace": "EPERM",
		"socket(AF_INET, SOCK_RAW)":         "EPERM",
		"socket(AF_NETLINK, SOCK_RAW)":      "ok",
		"ioctl(TIOCSTI)":                    "EPERM",
		"personality(PER_LINUX32)":          "EPERM",
		"every thread filtered":             "ok",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("filtered child (-want +got):\n%s", diff)
	}
}

// buildProbe compiles the sandbox probe as it ships into sandboxes: static,
// without the race detector (which needs cgo).
func buildProbe(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Lacking(t, "no go tool in PATH to build the probe")
	}
	bin := filepath.Join(t.TempDir(), "probe")
	cmd := exec.Command(goTool, "build", "-buildvcs=false", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "testdata", "probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build probe: %v\n%s", err, out)
	}
	return bin
}

type probeLine struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Errname string `json:"errname"`
}

func parseProbe(t *testing.T, out []byte) map[string]string {
	t.Helper()
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var l probeLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("probe line %q: %v", sc.Text(), err)
		}
		if l.Errname == "" {
			l.Errname = "ok"
		}
		got[l.Name] = l.Errname
	}
	return got
}

// TestProbeSyscalls runs the probe under the filter: every blocked call
// answers EPERM although its arguments are invalid. Run unfiltered as root,
// the same calls must not answer EPERM, which proves the EPERM came from
// the filter and not from a capability check.
func TestProbeSyscalls(t *testing.T) {
	requireFilter(t)
	probe := buildProbe(t)
	got := parseProbe(t, runChild(t, probe, "syscalls"))
	want := map[string]string{}
	for _, name := range Blocked() {
		want[name] = "EPERM"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("probe under the filter (-want +got):\n%s", diff)
	}

	if os.Geteuid() != 0 {
		t.Log("not root: skipping the unfiltered control run")
		return
	}
	out, err := exec.Command(probe, "syscalls").Output()
	if err != nil {
		t.Fatalf("unfiltered probe: %v", err)
	}
	for name, errname := range parseProbe(t, out) {
		if errname == "EPERM" {
			t.Errorf("unfiltered as root, %s already answers EPERM: its probe arguments cannot tell the filter's EPERM apart", name)
		}
	}
}

func TestProbeExtra(t *testing.T) {
	requireFilter(t)
	probe := buildProbe(t)
	got := parseProbe(t, runChild(t, probe, "extra"))
	// Whether the child has a terminal depends on how tests are run.
	delete(got, "tiocsti_tty")
	want := map[string]string{
		"unshare_user":        "EPERM",
		"clone_newuser":       "EPERM",
		"mount_tmpfs":         "EPERM",
		"ptrace_sibling":      "EPERM",
		"raw_socket":          "EPERM",
		"packet_socket":       "EPERM",
		"netlink_socket":      "ok",
		"tiocsti":             "EPERM",
		"tiocsti_high_bits":   "EPERM",
		"clone3":              "ENOSYS",
		"personality_linux32": "EPERM",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("probe extra under the filter (-want +got):\n%s", diff)
	}

	var status map[string]string
	if err := json.Unmarshal(runChild(t, probe, "status"), &status); err != nil {
		t.Fatal(err)
	}
	if status["Seccomp"] != "2" || status["NoNewPrivs"] != "1" {
		t.Errorf("probe status under the filter: Seccomp %q, NoNewPrivs %q; want 2 and 1", status["Seccomp"], status["NoNewPrivs"])
	}
}

// TestUserland runs ordinary tools under the filter: a filter that breaks
// glibc, a shell or Python is as useless as one that blocks nothing.
func TestUserland(t *testing.T) {
	requireFilter(t)
	script := `set -e; ls / >/dev/null; echo $((6*7)) | tr 0-9 0-9; grep ^Seccomp: /proc/self/status | cut -f2; sort </dev/null; date >/dev/null; sleep 0.01`
	want := "42\n2\n"
	if _, err := exec.LookPath("python3"); err == nil {
		script += `; python3 -c 'import subprocess, threading, socket; socket.if_nameindex(); print(subprocess.run(["echo", "py"], capture_output=True).stdout.decode().strip())'`
		want += "py\n"
	}
	if _, err := exec.LookPath("git"); err == nil {
		script += `; cd "$(mktemp -d)"; git init -q; git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x; git rev-list --count HEAD`
		want += "1\n"
	}
	if got := string(runChild(t, "sh", "-c", script)); got != want {
		t.Errorf("tools under the filter printed %q, want %q", got, want)
	}
}

func TestSupported(t *testing.T) {
	ok, detail := Supported()
	if _, err := os.Stat("/proc/self/status"); err == nil && archName != "" && !ok {
		t.Errorf("Supported() = false (%s) on a Linux %s host", detail, archName)
	}
	t.Logf("Supported() = %v, %q", ok, detail)
}
