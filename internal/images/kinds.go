package images

import (
	"errors"
	"fmt"

	"github.com/airlockhq/airlock/internal/runtime"
)

// The runtime's view of this package: error kinds and progress.

// AsRuntimeError gives an import's or a save's failure the runtime's
// error kinds (this package's errors match errdefs kinds, which the
// runtime's are not): what the image or its source got wrong is
// invalid, a missing image not found, the rest unavailable.
func AsRuntimeError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w: %v", runtime.ErrNotFound, err)
	case errors.Is(err, ErrUnauthorized), errors.Is(err, ErrDigestMismatch), errors.Is(err, ErrUnsafePath),
		errors.Is(err, ErrTooLarge), errors.Is(err, ErrNotImage), errors.Is(err, ErrNoTransport):
		return fmt.Errorf("%w: %v", runtime.ErrInvalid, err)
	}
	return fmt.Errorf("%w: %v", runtime.ErrUnavailable, err)
}

// ReportTo hands an import's or a save's progress to a runtime's
// progress function (nil for none).
func ReportTo(progress func(runtime.ImageProgress)) func(Progress) {
	if progress == nil {
		return nil
	}
	return func(p Progress) {
		progress(runtime.ImageProgress{Layer: p.Layer, Layers: p.Layers, Digest: p.Digest, Bytes: p.Bytes, Total: p.Total, Done: p.Done})
	}
}
