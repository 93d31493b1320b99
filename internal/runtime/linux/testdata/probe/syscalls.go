//go:build linux

package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// call is one blocked system call with arguments the kernel would reject.
type call struct {
	name string
	nr   uintptr
	args [6]uintptr
}

// Argument values that cannot succeed.
const (
	badPtr  = 8 // below mmap_min_addr: never mapped, so EFAULT
	badFd   = ^uintptr(0)
	badFlag = 0xffffffff
)

type syscallResult struct {
	Name    string `json:"name"`
	Errno   int    `json:"errno"`
	Errname string `json:"errname"`
}

func probeSyscalls() {
	if len(calls) == 0 {
		emit(map[string]string{"error": "no system call table for this architecture"})
		os.Exit(1)
	}
	for _, c := range calls {
		r1, _, errno := unix.Syscall6(c.nr, c.args[0], c.args[1], c.args[2], c.args[3], c.args[4], c.args[5])
		// modify_ldt returns its error as an unsigned int, which the
		// 64-bit error convention does not recognize.
		if r := int32(r1); errno == 0 && r < 0 && r >= -4095 {
			errno = unix.Errno(-r)
		}
		emit(syscallResult{c.name, int(errno), errname(errno)})
	}
	errno := vhangup()
	emit(syscallResult{"vhangup", int(errno), errname(errno)})
}

// vhangup runs in a child in a new session: that child has no controlling
// terminal, so even where the call is allowed it hangs up nothing.
func vhangup() unix.Errno {
	self, err := os.Executable()
	if err != nil {
		return unix.ENOEXEC
	}
	cmd := exec.Command(self, "_vhangup")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	b, err := cmd.Output()
	if err != nil {
		return unix.ECHILD
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return unix.ECHILD
	}
	return unix.Errno(n)
}
