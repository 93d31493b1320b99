package agent

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// kernelFS names the filesystems whose regular files are the kernel's
// views (/proc, /sys and their kin): their size is 0 or a page whatever a
// read returns, some never end and some block, so they are not files the
// API can copy. Checked on the opened file (fstatfs), never on the path:
// a symlink, or a path the sandbox spells differently, cannot dodge it.
var kernelFS = map[int64]string{
	unix.PROC_SUPER_MAGIC:     "proc",
	unix.SYSFS_MAGIC:          "sysfs",
	unix.CGROUP_SUPER_MAGIC:   "cgroup",
	unix.CGROUP2_SUPER_MAGIC:  "cgroup2",
	unix.DEBUGFS_MAGIC:        "debugfs",
	unix.TRACEFS_MAGIC:        "tracefs",
	unix.SECURITYFS_MAGIC:     "securityfs",
	unix.BPF_FS_MAGIC:         "bpf",
	unix.PSTOREFS_MAGIC:       "pstore",
	unix.EFIVARFS_MAGIC:       "efivarfs",
	unix.SELINUX_MAGIC:        "selinuxfs",
	unix.SMACK_MAGIC:          "smackfs",
	unix.AAFS_MAGIC:           "apparmorfs",
	unix.BINFMTFS_MAGIC:       "binfmt_misc",
	unix.NSFS_MAGIC:           "nsfs",
	unix.DEVPTS_SUPER_MAGIC:   "devpts",
	unix.RDTGROUP_SUPER_MAGIC: "resctrl",
	unix.OPENPROM_SUPER_MAGIC: "openpromfs",
	0x62656570:                "configfs", // CONFIGFS_MAGIC
	0x65735543:                "fusectl",  // FUSE_CTL_SUPER_MAGIC
	0x19800202:                "mqueue",   // MQUEUE_MAGIC
}

// readFile streams the regular file at p. What is there is checked on the
// file itself before it is opened for reading, so a read never opens a
// device (some act on open) or waits on a FIFO.
func (s *server) readFile(c *opConn, p string) error {
	pfd, err := s.open(p, unix.O_PATH)
	if err != nil {
		return err
	}
	var first unix.Stat_t
	err = readable(pfd, p, &first)
	unix.Close(pfd)
	if err != nil {
		return err
	}
	// O_NONBLOCK: should the path now be a FIFO, the open must not hang.
	fd, err := s.open(p, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := readable(fd, p, &st); err != nil {
		return err
	}
	if st.Dev != first.Dev || st.Ino != first.Ino {
		return errorf(CodeChanged, "the file was replaced while it was opened")
	}
	return sendFile(c, f, p, &st)
}

// readable fills st for fd and refuses what is not a regular file of a
// filesystem that stores file contents.
func readable(fd int, p string, st *unix.Stat_t) error {
	if err := unix.Fstat(fd, st); err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return fmt.Errorf("read %s: %w", p, unix.EISDIR)
	case unix.S_IFCHR:
		return errorf(CodeNotRegular, "a character device")
	case unix.S_IFBLK:
		return errorf(CodeNotRegular, "a block device")
	case unix.S_IFIFO:
		return errorf(CodeNotRegular, "a FIFO (named pipe)")
	case unix.S_IFSOCK:
		return errorf(CodeNotRegular, "a unix socket")
	default:
		return errorf(CodeNotRegular, "a special file")
	}
	if name := kernelFSOf(fd); name != "" {
		return errorf(CodeNotRegular, "a file of the kernel's %s filesystem", name)
	}
	return nil
}

// kernelFSOf names the kernel filesystem fd is on, "" for any other. A
// failing fstatfs counts as a kernel filesystem: refusing is the safe side.
func kernelFSOf(fd int) string {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return "unknown"
	}
	return kernelFS[int64(fs.Type)]
}

// sendFile streams f, which st described when it was opened, and fails
// with CodeChanged if the file grows, shrinks or is written meanwhile: a
// client must never take a short, long or mixed copy for the file. Each
// chunk is sent only once the next one has been read, and the last only
// once the end is verified, so a changed file never arrives whole (and a
// file of one chunk fails before any byte is sent).
func sendFile(c *opConn, f *os.File, p string, st *unix.Stat_t) error {
	bufs := [2][]byte{make([]byte, MaxPayload), make([]byte, MaxPayload)}
	var pending []byte
	var n int64
	for i := 0; ; i ^= 1 {
		m, err := f.Read(bufs[i])
		n += int64(m)
		if n > st.Size {
			return errorf(CodeChanged, "the file grew past its %d bytes while it was read", st.Size)
		}
		if m > 0 {
			if pending != nil {
				if werr := c.fw.write(FrameData, pending); werr != nil {
					return werr
				}
			}
			pending = bufs[i][:m]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
	}
	if err := unchanged(f, p, st, n); err != nil {
		return err
	}
	if pending != nil {
		if err := c.fw.write(FrameData, pending); err != nil {
			return err
		}
	}
	return c.fw.json(FrameResult, SizeResult{Size: n})
}

// unchanged checks, once f has been read to its end (n bytes), that it is
// still what st described.
func unchanged(f *os.File, p string, st *unix.Stat_t, n int64) error {
	var now unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &now); err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	switch {
	case n != st.Size:
		return errorf(CodeChanged, "the file shrank from %d to %d bytes while it was read", st.Size, n)
	case now.Size != st.Size:
		return errorf(CodeChanged, "the file changed size from %d to %d bytes while it was read", st.Size, now.Size)
	case now.Mtim != st.Mtim:
		return errorf(CodeChanged, "the file was written while it was read")
	}
	return nil
}
