//go:build unix

package sandbox

import "golang.org/x/sys/unix"

// diskSpace returns the bytes an unprivileged writer may still use on the
// filesystem of dir (root's reserve left out) and the filesystem's size.
func diskSpace(dir string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}
