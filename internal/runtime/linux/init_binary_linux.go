package linux

import (
	"errors"
	"fmt"
	"os"

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
	if b := initbin.Bytes(); b != nil {
		f, err := sealedMemfd(initbin.Name, b)
		if err != nil {
			return nil, "", fmt.Errorf("sandbox init: %w", err)
		}
		return f, fmt.Sprintf("embedded (%.1f MiB, sealed memfd)", float64(len(b))/(1<<20)), nil
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

// sealedMemfd returns an executable memfd holding b, sealed against every
// change.
func sealedMemfd(name string, b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// A kernel before 6.3 knows no MFD_EXEC: its memfds are executable.
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("memfd: %w", err)
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal memfd: %w", err)
	}
	return f, nil
}

// InitSource says where the sandbox init program comes from: embedded,
// a path, or this binary (the slow fallback).
func (r *Runtime) InitSource() string { return r.initSource }
