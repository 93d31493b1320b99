package seccomp

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/testenv"
)

const auditArchI386 = 0x40000003

func needTable(t testing.TB) []insn {
	t.Helper()
	if archName == "" {
		testenv.Unsupported(t, "no seccomp table for this architecture")
	}
	prog, err := program(auditArch, x32Bit, table)
	if err != nil {
		t.Fatalf("build filter: %v", err)
	}
	return prog
}

func nr(t testing.TB, name string) int32 {
	t.Helper()
	for _, e := range table {
		if e.name == name {
			return int32(e.nr)
		}
	}
	t.Fatalf("%s is not in the table", name)
	return 0
}

func retName(r uint32) string {
	switch r {
	case retAllow:
		return "ALLOW"
	case retEPERM:
		return "EPERM"
	case retENOSYS:
		return "ENOSYS"
	case retKillProcess:
		return "KILL"
	}
	return "unknown"
}

// mustBlock is the brief's list, written out here rather than derived from
// the table so that dropping a row from the table fails this test.
var mustBlock = []string{
	"mount", "umount2", "pivot_root", "unshare", "setns", "ptrace", "bpf",
	"keyctl", "add_key", "request_key", "perf_event_open", "io_uring_setup",
	"io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module", "open_by_handle_at",
	"name_to_handle_at", "userfaultfd", "fsopen", "fsconfig", "fsmount",
	"fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr",
	"reboot", "swapon", "swapoff", "chroot", "acct", "settimeofday",
	"clock_settime", "adjtimex", "clock_adjtime", "quotactl", "lookup_dcookie",
	"process_vm_readv", "process_vm_writev", "kcmp", "iopl", "ioperm",
	"vhangup", "syslog", "pidfd_getfd", "fanotify_init", "nfsservctl",
}

// mustAllow is what bash, coreutils, python, git, curl, glibc and the Go
// runtime call on their ordinary paths.
var mustAllow = []string{
	"read", "write", "openat", "close", "newfstatat", "statx", "lseek", "mmap",
	"mprotect", "munmap", "brk", "rt_sigaction", "rt_sigprocmask",
	"rt_sigreturn", "execve", "execveat", "exit_group", "wait4", "waitid",
	"pipe2", "dup2", "fcntl", "getdents64", "futex", "set_robust_list",
	"rseq", "prlimit64", "getrandom", "sigaltstack", "gettid", "tgkill",
	"sched_getaffinity", "madvise", "epoll_pwait", "epoll_ctl", "eventfd2",
	"pidfd_open", "pidfd_send_signal", "connect", "sendmmsg", "recvfrom",
	"getpid", "setsid", "setpgid", "getcwd", "chdir", "unlinkat", "renameat2",
	"faccessat2", "copy_file_range", "prctl", "arch_prctl", "uname",
	"clock_nanosleep", "nanosleep", "setuid", "setgid", "setgroups",
	"vfork", "fork", "kill", "memfd_create", "close_range", "seccomp",
}

