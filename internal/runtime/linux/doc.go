// Package linux is the default sandbox backend: a sandbox is a re-exec of the
// airlock binary as PID 1 of new user, mount, pid, net, uts, ipc and cgroup
// namespaces, on an overlay root, in its own cgroup, with a uid range of its
// own, every capability dropped, no_new_privs, landlock and seccomp. That
// process then serves the agent protocol on a unix socket under the state
// directory.
//
// The host side of this package runs as root (or rootless, with fewer
// layers, each reported by Protections). It must never trust anything the
// sandbox wrote: paths inside a sandbox are resolved by the agent, inside the
// sandbox, never by the host.
package linux
