package landlock

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	createRulesetVersion = 1 << 0 // LANDLOCK_CREATE_RULESET_VERSION
	rulePathBeneath      = 1      // LANDLOCK_RULE_PATH_BENEATH
	restrictSelfTSYNC    = 1 << 3 // LANDLOCK_RESTRICT_SELF_TSYNC
	abiTSYNC             = 8      // first ABI with restrictSelfTSYNC
)

// rulesetAttr is the prefix of struct landlock_ruleset_attr this package
// uses; the kernel accepts any size from the first field on and treats the
// fields left out as zero (no network rights, no scoping).
type rulesetAttr struct {
	handledAccessFS uint64
}

// pathBeneathAttr is struct landlock_path_beneath_attr, which the kernel
// declares packed: it reads 12 bytes, so Go's trailing padding is ignored.
type pathBeneathAttr struct {
	allowedAccess uint64
	parentFd      int32
}

// ABI returns the kernel's Landlock ABI version, 0 when Landlock is not
// available.
func ABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// Restrict confines every thread of the process, and every process they
// start, to reading and executing beneath readOnly and to any file system
// access beneath readWrite. Paths that do not exist are skipped. It returns
// the ABI it enforced, or 0 and ErrUnsupported (unwrapped) when the kernel
// has no Landlock. It cannot be undone.
func Restrict(readOnly, readWrite []string) (int, error) {
	abi := ABI()
	if abi == 0 {
		return 0, ErrUnsupported
	}
	handled := handledAccess(abi)
	attr := rulesetAttr{handledAccessFS: handled}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return abi, fmt.Errorf("landlock create ruleset (ABI %d): %w", abi, errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	for _, p := range readOnly {
		if err := addPath(ruleset, p, handled, false); err != nil {
			return abi, err
		}
	}
	for _, p := range readWrite {
		if err := addPath(ruleset, p, handled, true); err != nil {
			return abi, err
		}
	}
	if err := restrictSelf(ruleset, abi); err != nil {
		return abi, err
	}
	return abi, nil
}

func addPath(ruleset int, path string, handled uint64, writable bool) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("landlock rule %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock rule %s: %w", path, err)
	}
	attr := pathBeneathAttr{
		allowedAccess: ruleAccess(handled, writable, st.Mode&unix.S_IFMT == unix.S_IFDIR),
		parentFd:      int32(fd),
	}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), rulePathBeneath,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	runtime.KeepAlive(&attr)
	if errno != 0 {
		return fmt.Errorf("landlock rule %s: %w", path, errno)
	}
	return nil
}

// restrictSelf enforces the ruleset on every thread. Landlock requires
// no_new_privs of a caller without CAP_SYS_ADMIN in its user namespace:
// such a caller gets it on every thread first. One with it (a sandbox
// init, which sets no_new_privs with its seccomp filter a moment later) is
// spared that call on every thread, which stops the world and signals each
// (~0.3 ms); a thread that lacked the capability would fail the restrict,
// not pass it.
func restrictSelf(ruleset, abi int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	allThreads := true // false: linked with cgo, no calls on every thread
	var errno syscall.Errno
	if !capSysAdmin() {
		_, _, errno = syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0)
	}
	switch errno {
	case 0:
	case syscall.ENOTSUP:
		// Linked with cgo: only TSYNC below can still reach every thread.
		allThreads = false
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("set no_new_privs: %w", err)
		}
	default:
		return fmt.Errorf("set no_new_privs on all threads: %w", errno)
	}
	if abi >= abiTSYNC {
		// One domain for the whole process: processes started from
		// different threads are then not strangers to each other.
		_, _, errno = unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), restrictSelfTSYNC, 0)
		if errno == 0 {
			return nil
		}
		if errno != unix.EINVAL || !allThreads {
			return fmt.Errorf("landlock restrict all threads (TSYNC): %w", errno)
		}
	}
	// Each thread gets its own domain with the same rules (linked with
	// cgo, the call answers ENOTSUP at once).
	_, _, errno = syscall.AllThreadsSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0)
	if errno == syscall.ENOTSUP {
		return fmt.Errorf("landlock restrict all threads: %w (cgo binary on a kernel without TSYNC)", errno)
	}
	if errno != 0 {
		return fmt.Errorf("landlock restrict all threads: %w", errno)
	}
	return nil
}

// capSysAdmin says whether the calling thread holds CAP_SYS_ADMIN (in its
// user namespace, which is what Landlock asks).
func capSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_SYS_ADMIN/32].Effective&(1<<(unix.CAP_SYS_ADMIN%32)) != 0
}
