package sbinit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maskedFiles are /proc and /sys files that leak host state or give a lever
// on the host kernel; each is covered with /dev/null. (The same set runc and
// the OCI default spec mask, for the same reasons: kcore and kallsyms leak
// kernel memory layout, sysrq-trigger can crash the host, keys and
// timer_list leak other tenants' data.)
var maskedFiles = []string{
	"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
	"/proc/sysrq-trigger", "/proc/latency_stats", "/proc/kallsyms",
	"/proc/kmsg", "/proc/interrupts", "/proc/softirqs", "/proc/vmallocinfo",
	"/proc/pagetypeinfo", "/proc/buddyinfo", "/proc/mtrr", "/proc/config.gz",
}

// maskedDirs are covered with an empty read-only tmpfs.
var maskedDirs = []string{"/proc/acpi", "/proc/scsi", "/proc/asound", "/proc/driver", "/proc/tty/driver", "/sys/firmware", "/sys/kernel/debug", "/sys/kernel/security"}

// readOnlyPaths stay visible but cannot be written, even by root inside.
var readOnlyPaths = []string{"/proc/sys", "/proc/bus", "/proc/fs", "/proc/irq"}

// hostDevices are bound from the host: a user namespace cannot mknod.
var hostDevices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// setupRootfs builds the sandbox's root inside its new mount namespace and
// pivots into it. It runs in the init, as root of the sandbox's user
// namespace, before any sandboxed code exists.
func setupRootfs(c *Config) error {
	// Nothing we mount may propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	// The overlay's options show in the sandbox's /proc/self/mountinfo:
	// name its layers relative to the sandbox dir (the template bound
	// there) so they do not tell the host's paths.
	dir := filepath.Dir(c.Upper)
	if err := unix.Mount(c.Lower, filepath.Join(dir, "lower"), "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind template: %w", err)
	}
	if err := unix.Chdir(dir); err != nil {
		return fmt.Errorf("chdir sandbox dir: %w", err)
	}
	// volatile: the writable layer dies with the sandbox, so the overlay
	// never needs to sync it; without it, unmounting at destroy forces a
	// sync (a filesystem commit) of the disk pool.
	const opts = "lowerdir=lower,upperdir=upper,workdir=work,userxattr,volatile"
	if err := unix.Mount("overlay", c.Rootfs, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount overlay root: %w", err)
	}
	r := func(p string) string { return filepath.Join(c.Rootfs, p) }
	for _, b := range c.Binds {
		if err := bindReadOnly(c.BindFrom+b, r(b)); err != nil {
			return err
		}
	}
	if c.Layer != "" || c.Build {
		if err := mountUsrLocal(c, dir, r(UsrLocal)); err != nil {
			return err
		}
	}
	if err := mountVolumes(c.Rootfs, c.VolumeSock, c.Volumes); err != nil {
		return err
	}
	if err := setupDev(r("/dev"), c.TmpMB, !c.Rootless); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", r("/tmp"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=1777,size=%dm", c.TmpMB)); err != nil {
		return fmt.Errorf("mount /tmp: %w", err)
	}
	if err := unix.Mount("proc", r("/proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	// sysfs is only mountable when we own the network namespace; without it
	// /sys stays an empty directory, which is fine for userland.
	if err := unix.Mount("sysfs", r("/sys"), "sysfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		c.warn("sysfs not mounted: %v", err)
	}
	if err := maskPaths(c.Rootfs); err != nil {
		return err
	}
	return pivot(c.Rootfs)
}

// mountUsrLocal puts a built template's layer over the host's /usr/local,
// read-only, or for a build a writable layer over both. Layers are named
// relative to the sandbox dir (the working directory) so the mount's
// options do not show the host's paths.
func mountUsrLocal(c *Config, dir, target string) error {
	var lowers []string
	if c.Layer != "" {
		if err := unix.Mount(c.Layer, filepath.Join(dir, "layer"), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind template layer: %w", err)
		}
		lowers = append(lowers, LayerUsrLocal)
	}
	if fi, err := os.Stat(UsrLocal); err == nil && fi.IsDir() {
		lowers = append(lowers, UsrLocal)
	}
	if _, err := os.Stat(target); err != nil {
		return fmt.Errorf("template layer: the host has no %s to put it on", UsrLocal)
	}
	lower := "lowerdir=" + strings.Join(lowers, ":")
	switch {
	case c.Build:
		opts := lower + ",upperdir=" + BuildUpper + ",workdir=" + BuildWork + ",userxattr"
		if err := unix.Mount("overlay", target, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mount build layer: %w", err)
		}
	case len(lowers) > 1:
		if err := unix.Mount("overlay", target, "overlay", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, lower+",userxattr"); err != nil {
			return fmt.Errorf("mount template layer: %w", err)
		}
	default:
		return bindReadOnly(filepath.Join(dir, lowers[0]), target)
	}
	return nil
}

func setupDev(dev string, shmMB int64, ttyGroup bool) error {
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=755,size=64k"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, name := range hostDevices {
		p := filepath.Join(dev, name)
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+name, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", name, err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir(filepath.Join(dev, d), 0o755); err != nil {
			return err
		}
	}
	// gid 5 (tty) exists only when the namespace maps a whole id range.
	// Terminals are 0666: the agent (root here, without CAP_CHOWN) opens
	// them for the sandbox user, who must be able to reopen its own
	// (/dev/stdin, /proc/self/fd/0); this devpts instance is the sandbox's
	// alone, and everything in it runs as that one user anyway.
	ptsOpts := "newinstance,ptmxmode=0666,mode=0666"
	if ttyGroup {
		ptsOpts += ",gid=5"
	}
	if err := unix.Mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, ptsOpts); err != nil {
		return fmt.Errorf("mount /dev/pts: %w", err)
	}
	if err := unix.Mount("tmpfs", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, fmt.Sprintf("mode=1777,size=%dm", shmMB)); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	links := map[string]string{"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "core": "/proc/kcore"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return unix.MountSetattr(-1, dev, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC})
}

func maskPaths(rootfs string) error {
	null := filepath.Join(rootfs, "dev/null")
	for _, f := range maskedFiles {
		p := filepath.Join(rootfs, f)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := unix.Mount(null, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mask %s: %w", f, err)
		}
	}
	for _, d := range maskedDirs {
		p := filepath.Join(rootfs, d)
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			continue
		}
		if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0"); err != nil {
			return fmt.Errorf("mask %s: %w", d, err)
		}
	}
	for _, d := range readOnlyPaths {
		p := filepath.Join(rootfs, d)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := bindReadOnly(p, p); err != nil {
			return err
		}
	}
	return nil
}

// bindReadOnly binds src at dst and makes the whole subtree read-only,
// nosuid and nodev. mount_setattr changes the flags atomically for the
// subtree and keeps the flags the kernel locks in a user namespace.
func bindReadOnly(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(-1, dst, unix.AT_RECURSIVE, attr); err != nil {
		return fmt.Errorf("make %s read-only: %w", dst, err)
	}
	return nil
}

// pivot makes rootfs the root and detaches the old root entirely, so no path
// leads back to the host's filesystem.
func pivot(rootfs string) error {
	if err := unix.Chdir(rootfs); err != nil {
		return fmt.Errorf("chdir rootfs: %w", err)
	}
	// pivot_root(".", ".") stacks the old root under the new one; unmounting
	// "." then removes the old root without needing a directory for it.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	return unix.Chdir("/")
}
