package noderpc

import (
	"errors"
	"io/fs"
	"net/http"
	"syscall"

	"github.com/airlockhq/airlock/internal/runtime"
)

// kinds are the errors a caller of the runtime tests for, by the code
// they cross the hop as. Besides the runtime's own kinds, the sandbox
// layer tells a file's missing, forbidden or full disk, and a port nothing
// listens on, by the fs and syscall errors the agent's errors match: a
// node must keep those too, or they become internal errors.
var kinds = []struct {
	code   string
	err    error
	status int // for people reading logs; the client reads the code
}{
	{"not_found", runtime.ErrNotFound, http.StatusNotFound},
	{"invalid", runtime.ErrInvalid, http.StatusBadRequest},
	{"unavailable", runtime.ErrUnavailable, http.StatusServiceUnavailable},
	{"unsupported", runtime.ErrUnsupported, http.StatusNotImplemented},
	{"conflict", runtime.ErrConflict, http.StatusConflict},
	{"pid_limit", runtime.ErrPidLimit, http.StatusTooManyRequests},
	{"changed", runtime.ErrChanged, http.StatusConflict},
	{"fs_not_exist", fs.ErrNotExist, http.StatusNotFound},
	{"fs_permission", fs.ErrPermission, http.StatusForbidden},
	{"fs_exist", fs.ErrExist, http.StatusConflict},
	{"fs_invalid", fs.ErrInvalid, http.StatusBadRequest},
	{"enotdir", syscall.ENOTDIR, http.StatusBadRequest},
	{"eisdir", syscall.EISDIR, http.StatusBadRequest},
	{"enospc", syscall.ENOSPC, http.StatusInsufficientStorage},
	{"edquot", syscall.EDQUOT, http.StatusInsufficientStorage},
	{"econnrefused", syscall.ECONNREFUSED, http.StatusBadGateway},
}

// errNoRoute is also the kind of a node's answer to a call it does not
// have (a node older than its client), which the client then makes of
// the older calls.
var errNoRoute = errors.New("no such route on the node")

// wireError is an error as it crosses the hop.
type wireError struct {
	Message    string                   `json:"message"`
	Kinds      []string                 `json:"kinds,omitempty"`
	NotRegular *runtime.NotRegularError `json:"not_regular,omitempty"`
	Range      *runtime.RangeError      `json:"range,omitempty"`
}

// toWire is the node's side of the mapping: err as it crosses, and the
// HTTP status of its first kind.
func toWire(err error) (int, *wireError) {
	w := &wireError{Message: err.Error()}
	status := http.StatusInternalServerError
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			if w.Kinds == nil {
				status = k.status
			}
			w.Kinds = append(w.Kinds, k.code)
		}
	}
	errors.As(err, &w.NotRegular)
	errors.As(err, &w.Range)
	return status, w
}

// err is the client's side: an error with the node's message that
// errors.Is every kind the node's error was, and errors.As its typed
// errors.
func (w *wireError) err() error {
	e := &remoteError{msg: w.Message}
	for _, code := range w.Kinds {
		for _, k := range kinds {
			if k.code == code {
				e.errs = append(e.errs, k.err)
			}
		}
	}
	if w.NotRegular != nil {
		e.errs = append(e.errs, w.NotRegular)
	}
	if w.Range != nil {
		e.errs = append(e.errs, w.Range)
	}
	return e
}

// remoteError is an error the node's runtime returned.
type remoteError struct {
	msg  string
	errs []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.errs }
