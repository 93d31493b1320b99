// Package seccomp owns the sandbox's system call filter: a classic BPF
// program, assembled here from one table, that every thread of the sandbox
// init (and so every process it starts) runs under.
//
// The filter allows the system calls a normal userland needs, answers EPERM
// for the ones that reach kernel attack surface a sandbox has no use for
// (mount, ptrace, bpf, keyctl, io_uring, namespaces, modules...), and ENOSYS
// for everything else so that libc falls back as it would on an older kernel
// (clone3 → clone). Blocked calls fail before the kernel reads their
// arguments, so a probe can tell the filter's EPERM from the kernel's.
//
// It must never allow a system call by default, never trust an architecture
// or ABI it was not built for, and never install on some threads only: the
// filter goes on with SECCOMP_FILTER_FLAG_TSYNC or not at all.
package seccomp

//go:generate go test -run ^TestCompiled$ . -args -update
