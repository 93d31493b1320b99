package agent

import (
	"fmt"
	goruntime "runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// asUser runs fn with the sandbox user's filesystem credentials, so the
// kernel checks every open, create and rename against that user's
// permissions and new files belong to it. fsuid and fsgid are per thread:
// fn runs on a fresh goroutine locked to its thread, and it must not start
// goroutines that touch the filesystem.
func (s *server) asUser(fn func() error) error {
	if s.cfg.UID < 0 {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		// Left locked, the thread is destroyed when this goroutine ends,
		// so a thread whose credentials could not be restored never runs
		// other Go code.
		restore, err := becomeUser(s.cfg.UID, s.cfg.GID)
		if err != nil {
			errc <- err
			if restore == nil || restore() == nil {
				goruntime.UnlockOSThread()
			}
			return
		}
		err = fn()
		if restore() == nil {
			goruntime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// setfsid calls setfsuid or setfsgid on this thread only (the unix package
// wrappers are fine too, but the raw call makes the per-thread intent
// explicit) and reports whether the id took.
func setfsid(trap uintptr, id int) (prev int, ok bool) {
	r, _, _ := unix.RawSyscall(trap, uintptr(id), 0, 0)
	// An invalid id (-1) changes nothing and returns the current value.
	cur, _, _ := unix.RawSyscall(trap, ^uintptr(0), 0, 0)
	return int(r), int(cur) == id
}

// becomeUser switches this thread's fs ids (and drops supplementary groups,
// which would otherwise widen what the user may open). The returned restore
// puts everything back; it is nil when nothing was changed.
func becomeUser(uid, gid int) (func() error, error) {
	groups, err := unix.Getgroups()
	if err != nil {
		return nil, fmt.Errorf("getgroups: %w", err)
	}
	if len(groups) > 0 {
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			return nil, fmt.Errorf("drop supplementary groups: %w", e)
		}
	}
	oldGID, okG := setfsid(unix.SYS_SETFSGID, gid)
	oldUID, okU := setfsid(unix.SYS_SETFSUID, uid)
	restore := func() error {
		if _, ok := setfsid(unix.SYS_SETFSUID, oldUID); !ok {
			return fmt.Errorf("restore fsuid %d", oldUID)
		}
		if _, ok := setfsid(unix.SYS_SETFSGID, oldGID); !ok {
			return fmt.Errorf("restore fsgid %d", oldGID)
		}
		if len(groups) > 0 {
			g := make([]uint32, len(groups))
			for i, v := range groups {
				g[i] = uint32(v)
			}
			_, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(g)), uintptr(unsafe.Pointer(&g[0])), 0)
			if e != 0 {
				return fmt.Errorf("restore supplementary groups: %w", e)
			}
		}
		return nil
	}
	if !okG || !okU {
		return restore, fmt.Errorf("switch to fsuid %d fsgid %d: %w", uid, gid, unix.EPERM)
	}
	return restore, nil
}
