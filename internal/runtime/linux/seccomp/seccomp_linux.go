package seccomp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install sets no_new_privs and loads the filter on every thread of the
// process. It cannot be undone; processes started afterwards inherit both.
//
// The program is the one assembled from the table at build time
// (compiled_linux_amd64.go, go generate; TestCompiled keeps the two the
// same): assembling it costs a fresh process ~0.5 ms, which every sandbox
// init would pay at its start.
func Install() error {
	if archName == "" || len(compiled) == 0 {
		return fmt.Errorf("%w on %s", ErrUnsupported, runtime.GOARCH)
	}
	fprog := unix.SockFprog{Len: uint16(len(compiled)), Filter: &compiled[0]}

	// no_new_privs on this thread only: TSYNC copies it to every thread it
	// puts under the filter (the kernel does so that no thread escapes it),
	// and so needs no call on every thread (syscall.AllThreadsSyscall
	// stops the world and signals each thread: ~0.3 ms in an init).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	// TSYNC puts every thread under the filter (and copies no_new_privs
	// to them) or fails as a whole, returning the thread that could not
	// follow.
	tid, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("install seccomp filter: %w", errno)
	}
	if tid != 0 {
		return fmt.Errorf("install seccomp filter: thread %d could not be synchronized", tid)
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
