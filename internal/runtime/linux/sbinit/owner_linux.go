package sbinit

import (
	"fmt"
	goruntime "runtime"

	"golang.org/x/sys/unix"
)

// A user namespace is owned by the effective uid of the thread that
// creates it, and the kernel charges what is counted per user inside a
// namespace (inotify instances and watches, namespaces, fanotify groups)
// to the owner in the parent namespace as well, against the host's
// limits. Cloned by root, every sandbox's namespace was root's, so one
// sandbox that opened fs.inotify.max_user_instances instances left none
// for any other sandbox, nor for root on the host. Each sandbox's
// namespace is therefore created by a thread whose effective uid is the
// host uid its root maps to (the base of its uid range): its counts are
// its own.

// AsOwner runs start on a thread of its own whose effective uid is owner,
// capabilities kept so it can still write the child's id maps. The thread
// goes back to the Go scheduler only once it is root again: a goroutine
// that ends locked to its thread takes the thread with it.
func AsOwner(owner int, start func() error) error {
	if owner <= 0 {
		return start()
	}
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		err := ownedStart(owner, start)
		if err == nil || !isRestoreErr(err) {
			goruntime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

type restoreErr struct{ error }

func isRestoreErr(err error) bool { _, ok := err.(restoreErr); return ok }

// ownedStart switches the calling (locked) thread's effective uid to
// owner, raises its effective capabilities again (the uid change cleared
// them; the permitted set is kept while the real and saved uids are 0),
// calls start, and switches back. Raw syscalls: the syscall package's
// setresuid changes every thread of the process.
func ownedStart(owner int, start func() error) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("namespace owner: capget: %w", err)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(owner), ^uintptr(0)); e != 0 {
		return fmt.Errorf("namespace owner: set euid %d: %w", owner, e)
	}
	err := unix.Capset(&hdr, &caps[0])
	if err != nil {
		err = fmt.Errorf("namespace owner: capset: %w", err)
	} else {
		err = start()
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0)); e != 0 {
		return restoreErr{fmt.Errorf("namespace owner: back to euid 0: %w", e)}
	}
	// Back at euid 0 the kernel gave the effective set back; make sure.
	if cerr := unix.Capset(&hdr, &caps[0]); cerr != nil {
		return restoreErr{fmt.Errorf("namespace owner: restore capabilities: %w", cerr)}
	}
	return err
}
