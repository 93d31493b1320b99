//go:build !unix

package sandbox

import "errors"

// diskSpace cannot look on this OS: the guard refuses nothing.
func diskSpace(string) (free, total uint64, err error) {
	return 0, 0, errors.New("free disk space is not known on this OS")
}
