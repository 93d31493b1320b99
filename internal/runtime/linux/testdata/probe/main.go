//go:build linux

// Command probe reports, from inside a sandbox, what the sandbox lets a
// process do. Tests build it statically (CGO_ENABLED=0) and run it as the
// sandbox user; every line it prints is one JSON object.
//
//	probe syscalls  call each blocked system call with invalid arguments
//	probe extra     try the escapes the layers exist to stop
//	probe status    credentials, capabilities, no_new_privs, seccomp mode
//
// Invalid arguments make the kernel fail with EBADF, EFAULT or EINVAL, so
// EPERM from a call means the filter answered before the kernel looked
// (unless the kernel checks a capability first; the tests know which).
// The probe must never change the host if run outside a sandbox: every
// argument is chosen to fail.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe syscalls|extra|status")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "syscalls":
		probeSyscalls()
	case "extra":
		probeExtra()
	case "status":
		probeStatus()
	// Helpers the probe runs as its own children.
	case "_noop":
	case "_sleep":
		unix.Nanosleep(&unix.Timespec{Sec: 5}, nil)
	case "_vhangup":
		_, _, errno := unix.RawSyscall(unix.SYS_VHANGUP, 0, 0, 0)
		fmt.Println(int(errno))
	default:
		fmt.Fprintf(os.Stderr, "probe: unknown mode %q\n", os.Args[1])
		os.Exit(2)
	}
}

var out = func() *json.Encoder {
	e := json.NewEncoder(os.Stdout)
	e.SetEscapeHTML(false)
	return e
}()

func emit(v any) {
	if err := out.Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

// errname is the symbolic name of errno, "" for success.
func errname(errno unix.Errno) string {
	if errno == 0 {
		return ""
	}
	if n := unix.ErrnoName(errno); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(errno))
}
