package runtime

import (
	"errors"
	"fmt"
)

// ErrChanged is a read of a file that changed size or was written while it
// was read: the bytes sent are not the file as it was at any one moment, so
// the read fails rather than hand over a short or mixed copy.
var ErrChanged = errors.New("file changed while it was read")

// NotRegularError is a read refused because what is at the path is not a
// regular file's bytes: a device, FIFO or socket (endless, or blocking
// forever), or a file of a kernel filesystem such as /proc or /sys, whose
// size says nothing of what a read returns. It is an ErrInvalid: the caller
// asked for something the file API does not serve.
type NotRegularError struct {
	Path string
	// What is the thing found, with its article: "a FIFO", "a file of the
	// kernel's proc filesystem".
	What string
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, e.What)
}

func (e *NotRegularError) Is(target error) bool { return target == ErrInvalid }
