package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// pullImage reads src.Ref's manifest (the one for plat, if the reference
// names an index) and config from the registry.
func pullImage(ctx context.Context, src Source, plat v1.Platform) (*image, error) {
	var nopts []name.Option
	if src.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	ref, err := name.ParseReference(src.Ref, nopts...)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w: %w", src.Ref, errdefs.ErrInvalid, err)
	}
	img, err := remote.Image(ref,
		remote.WithContext(ctx),
		remote.WithTransport(&schemeGuard{next: src.Transport, insecure: src.Insecure}),
		remote.WithAuth(credentials(src)),
		remote.WithPlatform(plat),
		remote.WithUserAgent("airlock"),
	)
	if err != nil {
		return nil, registryError(src.Ref, err)
	}
	out, err := fromRemote(ctx, src.Ref, img)
	if err != nil {
		return nil, registryError(src.Ref, err)
	}
	return out, nil
}

// credentials never falls back to a keychain: the host's docker config
// belongs to the host, not to whoever asked for this import.
func credentials(src Source) authn.Authenticator {
	switch {
	case src.Username != "":
		return &authn.Basic{Username: src.Username, Password: src.Password}
	case src.Password != "":
		return &authn.Bearer{Token: src.Password}
	}
	return authn.Anonymous
}

// fromRemote checks that img is a container image and lists its layers.
func fromRemote(ctx context.Context, ref string, img v1.Image) (*image, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	// A tag's manifest cannot be checked against anything, but the config
	// it names can. Read it as a blob, bounded, so that a bad one is
	// reported as a digest mismatch like a bad layer.
	if m.Config.Size > maxSmallBlob {
		return nil, fmt.Errorf("%w: config is %d bytes, over the %d-byte limit", ErrNotImage, m.Config.Size, maxSmallBlob)
	}
	cl, err := partial.ConfigLayer(img)
	if err != nil {
		return nil, err
	}
	rc, err := cl.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	br := &blobReader{ctx: ctx, r: rc, h: sha256.New(), want: m.Config.Digest, size: m.Config.Size, report: func() {}}
	rawCfg, err := io.ReadAll(br)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", m.Config.Digest, err)
	}
	cfg, err := parseConfig(rawCfg, m.Config)
	if err != nil {
		return nil, err
	}
	layers, err := manifestLayers(m, cfg)
	if err != nil {
		return nil, err
	}
	for i := range layers {
		l, err := img.LayerByDigest(layers[i].digest)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", layers[i].digest, err)
		}
		size := layers[i].size
		layers[i].open = func() (io.ReadCloser, int64, error) {
			rc, err := l.Compressed()
			if err != nil {
				return nil, 0, registryError(ref, err)
			}
			return rc, size, nil
		}
	}
	raw, err := img.RawManifest()
	if err != nil {
		return nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	return &image{digest: digest.String(), config: cfg, layers: layers,
		raw: &rawImage{manifest: raw, mediaType: mt, config: rawCfg, configDigest: m.Config.Digest}}, nil
}

// parseConfig verifies a config blob against the descriptor that names it
// and parses it.
func parseConfig(raw []byte, desc v1.Descriptor) (*v1.ConfigFile, error) {
	if desc.MediaType != "" && !desc.MediaType.IsConfig() {
		return nil, fmt.Errorf("%w: config media type %s", ErrNotImage, desc.MediaType)
	}
	if err := verifyBlob(raw, desc); err != nil {
		return nil, fmt.Errorf("config %s: %w", desc.Digest, err)
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", desc.Digest, err)
	}
	return cfg, nil
}

// verifyBlob checks a small blob read whole against its descriptor.
func verifyBlob(raw []byte, desc v1.Descriptor) error {
	got, n, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if got != desc.Digest || n != desc.Size {
		return fmt.Errorf("%w: %d bytes hashing to %s, descriptor says %d bytes", ErrDigestMismatch, n, got, desc.Size)
	}
	return nil
}

// manifestLayers lists m's layers with the diff IDs cfg gives them; open
// is left for the caller.
func manifestLayers(m *v1.Manifest, cfg *v1.ConfigFile) ([]layerBlob, error) {
	if !m.MediaType.IsImage() && m.MediaType != "" {
		return nil, fmt.Errorf("%w: manifest media type %s", ErrNotImage, m.MediaType)
	}
	if len(m.Layers) != len(cfg.RootFS.DiffIDs) {
		return nil, fmt.Errorf("%w: manifest has %d layers, config %d diff_ids", ErrNotImage, len(m.Layers), len(cfg.RootFS.DiffIDs))
	}
	layers := make([]layerBlob, len(m.Layers))
	for i, d := range m.Layers {
		if d.MediaType != "" && !d.MediaType.IsLayer() {
			return nil, fmt.Errorf("%w: layer %s has media type %s", ErrNotImage, d.Digest, d.MediaType)
		}
		if d.Digest.Algorithm != "sha256" {
			return nil, fmt.Errorf("%w: layer digest %s is not sha256", ErrNotImage, d.Digest)
		}
		layers[i] = layerBlob{digest: d.Digest, diffID: cfg.RootFS.DiffIDs[i], size: d.Size}
	}
	return layers, nil
}

// schemeGuard refuses plain http unless the source allows it. The
// registry client picks http by itself for loopback and private addresses
// (and may be sent to an http token realm), which an import must not do
// unasked: a sandbox's root would then come over an unauthenticated wire.
type schemeGuard struct {
	next     http.RoundTripper
	insecure bool
}

func (g *schemeGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !g.insecure {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("refusing plain %s to %s: the source is not Insecure", req.URL.Scheme, req.URL.Host)
	}
	return g.next.RoundTrip(req)
}
