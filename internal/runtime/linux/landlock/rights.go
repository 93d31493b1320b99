package landlock

import (
	"errors"
)

// ErrUnsupported is what Restrict returns, unwrapped, when the kernel has no
// Landlock (not built in, not in the lsm= list, or too old).
var ErrUnsupported error = unsupported{}

// unsupported wraps errors.ErrUnsupported without fmt.Errorf, whose
// first call in a process costs every sandbox init's start ~0.1 ms.
type unsupported struct{}

func (unsupported) Error() string { return "landlock: " + errors.ErrUnsupported.Error() }
func (unsupported) Unwrap() error { return errors.ErrUnsupported }

// File system access rights (linux/landlock.h) and the ABI that introduced
// each.
const (
	accessExecute    = 1 << 0
	accessWriteFile  = 1 << 1
	accessReadFile   = 1 << 2
	accessReadDir    = 1 << 3
	accessRemoveDir  = 1 << 4
	accessRemoveFile = 1 << 5
	accessMakeChar   = 1 << 6
	accessMakeDir    = 1 << 7
	accessMakeReg    = 1 << 8
	accessMakeSock   = 1 << 9
	accessMakeFifo   = 1 << 10
	accessMakeBlock  = 1 << 11
	accessMakeSym    = 1 << 12
	accessRefer      = 1 << 13 // ABI 2: rename and link across directories
	accessTruncate   = 1 << 14 // ABI 3
	accessIoctlDev   = 1 << 15 // ABI 5: ioctl on device files

	accessABI1 = 1<<13 - 1

	// Rights a rule on a non-directory may carry; the kernel rejects the
	// directory-only ones there.
	accessFile = accessExecute | accessWriteFile | accessReadFile | accessTruncate | accessIoctlDev

	accessReadOnly = accessReadFile | accessReadDir | accessExecute
)

// handledAccess is every file system right the ABI knows, up to the ones
// this package knows: a right added later is left unhandled (allowed) until
// someone decides which rule should carry it.
func handledAccess(abi int) uint64 {
	var h uint64
	if abi >= 1 {
		h |= accessABI1
	}
	if abi >= 2 {
		h |= accessRefer
	}
	if abi >= 3 {
		h |= accessTruncate
	}
	if abi >= 5 {
		h |= accessIoctlDev
	}
	return h
}

// ruleAccess is what a rule grants beneath one path: read-only paths may be
// read and executed, read-write paths everything the ruleset handles
// (ioctl_dev too: terminals under /dev/pts need it).
func ruleAccess(handled uint64, writable, isDir bool) uint64 {
	a := handled & accessReadOnly
	if writable {
		a = handled
	}
	if !isDir {
		a &= accessFile
	}
	return a
}
