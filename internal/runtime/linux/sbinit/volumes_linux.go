package sbinit

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// VolumeBind is a volume the host keeps, mounted into the sandbox at
// Target. The host has given its files the sandbox's uid range.
type VolumeBind struct {
	Source   string `json:"source"` // host path
	Target   string `json:"target"` // absolute, inside the sandbox
	ReadOnly bool   `json:"read_only,omitempty"`
}

// mountVolumes binds each volume into the new root. The target is made
// and opened one component at a time, never through a symlink: the root's
// writable layer may be a snapshot a sandbox wrote, whose /mnt could be a
// symlink to anywhere, and the root is not pivoted yet, so a followed
// absolute link would point into the host's tree.
func mountVolumes(rootfs string, vols []VolumeBind) error {
	for _, v := range vols {
		fd, err := OpenBeneath(rootfs, v.Target, -1)
		if err != nil {
			return fmt.Errorf("volume at %s: %w", v.Target, err)
		}
		target := fmt.Sprintf("/proc/self/fd/%d", fd)
		err = unix.Mount(v.Source, target, "", unix.MS_BIND, "")
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("bind volume at %s: %w", v.Target, err)
		}
		// Resolved by its path now that the mount is there: the open fd
		// pointed at the directory under it.
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if v.ReadOnly {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		if err := unix.MountSetattr(-1, rootfs+v.Target, unix.AT_SYMLINK_NOFOLLOW, attr); err != nil {
			return fmt.Errorf("volume at %s: set flags: %w", v.Target, err)
		}
	}
	return nil
}

// OpenBeneath opens (as O_PATH) the directory path beneath root, making
// the missing components (owned by uid, unless it is -1), and refuses any
// symlink on the way. The host uses it to make a volume's mount point in
// a sandbox's writable layer, whose parents the sandbox's root could not
// create in a template's directories it does not own.
func OpenBeneath(root, path string, uid int) (int, error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
		if name == "" || name == "." || name == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("bad path component %q", name)
		}
		made := false
		if err := unix.Mkdirat(fd, name, 0o755); err == nil {
			made = true
		} else if err != unix.EEXIST {
			unix.Close(fd)
			return -1, err
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			if err == unix.ENOTDIR || err == unix.ELOOP {
				return -1, fmt.Errorf("%s is not a directory (a symlink or a file)", name)
			}
			return -1, err
		}
		if made && uid >= 0 {
			if err := unix.Fchownat(next, "", uid, uid, unix.AT_EMPTY_PATH); err != nil {
				unix.Close(next)
				return -1, err
			}
		}
		fd = next
	}
	return fd, nil
}
