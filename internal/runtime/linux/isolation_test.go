package linux_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
	"github.com/airlockhq/airlock/internal/runtime/linux/seccomp"
)

type probeLine struct {
	Name    string `json:"name"`
	Errno   int    `json:"errno"`
	Errname string `json:"errname"`
	OK      bool   `json:"ok"`
}

func runProbe(t *testing.T, sb runtime.Sandbox, mode string) map[string]probeLine {
	t.Helper()
	_, probe := linuxtest.Build(t)
	copyIn(t, sb, probe, "/home/user/probe")
	r := sh(t, sb, "/home/user/probe "+mode)
	if r.st.Code != 0 {
		t.Fatalf("probe %s exited %d: %s", mode, r.st.Code, r.stderr)
	}
	lines := map[string]probeLine{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		var l probeLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("probe output %q: %v", sc.Text(), err)
		}
		lines[l.Name] = l
	}
	return lines
}

// TestSyscallProbe calls every blocked syscall with invalid arguments: the
// kernel would answer EBADF/EFAULT/EINVAL, so EPERM can only come from the
// filter.
func TestSyscallProbe(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	got := runProbe(t, sb, "syscalls")
	for _, name := range seccomp.Blocked() {
		l, ok := got[name]
		if !ok {
			t.Errorf("%s: probe did not call it", name)
			continue
		}
		if l.Errname != "EPERM" {
			t.Errorf("%s: got %s (errno %d), want EPERM from the seccomp filter", name, l.Errname, l.Errno)
		}
	}
}

// TestEscapeAttempts tries the classic ways out of a container.
func TestEscapeAttempts(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	got := runProbe(t, sb, "extra")
	for _, name := range []string{"unshare_user", "mount_tmpfs", "ptrace_sibling", "raw_socket", "packet_socket", "tiocsti"} {
		l, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: not attempted", name)
		case l.OK:
			t.Errorf("%s: succeeded inside the sandbox", name)
		}
	}
	if l := got["clone3"]; l.Errname != "ENOSYS" {
		t.Errorf("clone3: got %s, want ENOSYS so libc falls back to clone", l.Errname)
	}
	// The shell tools fail too, not only raw syscalls.
	r := sh(t, sb, "unshare -U true || exit 3")
	if r.st.Code != 3 {
		t.Errorf("unshare -U: exit %d, want failure", r.st.Code)
	}
	r = sh(t, sb, "mkdir -p /tmp/m && mount -t tmpfs none /tmp/m || exit 3")
	if r.st.Code != 3 {
		t.Errorf("mount -t tmpfs: exit %d, want failure", r.st.Code)
	}
}

func TestFilesystemIsolation(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	for _, script := range []string{
		"cat /etc/shadow",
		"ls /root/.ssh",
		"cat /proc/1/environ",
		"ls " + stateDir,
		"ls /work",
		"echo x > /usr/airlock-test",
		"echo x > /etc/passwd",
		"echo x > /etc/airlock-test",
		"echo x > /airlock-test",
		"ls -l /proc/1/exe",
		"echo 1 > /proc/sys/kernel/domainname",
	} {
		if r := sh(t, sb, script); r.st.Code == 0 {
			t.Errorf("%q succeeded inside the sandbox: %q", script, r.stdout)
		}
	}
	for _, p := range []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/sysrq-trigger"} {
		if r := sh(t, sb, "head -c 64 "+p); r.stdout != "" {
			t.Errorf("masked %s reads %q", p, r.stdout)
		}
	}
	// The mount table names no host path.
	if out := mustSh(t, sb, "cat /proc/self/mountinfo"); strings.Contains(out, stateDir) {
		t.Errorf("mountinfo reveals the host's state dir %s:\n%s", stateDir, out)
	}
	if out := mustSh(t, sb, "ls -A /sys/firmware | wc -l"); strings.TrimSpace(out) != "0" {
		t.Errorf("/sys/firmware not masked: %s entries", out)
	}
	if out := mustSh(t, sb, "echo hi > /home/user/f && cat /home/user/f && echo t > /tmp/t && pwd"); out != "hi\n/home/user\n" {
		t.Errorf("workspace: got %q", out)
	}

	// Try to write a marker into every directory the sandbox can see, then
	// check the host: only the sandbox's own layer may have gained any.
	marker := fmt.Sprintf("airlock-escape-%d", os.Getpid())
	out := mustSh(t, sb, `python3 - <<'EOF'
import os
wrote = []
for root, dirs, files in os.walk('/', topdown=True):
    if root in ('/proc', '/sys') or root.startswith(('/proc/', '/sys/')):
        dirs[:] = []
        continue
    try:
        with open(os.path.join(root, '`+marker+`'), 'w') as f:
            f.write('x')
        wrote.append(root)
    except OSError:
        pass
print('\n'.join(sorted(wrote)))
EOF`)
	allowed := map[string]bool{"/home/user": true, "/tmp": true, "/var/tmp": true, "/dev/shm": true}
	for _, d := range strings.Fields(out) {
		if !allowed[d] {
			t.Errorf("sandbox could write in %s", d)
		}
	}
	for _, root := range []string{"/usr", "/etc", filepath.Join(stateDir, "templates")} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == marker {
				t.Errorf("host file %s was created by the sandbox", p)
			}
			return nil
		})
	}
}

func TestNetworkLoopbackOnly(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	sb := newSandbox(t, runtime.Limits{})
	if out := mustSh(t, sb, `python3 -c 'import socket; print(" ".join(n for _, n in socket.if_nameindex()))'`); strings.TrimSpace(out) != "lo" {
		t.Errorf("interfaces: %q, want only lo", out)
	}
	r := sh(t, sb, fmt.Sprintf(`python3 -c 'import socket; socket.create_connection(("127.0.0.1", %d), timeout=3)'`, port))
	if r.st.Code == 0 {
		t.Errorf("connected to the host's 127.0.0.1:%d from inside the sandbox", port)
	}
	// Loopback inside the sandbox works: it is the sandbox's own.
	mustSh(t, sb, `python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname(), timeout=3)'`)
}

func TestNoLeakedFds(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	// python lists its own fds, leaving out the directory it reads them from.
	out := mustSh(t, sb, `python3 -c '
import os
fds = []
for f in os.listdir("/proc/self/fd"):
    try:
        if os.readlink("/proc/self/fd/" + f).endswith("/fd"):
            continue
    except OSError:
        continue
    fds.append(f)
print(" ".join(sorted(fds)))'`)
	if strings.TrimSpace(out) != "0 1 2" {
		t.Errorf("open fds in a plain exec: %q, want 0 1 2", out)
	}
}

// TestHostToolsWork: the base template is the host's own system, so the
// usual tools run with no image download.
func TestHostToolsWork(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	out := mustSh(t, sb, `set -e
bash -c 'echo bash ok'
python3 -c 'import ssl, json, sqlite3; print("python ok")'
git --version >/dev/null && git init -q /tmp/r && git -C /tmp/r -c user.email=a@b -c user.name=a commit -q --allow-empty -m x && echo git ok
curl --version >/dev/null && echo curl ok
ls /usr/bin/env >/dev/null && sort </dev/null && echo coreutils ok
whoami`)
	want := "bash ok\npython ok\ngit ok\ncurl ok\ncoreutils ok\nuser\n"
	if out != want {
		t.Errorf("tools:\n%s\nwant:\n%s", out, want)
	}
}
