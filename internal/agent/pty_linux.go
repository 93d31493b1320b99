package agent

import (
	"encoding/json"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openPTY opens a new terminal pair in the sandbox's devpts instance. The
// peer is opened from the master (TIOCGPTPEER), never by path, so nothing
// planted under /dev/pts can be handed to the process instead.
func openPTY(size TTYSize) (master, peer *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	// The open flags are TIOCGPTPEER's argument.
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.TIOCGPTPEER), uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("open pty peer: %w", errno)
	}
	pfd := int(r)
	// Non-blocking, so the runtime's poller serves it and read deadlines
	// (the drain after exit) work.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		unix.Close(pfd)
		return nil, nil, fmt.Errorf("pty: %w", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	peer = os.NewFile(uintptr(pfd), "pty")
	if err := setSize(master, size); err != nil {
		master.Close()
		peer.Close()
		return nil, nil, err
	}
	return master, peer, nil
}

func setSize(master *os.File, size TTYSize) error {
	if size.Cols == 0 || size.Rows == 0 {
		return errorf(CodeInvalid, "terminal size %dx%d: both must be positive", size.Cols, size.Rows)
	}
	ws := &unix.Winsize{Col: size.Cols, Row: size.Rows}
	conn, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := conn.Control(func(fd uintptr) { ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) }); err != nil {
		return err
	}
	if ioErr != nil {
		return fmt.Errorf("set terminal size: %w", ioErr)
	}
	return nil
}

// resize applies a FrameResize payload.
func resize(master *os.File, payload []byte) error {
	var size TTYSize
	if err := json.Unmarshal(payload, &size); err != nil {
		return fmt.Errorf("resize frame: %w", err)
	}
	return setSize(master, size)
}
