// Package errdefs holds the error kinds the domain packages (sandbox and
// the live work in a sandbox) wrap their errors in with %w, so that one
// kind is one value whichever package raised it. The API maps each kind to
// one HTTP status, in one function. It holds nothing but the kinds and
// Sentinel, and must never import another package of Airlock.
package errdefs

import "errors"

// The kinds; sandbox re-exports each under its own name.
var (
	ErrNotFound      = errors.New("not found")
	ErrInvalid       = errors.New("invalid argument")
	ErrConflict      = errors.New("conflict")
	ErrLimitExceeded = errors.New("limit exceeded")
	ErrUnavailable   = errors.New("unavailable")
	// ErrForbidden: a caller who is who it says but may not do this (a
	// sandbox token deciding an approval).
	ErrForbidden = errors.New("forbidden")
	// ErrUnauthenticated: a credential that does not open (a node's join
	// token).
	ErrUnauthenticated = errors.New("unauthenticated")
)

// Sentinel is a package's own sentinel error: its text is msg, and it is
// also of kind under errors.Is, so the API maps it to kind's status
// without knowing the package (images.ErrNotFound, store.ErrConflict).
func Sentinel(msg string, kind error) error { return &sentinel{msg, kind} }

type sentinel struct {
	msg  string
	kind error
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Unwrap() error { return e.kind }
