// Package netns runs code inside another network namespace on a locked OS
// thread and comes back. It owns the thread switching, nothing else: it never
// creates links, addresses or routes beyond bringing lo up, and it must never
// return a thread to the Go scheduler in a namespace other than the one the
// thread started in — a goroutine scheduled there later would silently talk
// to the wrong network.
package netns

import (
	"errors"
	"fmt"
)

// ErrUnsupported is returned on systems without network namespaces.
var ErrUnsupported = fmt.Errorf("network namespaces: %w", errors.ErrUnsupported)
