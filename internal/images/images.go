// Package images owns turning a container image (from a registry, a
// `docker save` tarball or a tar of an OCI image layout) into a flat root
// filesystem directory, and reading what the image says about how to run it.
//
// The result becomes a sandbox's read-only root, so the package treats every
// image as hostile: it never writes outside the destination directory, never
// follows a symlink while extracting, never creates device nodes or setuid
// files, applies no xattrs, and refuses content whose bytes do not match the
// digests that name them. It must never reach the network except through the
// caller's Transport, and never read the host's registry credentials.
package images

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// Source says where an image comes from: exactly one of Ref or File.
type Source struct {
	// Ref is "registry/repo:tag" or "registry/repo@sha256:...". A name
	// without a registry means Docker Hub.
	Ref string
	// File is a `docker save` tarball, or a tar of an OCI image layout
	// (oci-layout, index.json and blobs/ at its top).
	File string

	// Transport carries every registry request, token exchanges included
	// (the caller's egress proxy). It is required for Ref: nil is an error,
	// never http.DefaultTransport, so nothing reaches the network unchecked.
	Transport http.RoundTripper
	// Username and Password authenticate to registries that need it;
	// Password alone is sent as a bearer registry token. Both empty means
	// anonymous: the host's docker config is never read.
	Username, Password string
	// Insecure allows plain http to the registry. Without it every request
	// must be https, loopback and private addresses included.
	Insecure bool

	// Platform is "os/arch[/variant]", chosen from an index; "" means
	// linux and the host's architecture (linux/amd64 on amd64 hosts).
	Platform string
	// MaxBytes caps the image's total uncompressed size, all layers
	// together, and the bytes written to the destination; 0 is no limit.
	MaxBytes int64
}

// Progress reports the reading of one layer's stored (usually compressed)
// bytes. Layer counts from 1 to Layers; Total is the stored size; Done is
// set once, when the layer is verified and applied. Digest names the
// layer: its blob digest, or its diff_id in a docker save tarball, which
// has no blob digests.
type Progress struct {
	Layer, Layers int
	Bytes, Total  int64
	Digest        string
	Done          bool
}

// Config is what the image says about how to run it, and what Import made.
type Config struct {
	Env        []string
	WorkingDir string
	User       string
	Entrypoint []string
	Cmd        []string
	// Digest is the manifest digest. A `docker save` tarball has no
	// manifest, so there it is the config digest (docker's image ID).
	Digest string
	// Size is the number of file content bytes written to the destination.
	Size int64
}

// Import fetches src and flattens its layers into dst, which must not
// exist (its parent must). Import creates dst 0755 root-owned; on any error
// it removes dst, so nothing half-made is left. progress, which may be nil,
// is called from Import's goroutine as layer bytes are read, at most every
// 64 KiB and at each layer's end.
//
// Files keep the uid, gid and mtime of their tar headers (the runtime maps
// ids later) and their permissions less setuid and setgid. The directories
// the sandbox mounts onto always exist, as real directories: see
// mountPoints.
func Import(ctx context.Context, src Source, dst string, progress func(Progress)) (cfg Config, err error) {
	plat, err := src.check()
	if err != nil {
		return Config{}, err
	}
	// Fetch manifests and config first: a bad name, a refused credential
	// or the wrong platform leaves no directory behind.
	img, err := src.open(ctx, plat)
	if err != nil {
		return Config{}, err
	}
	if err := checkPlatform(img.config, plat); err != nil {
		return Config{}, err
	}

	if err := os.Mkdir(dst, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return Config{}, fmt.Errorf("import into %s: %w: it already exists", dst, errdefs.ErrConflict)
		}
		return Config{}, fmt.Errorf("import: %w", err)
	}
	defer func() {
		if err != nil {
			if rerr := os.RemoveAll(dst); rerr != nil {
				err = errors.Join(err, fmt.Errorf("remove half-made %s: %w", dst, rerr))
			}
		}
	}()
	if err := os.Chmod(dst, 0o755); err != nil { // umask may have narrowed Mkdir
		return Config{}, fmt.Errorf("import: %w", err)
	}

	written, err := flatten(ctx, img, dst, src.MaxBytes, progress)
	if err != nil {
		return Config{}, fmt.Errorf("import %s: %w", src.name(), err)
	}
	c := img.config.Config
	return Config{
		Env:        c.Env,
		WorkingDir: c.WorkingDir,
		User:       c.User,
		Entrypoint: c.Entrypoint,
		Cmd:        c.Cmd,
		Digest:     img.digest,
		Size:       written,
	}, nil
}

// check validates src and returns the platform to pick.
func (src Source) check() (v1.Platform, error) {
	switch {
	case src.Ref == "" && src.File == "":
		return v1.Platform{}, fmt.Errorf("image source: %w: neither Ref nor File is set", errdefs.ErrInvalid)
	case src.Ref != "" && src.File != "":
		return v1.Platform{}, fmt.Errorf("image source: %w: both Ref and File are set", errdefs.ErrInvalid)
	case src.Ref != "" && src.Transport == nil:
		return v1.Platform{}, fmt.Errorf("pull %s: %w", src.Ref, ErrNoTransport)
	case src.MaxBytes < 0:
		return v1.Platform{}, fmt.Errorf("image source: %w: MaxBytes %d is negative", errdefs.ErrInvalid, src.MaxBytes)
	}
	p := src.Platform
	if p == "" {
		p = "linux/" + runtime.GOARCH
	}
	plat, err := v1.ParsePlatform(p)
	if err != nil || plat.OS == "" || plat.Architecture == "" {
		return v1.Platform{}, fmt.Errorf("image source: %w: platform %q is not os/arch[/variant]", errdefs.ErrInvalid, src.Platform)
	}
	return *plat, nil
}

// name is how errors name src.
func (src Source) name() string {
	if src.Ref != "" {
		return src.Ref
	}
	return src.File
}

// open reads src's manifest and config, verified, without any layer.
func (src Source) open(ctx context.Context, plat v1.Platform) (*image, error) {
	if src.Ref != "" {
		return pullImage(ctx, src, plat)
	}
	return openArchive(ctx, src.File, plat)
}

// checkPlatform refuses an image built for another platform, which a
// single-manifest reference (or a tarball) can hand us whatever we asked.
func checkPlatform(cfg *v1.ConfigFile, want v1.Platform) error {
	if cfg.OS == "" || cfg.Architecture == "" {
		return nil // older images leave it out; nothing to check
	}
	have := v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
	if !have.Satisfies(v1.Platform{OS: want.OS, Architecture: want.Architecture, Variant: want.Variant}) {
		return fmt.Errorf("image is for %s, not %s: %w", have, want, errdefs.ErrInvalid)
	}
	return nil
}

// image is a source's manifest-level view: what to run and which blobs to
// apply, in order.
type image struct {
	digest string
	config *v1.ConfigFile
	layers []layerBlob
	raw    *rawImage // a registry's: what Save writes
}

// rawImage is an image's manifest and config as the registry sent them.
type rawImage struct {
	manifest     []byte
	mediaType    types.MediaType
	config       []byte
	configDigest v1.Hash
}
