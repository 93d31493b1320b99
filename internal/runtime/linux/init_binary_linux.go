package linux

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/initbin"
)

// The sandbox init is a program of its own (cmd/airlock-init, package
// sbinit): each sandbox start executes it, so it links only what the init
// needs and starts in a fraction of what the daemon's package
// initialisation alone costs. The airlock binary embeds it; the runtime
// copies it into a memfd, seals it and executes every init (and the
// spawner) from that file through /proc/self/fd. Sealed, the file cannot be
// written by anyone, a sandbox's root included: a process that reaches the
// init's executable (as CVE-2019-5736 did through /proc/self/exe to
// overwrite runc on the host) finds nothing it can change, and the host's
// airlock binary is never the init's executable at all.

// openInit opens the init program: path when set, else the embedded one
// in a sealed memfd, else this binary (built without go generate: it runs
// the init too, after the daemon's whole package initialisation). It says
// which.
func openInit(path string) (*os.File, string, error) {
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, "", fmt.Errorf("open the sandbox init %s: %w", path, err)
		}
		return f, path, nil
	}
	if p := initbin.Program(); p != "" {
		f, err := sealedMemfd(initbin.Name, p, initbin.Addr())
		if err != nil {
			return nil, "", fmt.Errorf("sandbox init: %w", err)
		}
		return f, fmt.Sprintf("embedded (%.1f MiB, sealed memfd)", float64(len(p))/(1<<20)), nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("find own executable: %w", err)
	}
	if err := checkBinary(exe); err != nil {
		return nil, "", err
	}
	f, err := os.Open(exe)
	if err != nil {
		return nil, "", fmt.Errorf("open the sandbox init %s: %w", exe, err)
	}
	return f, exe + " (this binary has no embedded init: each sandbox start runs the whole daemon's initialisation; build with go generate ./internal/initbin first)", nil
}

// sealedMemfd returns an executable memfd holding p, sealed against every
// change. p lies at addr in this process: the bytes are copied from this
// process's executable file by the kernel (sendfile), since reading 3 MiB
// through the mapping faults in every page, which took ~17 ms here (a VM
// without hardware paging support, where a fault costs ~15 us) of every
// `airlock run`. Where the file cannot say, they are written from memory.
func sealedMemfd(name, p string, addr uintptr) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// A kernel before 6.3 knows no MFD_EXEC: its memfds are executable.
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if err := copyFromExecutable(fd, addr, int64(len(p))); err != nil {
		// Start again from an empty file: a partial copy is not the program.
		if err = f.Truncate(0); err == nil {
			_, err = f.WriteAt(unsafe.Slice(unsafe.StringData(p), len(p)), 0)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("memfd: %w", err)
		}
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal memfd: %w", err)
	}
	return f, nil
}

// copyFromExecutable copies n bytes that lie at addr in this process's
// memory, from this process's executable file (/proc/self/exe, the
// running binary even if its path was replaced), into out.
func copyFromExecutable(out int, addr uintptr, n int64) error {
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer exe.Close()
	ef, err := elf.NewFile(exe)
	if err != nil {
		return err
	}
	off := int64(-1)
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && uint64(addr) >= p.Vaddr && uint64(addr)+uint64(n) <= p.Vaddr+p.Filesz {
			off = int64(p.Off + (uint64(addr) - p.Vaddr))
			break
		}
	}
	if off < 0 {
		return errors.New("the embedded program is in no loaded segment of the executable")
	}
	for done := int64(0); done < n; {
		k, err := unix.Sendfile(out, int(exe.Fd()), &off, int(n-done))
		if err != nil {
			return err
		}
		if k == 0 {
			return errors.New("the executable ended before the embedded program")
		}
		done += int64(k)
	}
	return nil
}

// InitSource says where the sandbox init program comes from: embedded,
// a path, or this binary (the slow fallback).
func (r *Runtime) InitSource() string { return r.initSource }
