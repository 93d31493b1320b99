//go:build !linux

package images

import (
	"context"
	"errors"
	"fmt"
)

// flatten needs Linux: it resolves every path with *at calls and
// O_NOFOLLOW semantics this package only relies on there.
func flatten(context.Context, *image, string, int64, func(Progress)) (int64, error) {
	return 0, fmt.Errorf("flatten image: %w: needs Linux", errors.ErrUnsupported)
}
