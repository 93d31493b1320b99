//go:build !(linux && amd64)

package seccomp

// No table is built for this architecture: Install returns ErrUnsupported
// rather than guess at system call numbers.
const (
	archName  = ""
	auditArch = 0
	x32Bit    = 0x40000000
)

var table []entry
