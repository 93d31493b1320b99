package seccomp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install sets no_new_privs and loads the filter on every thread of the
// process. It cannot be undone; processes started afterwards inherit both.
func Install() error {
	if archName == "" {
		return fmt.Errorf("%w on %s", ErrUnsupported, runtime.GOARCH)
	}
	prog, err := program(auditArch, x32Bit, table)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}

	// The fallback in setNoNewPrivs marks only this thread, and the filter
	// must be installed from a thread that has the bit.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := setNoNewPrivs(); err != nil {
		return err
	}
	// TSYNC puts every thread under the filter (and copies no_new_privs
	// to them) or fails as a whole, returning the thread that could not
	// follow.
	tid, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("install seccomp filter: %w", errno)
	}
	if tid != 0 {
		return fmt.Errorf("install seccomp filter: thread %d could not be synchronized", tid)
	}
	return nil
}

// setNoNewPrivs sets no_new_privs on every thread, which seccomp requires of
// an unprivileged caller and which keeps setuid binaries from gaining
// privilege inside the sandbox.
func setNoNewPrivs() error {
	_, _, errno := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0)
	if errno == 0 {
		return nil
	}
	if errno != syscall.ENOTSUP {
		return fmt.Errorf("set no_new_privs on all threads: %w", errno)
	}
	// A binary linked with cgo (tests under -race) cannot use
	// AllThreadsSyscall. Set the bit on this locked thread: TSYNC copies
	// it to every thread it synchronizes.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}

// Supported reports whether Install can work here, for airlock doctor: the
// architecture has a table and the kernel offers filter mode with the
// actions the filter returns.
func Supported() (bool, string) {
	if archName == "" {
		return false, "no seccomp table for " + runtime.GOARCH
	}
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	if err != nil {
		return false, fmt.Sprintf("kernel without seccomp (prctl PR_GET_SECCOMP: %v)", err)
	}
	if _, err := statusField("Seccomp"); err != nil {
		return false, err.Error()
	}
	for _, action := range []uint32{retErrno, retKillProcess} {
		a := action
		if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&a))); errno != 0 {
			return false, fmt.Sprintf("seccomp action %#x unavailable: %v", action, errno)
		}
	}
	return true, fmt.Sprintf("filter for %s, %d calls blocked, unknown calls ENOSYS (this process: mode %d)", archName, len(Blocked()), mode)
}

// statusField returns one field of /proc/self/status.
func statusField(name string) (string, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", fmt.Errorf("read /proc/self/status: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := bytes.Cut(sc.Bytes(), []byte(":")); ok && string(k) == name {
			return string(bytes.TrimSpace(v)), nil
		}
	}
	return "", errors.New("no " + name + " field in /proc/self/status: kernel built without seccomp")
}
