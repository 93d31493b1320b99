package quota

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// attachLoop binds img to a free loop device and returns the open device.
// The device is configured to detach itself (LO_FLAGS_AUTOCLEAR) when its
// last user goes: once mounted that is the mount, so unmounting frees it and
// a failed mount frees it as soon as the caller closes the returned file.
func attachLoop(img *os.File) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("attach loop device: %w", err)
	}
	defer ctl.Close()
	for range 10 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("attach loop device: get free: %w", err)
		}
		dev, err := openLoop(n)
		if err != nil {
			return nil, err
		}
		cfg := unix.LoopConfig{Fd: uint32(img.Fd())}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], img.Name())
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if err == nil {
			return dev, nil
		}
		dev.Close()
		// EBUSY: another process took this device between GET_FREE and
		// CONFIGURE; ask for another.
		if !errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("attach loop device %s: %w", dev.Name(), err)
		}
	}
	return nil, fmt.Errorf("attach loop device: every free device was taken: %w", unix.EBUSY)
}

// openLoop opens /dev/loopN, creating the node when /dev is a static tmpfs
// (as in containers) that lacks the devices the kernel added since.
func openLoop(n int) (*os.File, error) {
	path := fmt.Sprintf("/dev/loop%d", n)
	dev, err := os.OpenFile(path, os.O_RDWR|unix.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if err := unix.Mknod(path, unix.S_IFBLK|0o660, int(unix.Mkdev(7, uint32(n)))); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("create %s: %w", path, err)
		}
		dev, err = os.OpenFile(path, os.O_RDWR|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return dev, nil
}
