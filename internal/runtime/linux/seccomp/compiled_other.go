//go:build linux && !amd64

package seccomp

import "golang.org/x/sys/unix"

// compiled is empty where no table is built: Install refuses first.
var compiled []unix.SockFilter
