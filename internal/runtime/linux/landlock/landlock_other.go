//go:build !linux

package landlock

// ABI is 0: Landlock is a Linux facility.
func ABI() int { return 0 }

// Restrict returns ErrUnsupported: Landlock is a Linux facility.
func Restrict(readOnly, readWrite []string) (int, error) { return 0, ErrUnsupported }
