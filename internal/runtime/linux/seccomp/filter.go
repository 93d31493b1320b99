package seccomp

import (
	"errors"
	"fmt"
	"sort"
)

// ErrUnsupported is returned by Install where no filter is built for the
// running architecture or the kernel lacks seccomp filters.
var ErrUnsupported error = unsupported{}

// unsupported wraps errors.ErrUnsupported without fmt.Errorf, whose
// first call in a process costs every sandbox init's start ~0.1 ms.
type unsupported struct{}

func (unsupported) Error() string { return "seccomp filter: " + errors.ErrUnsupported.Error() }
func (unsupported) Unwrap() error { return errors.ErrUnsupported }

// verdict is what the filter answers for one system call number.
type verdict uint8

const (
	vENOSYS      verdict = iota // in no list: answer as a kernel without it would
	vAllow                      // allowed with any arguments
	vBlock                      // EPERM before the kernel reads any argument
	vClone                      // EPERM when a CLONE_NEW* flag is set
	vIoctl                      // EPERM for TIOCSTI and TIOCLINUX
	vSocket                     // EPERM for packet and raw sockets
	vPersonality                // allowed for PER_LINUX and the query only
)

// entry is one row of an architecture's table.
type entry struct {
	name string
	nr   uint32
	v    verdict
}

// Values the filter returns (linux/seccomp.h) and the errnos it uses; EPERM
// and ENOSYS have these numbers on every architecture a table exists for.
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000

	errnoEPERM  = 1
	errnoENOSYS = 38

	retEPERM  = retErrno | errnoEPERM
	retENOSYS = retErrno | errnoENOSYS
)

// Offsets into struct seccomp_data: nr, arch, then six 64-bit arguments; the
// low half of an argument comes first on the little-endian arches we build.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

func offArgLow(i int) uint32 { return offArg0 + 8*uint32(i) }

// Argument values for the conditional rules (x86 numbering).
const (
	// CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET; NEWTIME
	// (0x80) too although clone() reads that byte as the exit signal, which
	// no valid signal sets.
	cloneNewMask = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 |
		0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

	ioctlTIOCSTI   = 0x5412
	ioctlTIOCLINUX = 0x541c

	afNetlink   = 16
	afPacket    = 17
	sockRaw     = 3
	sockPacket  = 10
	sockTypeMsk = 0xf

	perLinux = 0x0
	perQuery = 0xffffffff
)

// Blocked lists the system calls the filter answers with EPERM whatever
// their arguments, sorted by name.
func Blocked() []string {
	var names []string
	for _, e := range table {
		if e.v == vBlock {
			names = append(names, e.name)
		}
	}
	sort.Strings(names)
	return names
}

// ABI names the system call ABI the filter is built for ("x86_64"), or ""
// where this build has none.
func ABI() string { return archName }

// interval is a run of system call numbers from lo up to the next interval's
// lo that share one verdict.
type interval struct {
	lo uint32
	v  verdict
}

func intervals(t []entry) []interval {
	sorted := append([]entry(nil), t...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].nr < sorted[j].nr })
	var out []interval
	push := func(lo uint32, v verdict) {
		if len(out) > 0 && out[len(out)-1].v == v {
			return
		}
		out = append(out, interval{lo, v})
	}
	next := uint32(0)
	for _, e := range sorted {
		if e.nr > next {
			push(next, vENOSYS)
		}
		push(e.nr, e.v)
		next = e.nr + 1
	}
	push(next, vENOSYS)
	return out
}

// program assembles the filter for one architecture's table. Layout: check
// the architecture, refuse the x32 number space, binary-search the number
// intervals, then one block per argument rule.
func program(arch, x32Bit uint32, t []entry) ([]insn, error) {
	if len(t) == 0 {
		return nil, ErrUnsupported
	}
	seen := map[uint32]string{}
	for _, e := range t {
		if prev, dup := seen[e.nr]; dup || e.nr >= x32Bit {
			return nil, fmt.Errorf("seccomp table: %s=%d collides with %q or leaves the native range", e.name, e.nr, prev)
		}
		seen[e.nr] = e.name
	}

	a := &asm{}
	archOK := a.newLabel()
	a.ld(offArch)
	// A foreign architecture means foreign syscall numbers (int 0x80 from a
	// 64-bit task reports AUDIT_ARCH_I386): the table would lie, so kill.
	a.jmp(jeq, arch, archOK, 0)
	a.ret(retKillProcess)
	a.mark(archOK)
	a.ld(offNr)
	// x32 numbers alias the 64-bit ones with bit 30 set; a kernel with x32
	// off answers ENOSYS, so do the same rather than let a table miss it.
	native := a.newLabel()
	a.jmp(jge, x32Bit, 0, native)
	a.ret(retENOSYS)
	a.mark(native)

	blocks := map[verdict]label{}
	a.search(intervals(t), func(v verdict) {
		switch v {
		case vAllow:
			a.ret(retAllow)
		case vBlock:
			a.ret(retEPERM)
		case vENOSYS:
			a.ret(retENOSYS)
		default:
			if blocks[v] == 0 {
				blocks[v] = a.newLabel()
			}
			a.ja(blocks[v])
		}
	})
	for _, v := range []verdict{vClone, vIoctl, vSocket, vPersonality} {
		if l := blocks[v]; l != 0 {
			a.mark(l)
			argRule(a, v)
		}
	}
	return a.resolve()
}

// search emits a binary search over iv, calling leaf for each verdict.
// Branches go through JA so no conditional offset outgrows its 8 bits.
func (a *asm) search(iv []interval, leaf func(verdict)) {
	if len(iv) == 1 {
		leaf(iv[0].v)
		return
	}
	mid := len(iv) / 2
	left, right := a.newLabel(), a.newLabel()
	a.jmp(jge, iv[mid].lo, 0, left)
	a.ja(right)
	a.mark(left)
	a.search(iv[:mid], leaf)
	a.mark(right)
	a.search(iv[mid:], leaf)
}

// argRule emits the block for one argument-dependent verdict. Only low
// halves are compared: each of these arguments is a 32-bit int or unsigned
// int in the kernel, so the high half cannot smuggle a value past the
// filter (the TIOCSTI high-bits bypass, CVE-2019-7303 class).
func argRule(a *asm, v verdict) {
	allow, deny := a.newLabel(), a.newLabel()
	switch v {
	case vClone:
		a.ld(offArgLow(0))
		a.jmp(jset, cloneNewMask, deny, allow)
	case vIoctl:
		a.ld(offArgLow(1))
		a.jmp(jeq, ioctlTIOCSTI, deny, 0)
		a.jmp(jeq, ioctlTIOCLINUX, deny, allow)
	case vSocket:
		a.ld(offArgLow(0))
		a.jmp(jeq, afPacket, deny, 0)
		// Netlink sockets are SOCK_RAW by convention (ip, getifaddrs, Go's
		// net.Interfaces); without CAP_NET_ADMIN they only read.
		a.jmp(jeq, afNetlink, allow, 0)
		a.ld(offArgLow(1))
		a.and(sockTypeMsk)
		a.jmp(jeq, sockRaw, deny, 0)
		a.jmp(jeq, sockPacket, deny, allow)
	case vPersonality:
		a.ld(offArgLow(0))
		a.jmp(jeq, perLinux, allow, 0)
		a.jmp(jeq, perQuery, allow, deny)
	}
	a.mark(allow)
	a.ret(retAllow)
	a.mark(deny)
	a.ret(retEPERM)
}
