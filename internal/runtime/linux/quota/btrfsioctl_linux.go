package quota

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// From linux/btrfs.h and linux/btrfs_tree.h; x/sys/unix has none of them.
// Sizes are checked by TestBtrfsStructSizes.
const (
	btrfsIocSubvolCreate = 0x5000940e // _IOW(0x94, 14, struct btrfs_ioctl_vol_args)
	btrfsIocSnapDestroy  = 0x5000940f // _IOW(0x94, 15, struct btrfs_ioctl_vol_args)
	btrfsIocSnapCreateV2 = 0x50009417 // _IOW(0x94, 23, struct btrfs_ioctl_vol_args_v2)
	btrfsIocInoLookup    = 0xd0009412 // _IOWR(0x94, 18, struct btrfs_ioctl_ino_lookup_args)
	btrfsIocQuotaCtl     = 0xc0109428 // _IOWR(0x94, 40, struct btrfs_ioctl_quota_ctl_args)
	btrfsIocQgroupLimit  = 0x8030942b // _IOR(0x94, 43, struct btrfs_ioctl_qgroup_limit_args)
	btrfsIocFSInfo       = 0x8400941f // _IOR(0x94, 31, struct btrfs_ioctl_fs_info_args)

	btrfsQuotaCtlEnable       = 1
	btrfsQuotaCtlEnableSimple = 4 // squota, Linux 6.7+

	btrfsQgroupLimitMaxRfer = 1 << 0
	btrfsQgroupLimitMaxExcl = 1 << 1

	btrfsFirstFreeObjectID = 256 // inode number of every subvolume's root
)

// btrfsVolArgs is struct btrfs_ioctl_vol_args.
type btrfsVolArgs struct {
	Fd   int64
	Name [4088]byte
}

// btrfsVolArgsV2 is struct btrfs_ioctl_vol_args_v2, with its unions laid
// out as the snapshot request uses them: no flags (a writable snapshot) and
// no qgroup inheritance.
type btrfsVolArgsV2 struct {
	Fd      int64
	TransID uint64
	Flags   uint64
	_       [4]uint64
	Name    [4040]byte
}

// btrfsInoLookupArgs is struct btrfs_ioctl_ino_lookup_args.
type btrfsInoLookupArgs struct {
	TreeID   uint64
	ObjectID uint64
	Name     [4080]byte
}

// btrfsQuotaCtlArgs is struct btrfs_ioctl_quota_ctl_args.
type btrfsQuotaCtlArgs struct {
	Cmd    uint64
	Status uint64
}

// btrfsQgroupLimitArgs is struct btrfs_ioctl_qgroup_limit_args, with its
// struct btrfs_qgroup_limit inlined.
type btrfsQgroupLimitArgs struct {
	QgroupID uint64
	Flags    uint64
	MaxRfer  uint64
	MaxExcl  uint64
	RsvRfer  uint64
	RsvExcl  uint64
}

// btrfsFSInfoArgs is struct btrfs_ioctl_fs_info_args, up to the fsid.
type btrfsFSInfoArgs struct {
	MaxID      uint64
	NumDevices uint64
	FSID       [16]byte
	_          [1024 - 32]byte
}

func btrfsIoctl[T any](f *os.File, req uintptr, arg *T) error {
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), req, uintptr(unsafe.Pointer(arg)))
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}

func btrfsName(name string) ([4088]byte, error) {
	var b [4088]byte
	if name == "" || len(name) >= len(b) {
		return b, fmt.Errorf("subvolume name %q: %w", name, unix.ENAMETOOLONG)
	}
	copy(b[:], name)
	return b, nil
}

// createSubvolume makes an empty subvolume called name in the directory dir.
func createSubvolume(dir *os.File, name string) error {
	var a btrfsVolArgs
	var err error
	if a.Name, err = btrfsName(name); err != nil {
		return err
	}
	return btrfsIoctl(dir, btrfsIocSubvolCreate, &a)
}

// destroySubvolume deletes the subvolume called name in dir, however full:
// the kernel unlinks it at once and frees its extents in the background.
func destroySubvolume(dir *os.File, name string) error {
	var a btrfsVolArgs
	var err error
	if a.Name, err = btrfsName(name); err != nil {
		return err
	}
	return btrfsIoctl(dir, btrfsIocSnapDestroy, &a)
}

// snapshotSubvolume makes name in dir a writable snapshot of the subvolume
// whose root is open as src. The kernel flushes src's dirty data and
// commits, so the snapshot holds what src held at that instant; the data
// itself is shared, not copied.
func snapshotSubvolume(src, dir *os.File, name string) error {
	a := btrfsVolArgsV2{Fd: int64(src.Fd())}
	if name == "" || len(name) >= len(a.Name) {
		return fmt.Errorf("subvolume name %q: %w", name, unix.ENAMETOOLONG)
	}
	copy(a.Name[:], name)
	return btrfsIoctl(dir, btrfsIocSnapCreateV2, &a)
}

// subvolumeID returns the id of the subvolume holding the open file f.
func subvolumeID(f *os.File) (uint64, error) {
	a := btrfsInoLookupArgs{ObjectID: btrfsFirstFreeObjectID}
	if err := btrfsIoctl(f, btrfsIocInoLookup, &a); err != nil {
		return 0, err
	}
	return a.TreeID, nil
}

// enableQuota turns on simple quotas, which charge each extent to the
// subvolume that wrote it and cost next to nothing; kernels before 6.7 do
// not know them (EINVAL), and get full qgroups, which account every extent's
// sharing at each commit. Enabling is a no-op when quotas are on already.
func enableQuota(root *os.File) (simple bool, err error) {
	a := btrfsQuotaCtlArgs{Cmd: btrfsQuotaCtlEnableSimple}
	err = btrfsIoctl(root, btrfsIocQuotaCtl, &a)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return false, fmt.Errorf("enable simple quota: %w", err)
	}
	a = btrfsQuotaCtlArgs{Cmd: btrfsQuotaCtlEnable}
	if err := btrfsIoctl(root, btrfsIocQuotaCtl, &a); err != nil {
		return false, fmt.Errorf("enable quota: %w", err)
	}
	return false, nil
}

// limitQgroup caps the bytes the level-0 qgroup of subvolume id refers to.
// Within one subvolume that has no snapshots referenced and exclusive bytes
// are the same, and simple quotas only know exclusive ones, so both are set.
func limitQgroup(root *os.File, id uint64, bytes uint64) error {
	a := btrfsQgroupLimitArgs{
		QgroupID: id,
		Flags:    btrfsQgroupLimitMaxRfer | btrfsQgroupLimitMaxExcl,
		MaxRfer:  bytes,
		MaxExcl:  bytes,
	}
	return btrfsIoctl(root, btrfsIocQgroupLimit, &a)
}

// btrfsSysfs returns the directory where the kernel shows the filesystem
// of the open file f, /sys/fs/btrfs/<fsid>.
func btrfsSysfs(f *os.File) (string, error) {
	var a btrfsFSInfoArgs
	if err := btrfsIoctl(f, btrfsIocFSInfo, &a); err != nil {
		return "", err
	}
	u := a.FSID
	return fmt.Sprintf("/sys/fs/btrfs/%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), nil
}
