//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

type attempt struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Errno   int    `json:"errno"`
	Errname string `json:"errname"`
	Call    string `json:"call"`
	Detail  string `json:"detail,omitempty"`
}

// report prints one attempt: name is a stable identifier for tests,
// call says what was tried.
func report(name, call string, err error) {
	a := attempt{Name: name, Call: call, OK: err == nil}
	var errno unix.Errno
	switch {
	case err == nil:
	case errors.As(err, &errno):
		a.Errno, a.Errname = int(errno), errname(errno)
	default:
		a.Detail = err.Error()
	}
	emit(a)
}

func errnoErr(errno unix.Errno) error {
	if errno == 0 {
		return nil
	}
	return errno
}

func probeExtra() {
	// Namespaces through both doors: unshare after fork and clone flags.
	// In-process unshare(CLONE_NEWUSER) would fail with EINVAL anyway
	// because a Go process is multithreaded, so each runs in a fresh child.
	report("unshare_user", "unshare(CLONE_NEWUSER) in a child", runSelf(&syscall.SysProcAttr{Unshareflags: unix.CLONE_NEWUSER}))
	report("clone_newuser", "clone(CLONE_NEWUSER)", runSelf(&syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}))
	report("mount_tmpfs", "mount(tmpfs, /tmp/x)", mountTmpfs())
	report("ptrace_sibling", "ptrace(PTRACE_ATTACH) of its own child", ptraceSibling())
	report("raw_socket", "socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)", trySocket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP))
	report("packet_socket", "socket(AF_PACKET, SOCK_RAW, 0)", trySocket(unix.AF_PACKET, unix.SOCK_RAW, 0))
	// A control: netlink is SOCK_RAW too and must keep working (ip,
	// getifaddrs).
	report("netlink_socket", "socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)", trySocket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE))
	report("tiocsti", "ioctl(0, TIOCSTI)", tiocsti(0, unix.TIOCSTI))
	// The kernel reads the request as 32 bits; a filter comparing 64 would
	// miss this one (CVE-2019-7303 class).
	report("tiocsti_high_bits", "ioctl(0, TIOCSTI|1<<32)", tiocsti(0, unix.TIOCSTI|1<<32))
	if tty, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err != nil {
		report("tiocsti_tty", "open /dev/tty", err)
	} else {
		report("tiocsti_tty", "ioctl(/dev/tty, TIOCSTI)", tiocsti(uintptr(tty), unix.TIOCSTI))
		unix.Close(tty)
	}
	// A NULL argument block: clone3 fails with EINVAL if it gets that far,
	// so it never forks; the filter should say ENOSYS first.
	_, _, errno := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
	report("clone3", "clone3(NULL, 0)", errnoErr(errno))
	report("personality_linux32", "personality(PER_LINUX32)", personality32())
}

// runSelf starts the probe itself with attr and waits for it.
func runSelf(attr *syscall.SysProcAttr) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "_noop")
	cmd.SysProcAttr = attr
	return cmd.Run()
}

// mountTmpfs tries the mount even when the mount point cannot be made: a
// filtered mount answers EPERM before the kernel looks up the target.
func mountTmpfs() error {
	if err := os.Mkdir("/tmp/x", 0o755); err == nil {
		defer os.Remove("/tmp/x")
	}
	if err := unix.Mount("tmpfs", "/tmp/x", "tmpfs", 0, "size=1m"); err != nil {
		return err
	}
	return unix.Unmount("/tmp/x", unix.MNT_DETACH)
}

// ptraceSibling attaches to a child of its own, the easiest target there is.
func ptraceSibling() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "_sleep")
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	// ptrace requests belong to the thread that attached.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return unix.PtraceAttach(cmd.Process.Pid)
}

func trySocket(domain, typ, proto int) error {
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// tiocsti pushes a NUL byte into a terminal's input, as an attacker would
// push a command into the shell that owns it.
func tiocsti(fd uintptr, req uint64) error {
	var c byte
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, uintptr(req), uintptr(unsafe.Pointer(&c)))
	return errnoErr(errno)
}

func personality32() error {
	const perLinux32 = 0x0008
	_, _, errno := unix.Syscall(unix.SYS_PERSONALITY, perLinux32, 0, 0)
	if errno == 0 {
		unix.Syscall(unix.SYS_PERSONALITY, 0, 0, 0)
	}
	return errnoErr(errno)
}
