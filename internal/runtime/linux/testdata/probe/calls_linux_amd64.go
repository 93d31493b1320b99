//go:build linux && amd64

package main

import "golang.org/x/sys/unix"

// calls lists every system call the sandbox's filter blocks outright, each
// with arguments that fail early (comments give the unfiltered result
// where a capability check does not come first).
var calls = []call{
	{"mount", unix.SYS_MOUNT, [6]uintptr{badPtr, badPtr, badPtr, 0, badPtr}}, // EFAULT
	{"umount2", unix.SYS_UMOUNT2, [6]uintptr{badPtr, badFlag}},               // EINVAL
	{"pivot_root", unix.SYS_PIVOT_ROOT, [6]uintptr{badPtr, badPtr}},          // EFAULT
	{"chroot", unix.SYS_CHROOT, [6]uintptr{badPtr}},                          // EFAULT
	{"unshare", unix.SYS_UNSHARE, [6]uintptr{0x1}},                           // EINVAL: 0x1 is no unshare flag
	{"setns", unix.SYS_SETNS, [6]uintptr{badFd, 0}},                          // EBADF
	{"fsopen", unix.SYS_FSOPEN, [6]uintptr{badPtr, badFlag}},                 // EINVAL
	{"fsconfig", unix.SYS_FSCONFIG, [6]uintptr{badFd, badFlag}},              // EINVAL
	{"fsmount", unix.SYS_FSMOUNT, [6]uintptr{badFd, badFlag}},                // EINVAL
	{"fspick", unix.SYS_FSPICK, [6]uintptr{badFd, badPtr, badFlag}},          // EINVAL
	{"move_mount", unix.SYS_MOVE_MOUNT, [6]uintptr{badFd, badPtr, badFd, badPtr, badFlag}},
	{"open_tree", unix.SYS_OPEN_TREE, [6]uintptr{badFd, badPtr, badFlag}},                    // EINVAL
	{"open_tree_attr", unix.SYS_OPEN_TREE_ATTR, [6]uintptr{badFd, badPtr, badFlag}},          // EINVAL
	{"mount_setattr", unix.SYS_MOUNT_SETATTR, [6]uintptr{badFd, badPtr, badFlag, badPtr, 0}}, // EINVAL
	{"quotactl", unix.SYS_QUOTACTL, [6]uintptr{0xff, badPtr, 0, badPtr}},                     // EINVAL: no quota type 0xff
	{"quotactl_fd", unix.SYS_QUOTACTL_FD, [6]uintptr{badFd, 0xff, 0, badPtr}},
	{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, [6]uintptr{badFd, badPtr, 0}},
	{"name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT, [6]uintptr{badFd, badPtr, badPtr, badPtr, badFlag}}, // EINVAL
	{"ptrace", unix.SYS_PTRACE, [6]uintptr{0xffff, badFd}},                                                // ESRCH
	{"process_vm_readv", unix.SYS_PROCESS_VM_READV, [6]uintptr{0, 0, 0, 0, 0, 1}},                         // EINVAL: flags
	{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV, [6]uintptr{0, 0, 0, 0, 0, 1}},                       // EINVAL: flags
	{"kcmp", unix.SYS_KCMP, [6]uintptr{badFd, badFd, 0xffff}},                                             // ESRCH
	{"pidfd_getfd", unix.SYS_PIDFD_GETFD, [6]uintptr{badFd, 0, 1}},                                        // EINVAL: flags
	{"bpf", unix.SYS_BPF, [6]uintptr{0xffff, badPtr, 0}},                                                  // EINVAL: no such command
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [6]uintptr{badPtr, badFd, badFd, badFd, badFlag}},       // EINVAL
	{"io_uring_setup", unix.SYS_IO_URING_SETUP, [6]uintptr{1, badPtr}},                                    // EFAULT
	{"io_uring_enter", unix.SYS_IO_URING_ENTER, [6]uintptr{badFd}},                                        // EBADF
	{"io_uring_register", unix.SYS_IO_URING_REGISTER, [6]uintptr{badFd}},                                  // EBADF
	{"userfaultfd", unix.SYS_USERFAULTFD, [6]uintptr{0x3}},                                                // EINVAL: user-mode-only plus a bad flag
	{"keyctl", unix.SYS_KEYCTL, [6]uintptr{0xffff}},                                                       // EOPNOTSUPP
	{"add_key", unix.SYS_ADD_KEY, [6]uintptr{badPtr, badPtr}},                                             // EFAULT
	{"request_key", unix.SYS_REQUEST_KEY, [6]uintptr{badPtr, badPtr}},                                     // EFAULT
	{"fanotify_init", unix.SYS_FANOTIFY_INIT, [6]uintptr{badFlag, badFlag}},
	{"fanotify_mark", unix.SYS_FANOTIFY_MARK, [6]uintptr{badFd, badFlag, 0, badFd, badPtr}},
	{"lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE, [6]uintptr{0, badPtr, 0}},
	{"modify_ldt", unix.SYS_MODIFY_LDT, [6]uintptr{99, badPtr, 0}}, // ENOSYS: no function 99
	{"uselib", unix.SYS_USELIB, [6]uintptr{badPtr}},
	{"init_module", unix.SYS_INIT_MODULE, [6]uintptr{badPtr, 0, badPtr}},
	{"finit_module", unix.SYS_FINIT_MODULE, [6]uintptr{badFd, badPtr, badFlag}},
	{"delete_module", unix.SYS_DELETE_MODULE, [6]uintptr{badPtr, 0}},
	{"create_module", unix.SYS_CREATE_MODULE, [6]uintptr{badPtr, 0}},
	{"query_module", unix.SYS_QUERY_MODULE, [6]uintptr{badPtr, 0}},
	{"get_kernel_syms", unix.SYS_GET_KERNEL_SYMS, [6]uintptr{badPtr}},
	{"kexec_load", unix.SYS_KEXEC_LOAD, [6]uintptr{0, 0, 0, badFlag}},                      // EINVAL: flags, so nothing is unloaded
	{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD, [6]uintptr{badFd, badFd, 0, 0, badFlag}}, // EINVAL: flags
	{"reboot", unix.SYS_REBOOT, [6]uintptr{0, 0, 0, 0}},                                    // EINVAL: no magic
	{"swapon", unix.SYS_SWAPON, [6]uintptr{badPtr, badFlag}},                               // EINVAL
	{"swapoff", unix.SYS_SWAPOFF, [6]uintptr{badPtr}},                                      // EFAULT
	{"acct", unix.SYS_ACCT, [6]uintptr{badPtr}},                                            // EFAULT (NULL would switch accounting off)
	{"nfsservctl", unix.SYS_NFSSERVCTL, [6]uintptr{}},
	{"_sysctl", unix.SYS__SYSCTL, [6]uintptr{badPtr}},
	{"settimeofday", unix.SYS_SETTIMEOFDAY, [6]uintptr{badPtr, badPtr}},  // EFAULT
	{"clock_settime", unix.SYS_CLOCK_SETTIME, [6]uintptr{0, badPtr}},     // EFAULT
	{"adjtimex", unix.SYS_ADJTIMEX, [6]uintptr{badPtr}},                  // EFAULT
	{"clock_adjtime", unix.SYS_CLOCK_ADJTIME, [6]uintptr{0, badPtr}},     // EFAULT
	{"syslog", unix.SYS_SYSLOG, [6]uintptr{9999, badPtr, 0}},             // EINVAL: no action 9999
	{"sethostname", unix.SYS_SETHOSTNAME, [6]uintptr{badPtr, badFd}},     // EINVAL: negative length
	{"setdomainname", unix.SYS_SETDOMAINNAME, [6]uintptr{badPtr, badFd}}, // EINVAL: negative length
	{"iopl", unix.SYS_IOPL, [6]uintptr{4}},                               // EINVAL: levels stop at 3
	{"ioperm", unix.SYS_IOPERM, [6]uintptr{0x10000, 1, 1}},               // EINVAL: past the I/O bitmap
}
