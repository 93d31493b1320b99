//go:build !linux

package seccomp

import "runtime"

// Install returns ErrUnsupported: seccomp is a Linux facility.
func Install() error { return ErrUnsupported }

// Supported reports that seccomp does not exist on this system.
func Supported() (bool, string) { return false, "seccomp needs Linux, this is " + runtime.GOOS }
