package sbinit

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// VolumeBind is a volume the host keeps, mounted into the sandbox at
// Target. The host sends the mount itself (Config.VolumeSock): an
// idmapped clone of the volume's tree, whose on-disk owners are the ids
// inside a sandbox, mapped through this sandbox's own user namespace, so
// that every sandbox that mounts it, read-only beside others included,
// sees its files as theirs.
type VolumeBind struct {
	Target   string `json:"target"` // absolute, inside the sandbox
	ReadOnly bool   `json:"read_only,omitempty"`
}

// mountVolumes attaches the mounts the host sends on sock, one per
// volume in order, into the new root. The target is made and opened one
// component at a time, never through a symlink: the root's writable layer
// may be a snapshot a sandbox wrote, whose /mnt could be a symlink to
// anywhere, and the root is not pivoted yet, so a followed absolute link
// would point into the host's tree.
func mountVolumes(rootfs string, sock int, vols []VolumeBind) error {
	if len(vols) == 0 {
		return nil
	}
	fds, err := recvFDs(sock, len(vols))
	if err != nil {
		return fmt.Errorf("volumes: receive their mounts: %w", err)
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i, v := range vols {
		target, err := OpenBeneath(rootfs, v.Target, -1)
		if err != nil {
			return fmt.Errorf("volume at %s: %w", v.Target, err)
		}
		err = unix.MoveMount(fds[i], "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
		unix.Close(target)
		if err != nil {
			return fmt.Errorf("mount volume at %s: %w", v.Target, err)
		}
	}
	return nil
}

// recvFDs reads one message carrying n file descriptors from sock.
func recvFDs(sock, n int) ([]int, error) {
	defer unix.Close(sock)
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*n))
	_, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, 0)
	if err != nil {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("want one control message, got %d (%v)", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return nil, err
	}
	if len(fds) != n {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("want %d mounts, got %d", n, len(fds))
	}
	return fds, nil
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