func TestPolicy(t *testing.T) {
	prog := needTable(t)
	t.Logf("filter: %d instructions, %d table rows", len(prog), len(table))
	type call struct {
		name string
		d    seccompData
		want string
	}
	calls := []call{
		{"unknown number", seccompData{nr: 1000, arch: auditArch}, "ENOSYS"},
		{"highest number", seccompData{nr: x32Bit - 1, arch: auditArch}, "ENOSYS"},
		{"clone3 falls back", seccompData{nr: nr(t, "clone3"), arch: auditArch}, "ENOSYS"},
		{"x32 read", seccompData{nr: x32Bit | 0, arch: auditArch}, "ENOSYS"},
		{"x32 mount", seccompData{nr: x32Bit | nr(t, "mount"), arch: auditArch}, "ENOSYS"},
		{"negative number", seccompData{nr: -1, arch: auditArch}, "ENOSYS"},
		{"i386 via int 0x80", seccompData{nr: 1, arch: auditArchI386}, "KILL"},
		{"clone for fork", seccompData{nr: nr(t, "clone"), arch: auditArch, args: [6]uint64{0x01200011}}, "ALLOW"},
		{"clone for a thread", seccompData{nr: nr(t, "clone"), arch: auditArch, args: [6]uint64{0x003d0f00}}, "ALLOW"},
		{"ioctl TCGETS", seccompData{nr: nr(t, "ioctl"), arch: auditArch, args: [6]uint64{0, 0x5401}}, "ALLOW"},
		{"ioctl TIOCSTI", seccompData{nr: nr(t, "ioctl"), arch: auditArch, args: [6]uint64{0, 0x5412}}, "EPERM"},
		{"ioctl TIOCSTI high bits", seccompData{nr: nr(t, "ioctl"), arch: auditArch, args: [6]uint64{0, 1<<32 | 0x5412}}, "EPERM"},
		{"ioctl TIOCLINUX", seccompData{nr: nr(t, "ioctl"), arch: auditArch, args: [6]uint64{0, 0x541c}}, "EPERM"},
		{"socket inet stream", seccompData{nr: nr(t, "socket"), arch: auditArch, args: [6]uint64{2, 1 | 0x80000}}, "ALLOW"},
		{"socket unix dgram", seccompData{nr: nr(t, "socket"), arch: auditArch, args: [6]uint64{1, 2}}, "ALLOW"},
		{"socket inet6 dgram icmp", seccompData{nr: nr(t, "socket"), arch: auditArch, args: [6]uint64{10, 2, 58}}, "ALLOW"},
		{"socket netlink raw", seccompData{nr: nr(t, "socket"), arch: auditArch, args: [6]uint64{16, 3 | 0x80000}}, "ALLOW"},
		{"socket inet raw", seccompData{nr: nr(t, "socket"), arch: auditArch, args: [6]uint64{2, 3, 1}}, "EPERM"},
		{"socket inet6 raw cloexec", seccompData{nr: nr(t, "socket"), arch: auditArch, args: [6]uint64{10, 3 | 0x80000}}, "EPERM"},
		{"socket inet packet", seccompData{nr: nr(t, "socket"), arch: auditArch, args: [6]uint64{2, 10}}, "EPERM"},
		{"socket packet dgram", seccompData{nr: nr(t, "socket"), arch: auditArch, args: [6]uint64{17, 2}}, "EPERM"},
		{"socket packet high bits", seccompData{nr: nr(t, "socket"), arch: auditArch, args: [6]uint64{1<<32 | 17, 2}}, "EPERM"},
		{"personality query", seccompData{nr: nr(t, "personality"), arch: auditArch, args: [6]uint64{0xffffffff}}, "ALLOW"},
		{"personality linux", seccompData{nr: nr(t, "personality"), arch: auditArch, args: [6]uint64{0}}, "ALLOW"},
		{"personality linux32", seccompData{nr: nr(t, "personality"), arch: auditArch, args: [6]uint64{8}}, "EPERM"},
		{"personality no aslr", seccompData{nr: nr(t, "personality"), arch: auditArch, args: [6]uint64{0x40000}}, "EPERM"},
	}
	for _, ns := range []struct {
		name string
		flag uint64
	}{{"NEWNS", 0x20000}, {"NEWCGROUP", 0x2000000}, {"NEWUTS", 0x4000000}, {"NEWIPC", 0x8000000},
		{"NEWUSER", 0x10000000}, {"NEWPID", 0x20000000}, {"NEWNET", 0x40000000}, {"NEWTIME", 0x80}} {
		calls = append(calls, call{"clone " + ns.name, seccompData{nr: nr(t, "clone"), arch: auditArch, args: [6]uint64{ns.flag | 0x11}}, "EPERM"})
	}
	for _, name := range mustBlock {
		// Arguments the kernel would reject: the filter must not care.
		calls = append(calls, call{name, seccompData{nr: nr(t, name), arch: auditArch, args: [6]uint64{^uint64(0), 0, 8}}, "EPERM"})
	}
	for _, name := range mustAllow {
		calls = append(calls, call{name, seccompData{nr: nr(t, name), arch: auditArch}, "ALLOW"})
	}
	for _, c := range calls {
		r, err := run(prog, c.d)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := retName(r); got != c.want {
			t.Errorf("%s (nr %d, args %#x): got %s, want %s", c.name, c.d.nr, c.d.args[:2], got, c.want)
		}
	}
}

