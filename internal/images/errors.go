package images

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// The errors Import wraps with %w. Each also wraps one errdefs kind, so the
// API maps them to a status without knowing this package.
var (
	// ErrNoTransport: a registry source without a Transport.
	ErrNoTransport error = errdefs.Sentinel("no Transport: registry requests must go through the caller's egress transport", errdefs.ErrInvalid)
	// ErrUnauthorized: the registry refused the credentials (or their absence).
	ErrUnauthorized error = errdefs.Sentinel("registry authentication failed", errdefs.ErrUnauthenticated)
	// ErrNotFound: no such repository, tag or digest in the registry.
	ErrNotFound error = errdefs.Sentinel("image not found", errdefs.ErrNotFound)
	// ErrDigestMismatch: stored bytes that are not what their digest names.
	ErrDigestMismatch error = errdefs.Sentinel("digest mismatch", errdefs.ErrInvalid)
	// ErrUnsafePath: a tar entry that would write outside the root, or
	// through a symlink.
	ErrUnsafePath error = errdefs.Sentinel("unsafe path", errdefs.ErrInvalid)
	// ErrTooLarge: an image past Source.MaxBytes.
	ErrTooLarge error = errdefs.Sentinel("image too large", errdefs.ErrLimitExceeded)
	// ErrNotImage: a manifest, config or layer that is not a container
	// image's (a Helm chart, an attestation, schema 1).
	ErrNotImage error = errdefs.Sentinel("not a container image", errdefs.ErrInvalid)
)

// registryError gives a registry's refusal its kind, keeping the
// registry's own words after it.
func registryError(ref string, err error) error {
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("pull %s: %w: %w", ref, ErrUnauthorized, err)
		case http.StatusNotFound:
			return fmt.Errorf("pull %s: %w: %w", ref, ErrNotFound, err)
		}
	}
	return fmt.Errorf("pull %s: %w", ref, err)
}
