package quota

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// From linux/fs.h; x/sys/unix has neither the struct nor the requests.
const (
	fsIOCGetXattr    = 0x801c581f // _IOR('X', 31, struct fsxattr)
	fsIOCSetXattr    = 0x401c5820 // _IOW('X', 32, struct fsxattr)
	fsXflagProjInher = 0x200      // FS_XFLAG_PROJINHERIT
)

type fsxattr struct {
	Xflags     uint32
	Extsize    uint32
	Nextents   uint32
	Projid     uint32
	Cowextsize uint32
	_          [8]byte
}

// From linux/quota.h.
const (
	qGetQuota  = 0x800007
	qSetQuota  = 0x800008
	prjQuota   = 2
	qifLimits  = 1 | 4 // QIF_BLIMITS | QIF_ILIMITS
	blockBytes = 1024  // QIF_DQBLKSIZE: the unit of block limits
)

// inodeLimit bounds the files one project may create, so a sandbox cannot
// exhaust the shared filesystem's inodes with empty files.
const inodeLimit = 1 << 20

// dqblk is struct if_dqblk.
type dqblk struct {
	BHardLimit uint64
	BSoftLimit uint64
	CurSpace   uint64
	IHardLimit uint64
	ISoftLimit uint64
	CurInodes  uint64
	BTime      uint64
	ITime      uint64
	Valid      uint32
	_          uint32
}

// Limit caps what can be written below the directory at path, on this
// filesystem, at bytes; id names the limit and must be unique per directory.
//
// In project mode path becomes the root of project id: files created in it
// later inherit the project (FS_XFLAG_PROJINHERIT), also through an overlay
// whose upper and work dirs live in it; files already there keep theirs, so
// callers limit a fresh directory. In btrfs mode path, which must be an
// empty directory directly in Dir, is replaced by a subvolume with the same
// owner and mode; a second Limit of it changes its limit. In image mode a
// new filesystem of that size is mounted on path, hiding what it held.
func (f *FS) Limit(path string, id uint32, bytes int64) error {
	if id == 0 {
		return fmt.Errorf("limit %s: project 0 is every other file's project", path)
	}
	if bytes <= 0 {
		return fmt.Errorf("limit %s: size %d must be positive", path, bytes)
	}
	if f.btrfs != nil {
		return f.limitSubvolume(path, id, bytes)
	}
	if f.images {
		return f.limitImage(path, id, bytes)
	}
	if err := f.setProject(path, id); err != nil {
		return err
	}
	blocks := uint64((bytes + blockBytes - 1) / blockBytes)
	q := dqblk{BHardLimit: blocks, BSoftLimit: blocks, IHardLimit: inodeLimit, ISoftLimit: inodeLimit, Valid: qifLimits}
	if err := f.quotactl(qSetQuota, id, &q); err != nil {
		return fmt.Errorf("limit %s: %w", path, err)
	}
	return nil
}

func (f *FS) setProject(path string, id uint32) error {
	d, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("set project of %s: %w", path, err)
	}
	defer d.Close()
	var st, root unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		return fmt.Errorf("set project of %s: %w", path, err)
	}
	if err := unix.Stat(f.dir, &root); err != nil {
		return fmt.Errorf("set project of %s: %w", path, err)
	}
	if st.Dev != root.Dev || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("set project of %s: not a directory on %s", path, f.dir)
	}
	if err := setProjectID(d, id, true); err != nil {
		return fmt.Errorf("set project of %s: %w", path, err)
	}
	return nil
}

// setProjectID puts the open file f in project id; with inherit (for a
// directory) the files later created in it inherit the project, without,
// they no longer do.
func setProjectID(f *os.File, id uint32, inherit bool) error {
	var x fsxattr
	if err := ioctl(f, fsIOCGetXattr, &x); err != nil {
		return fmt.Errorf("get attributes: %w", err)
	}
	x.Projid = id
	x.Xflags &^= fsXflagProjInher
	if inherit {
		x.Xflags |= fsXflagProjInher
	}
	return ioctl(f, fsIOCSetXattr, &x)
}

func ioctl(f *os.File, req uintptr, x *fsxattr) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), req, uintptr(unsafe.Pointer(x)))
	if errno != 0 {
		return errno
	}
	return nil
}

// Usage reports the bytes project id holds (in image mode, the blocks used
// in its filesystem; in btrfs mode, the bytes charged to its qgroup).
func (f *FS) Usage(id uint32) (int64, error) {
	if f.btrfs != nil {
		n, err := f.usageSubvolume(id)
		if err != nil {
			return 0, fmt.Errorf("usage of project %d: %w", id, err)
		}
		return n, nil
	}
	if f.images {
		n, err := f.usageImage(id)
		if err != nil {
			return 0, fmt.Errorf("usage of project %d: %w", id, err)
		}
		return n, nil
	}
	var q dqblk
	if err := f.quotactl(qGetQuota, id, &q); err != nil {
		return 0, fmt.Errorf("usage of project %d: %w", id, err)
	}
	return int64(q.CurSpace), nil
}

// Clear releases project id, for a sandbox that is gone. In project mode it
// lifts the limits; in image mode it unmounts and deletes the image and all
// it holds, so the caller unmounts any overlay on it first; in btrfs mode it
// deletes the subvolume and all it holds, so the limited directory is gone.
// It is idempotent.
func (f *FS) Clear(id uint32) error {
	if id == 0 {
		return nil
	}
	if f.btrfs != nil {
		if err := f.clearSubvolume(id); err != nil {
			return fmt.Errorf("clear project %d: %w", id, err)
		}
		return nil
	}
	if f.images {
		if err := f.clearImage(id); err != nil {
			return fmt.Errorf("clear project %d: %w", id, err)
		}
		return nil
	}
	q := dqblk{Valid: qifLimits}
	if err := f.quotactl(qSetQuota, id, &q); err != nil {
		return fmt.Errorf("clear project %d: %w", id, err)
	}
	return nil
}

// quotactl addresses the filesystem by a directory fd (quotactl_fd, Linux
// 5.14+) and falls back to its block device.
func (f *FS) quotactl(cmd int, id uint32, q *dqblk) error {
	qcmd := uintptr(cmd<<8 | prjQuota)
	d, err := os.Open(f.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	_, _, errno := unix.Syscall6(unix.SYS_QUOTACTL_FD, d.Fd(), qcmd, uintptr(id), uintptr(unsafe.Pointer(q)), 0, 0)
	if !errors.Is(errno, unix.ENOSYS) {
		if errno != 0 {
			return fmt.Errorf("quotactl_fd: %w", errno)
		}
		return nil
	}
	dev, err := unix.BytePtrFromString(f.source)
	if err != nil {
		return err
	}
	_, _, errno = unix.Syscall6(unix.SYS_QUOTACTL, qcmd, uintptr(unsafe.Pointer(dev)), uintptr(id), uintptr(unsafe.Pointer(q)), 0, 0)
	if errno != 0 {
		return fmt.Errorf("quotactl %s: %w", f.source, errno)
	}
	return nil
}
