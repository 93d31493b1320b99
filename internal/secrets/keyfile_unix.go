//go:build unix

package secrets

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a key file another user owns: that user could read
// it, or swap in a key of their choosing and read every secret sealed after.
func checkOwner(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("cannot tell who owns it")
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Errorf("owned by uid %d, not by this process's uid %d", st.Uid, euid)
	}
	return nil
}