func TestBlocked(t *testing.T) {
	needTable(t)
	got := Blocked()
	if !sort.StringsAreSorted(got) {
		t.Errorf("Blocked() not sorted: %v", got)
	}
	in := map[string]bool{}
	for _, n := range got {
		in[n] = true
	}
	var missing []string
	for _, n := range mustBlock {
		if !in[n] {
			missing = append(missing, n)
		}
	}
	if diff := cmp.Diff([]string(nil), missing); diff != "" {
		t.Errorf("Blocked() lacks (-want +got):\n%s", diff)
	}
	if ABI() != "x86_64" {
		t.Errorf("ABI() = %q", ABI())
	}
}

func TestTableUnique(t *testing.T) {
	needTable(t)
	names := map[string]bool{}
	for _, e := range table {
		if names[e.name] {
			t.Errorf("%s listed twice", e.name)
		}
		names[e.name] = true
	}
}

// model is the policy stated directly from the table, without BPF: the
// assembled program must agree with it on every input.
func model(d seccompData) uint32 {
	if d.arch != auditArch {
		return retKillProcess
	}
	n := uint32(d.nr)
	if n >= x32Bit {
		return retENOSYS
	}
	for _, e := range table {
		if e.nr != n {
			continue
		}
		a0, a1 := uint32(d.args[0]), uint32(d.args[1])
		deny := false
		switch e.v {
		case vENOSYS:
			return retENOSYS
		case vAllow:
		case vBlock:
			deny = true
		case vClone:
			deny = a0&cloneNewMask != 0
		case vIoctl:
			deny = a1 == ioctlTIOCSTI || a1 == ioctlTIOCLINUX
		case vSocket:
			deny = a0 == afPacket || (a0 != afNetlink && (a1&0xf == sockRaw || a1&0xf == sockPacket))
		case vPersonality:
			deny = a0 != perLinux && a0 != perQuery
		}
		if deny {
			return retEPERM
		}
		return retAllow
	}
	return retENOSYS
}

func TestProgramMatchesModel(t *testing.T) {
	prog := needTable(t)
	argSets := [][6]uint64{
		{}, {^uint64(0), ^uint64(0)}, {0x10000000, 0x5412}, {17, 3}, {16, 3}, {2, 3}, {2, 10}, {8, 0x541c},
	}
	for n := int32(-2); n < 600; n++ {
		for _, arch := range []uint32{auditArch, auditArchI386} {
			for _, args := range argSets {
				d := seccompData{nr: n, arch: arch, args: args}
				got, err := run(prog, d)
				if err != nil {
					t.Fatalf("nr %d: %v", n, err)
				}
				if want := model(d); got != want {
					t.Fatalf("nr %d arch %#x args %#x: got %s, want %s", n, arch, args[:2], retName(got), retName(want))
				}
			}
		}
	}
}

func FuzzProgram(f *testing.F) {
	prog := needTable(f)
	for _, e := range table {
		f.Add(int32(e.nr), uint32(auditArch), uint64(0), uint64(0))
	}
	f.Add(int32(x32Bit), uint32(auditArch), uint64(0), uint64(0))
	f.Add(int32(1), uint32(auditArchI386), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, n int32, arch uint32, a0, a1 uint64) {
		d := seccompData{nr: n, arch: arch, args: [6]uint64{a0, a1}}
		got, err := run(prog, d)
		if err != nil {
			t.Fatal(err)
		}
		if want := model(d); got != want {
			t.Fatalf("nr %d arch %#x args %#x %#x: got %s, want %s", n, arch, a0, a1, retName(got), retName(want))
		}
	})
}
