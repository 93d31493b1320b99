package images

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// maxIndexDepth bounds nested indexes in an OCI layout.
const maxIndexDepth = 4

// openArchive reads an image archive's manifest and config. A tar holding
// an OCI layout is read as one even when it also has docker's
// manifest.json (docker 25 and later write both): the layout names every
// blob by digest, so more of it can be checked.
func openArchive(ctx context.Context, file string, plat v1.Platform) (*image, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a := tarArchive{path: file}
	names, err := a.names()
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", file, err)
	}
	switch {
	case names["oci-layout"] && names["index.json"]:
		img, err := layoutImage(a, plat)
		if err != nil {
			return nil, fmt.Errorf("open OCI layout %s: %w", file, err)
		}
		return img, nil
	case names["manifest.json"]:
		img, err := dockerSaveImage(a)
		if err != nil {
			return nil, fmt.Errorf("open docker save tarball %s: %w", file, err)
		}
		return img, nil
	}
	return nil, fmt.Errorf("open %s: %w: neither an OCI layout (oci-layout, index.json) nor a docker save tarball (manifest.json)", file, ErrNotImage)
}

// layoutImage picks plat's manifest from an OCI layout's index.json.
func layoutImage(a tarArchive, plat v1.Platform) (*image, error) {
	raw, err := a.readSmall("index.json")
	if err != nil {
		return nil, err
	}
	idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	desc, err := pickManifest(a, idx, plat, 0)
	if err != nil {
		return nil, err
	}
	rawM, err := readBlob(a, *desc)
	if err != nil {
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(rawM))
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	rawC, err := readBlob(a, m.Config)
	if err != nil {
		return nil, err
	}
	cfg, err := parseConfig(rawC, m.Config)
	if err != nil {
		return nil, err
	}
	layers, err := manifestLayers(m, cfg)
	if err != nil {
		return nil, err
	}
	for i := range layers {
		member := blobPath(layers[i].digest)
		layers[i].open = func() (io.ReadCloser, int64, error) { return a.open(member) }
	}
	return &image{digest: desc.Digest.String(), config: cfg, layers: layers}, nil
}

// pickManifest finds the first image manifest for plat in idx, looking
// into nested indexes. A manifest with no platform is taken as a match;
// the config's own platform is checked later.
func pickManifest(a tarArchive, idx *v1.IndexManifest, plat v1.Platform, depth int) (*v1.Descriptor, error) {
	for _, d := range idx.Manifests {
		if d.Platform != nil && !d.Platform.Satisfies(v1.Platform{OS: plat.OS, Architecture: plat.Architecture, Variant: plat.Variant}) {
			continue
		}
		switch {
		case d.MediaType.IsImage():
			return &d, nil
		case d.MediaType.IsIndex() && depth < maxIndexDepth:
			raw, err := readBlob(a, d)
			if err != nil {
				return nil, err
			}
			child, err := v1.ParseIndexManifest(bytes.NewReader(raw))
			if err != nil {
				return nil, fmt.Errorf("index %s: %w", d.Digest, err)
			}
			if found, err := pickManifest(a, child, plat, depth+1); err == nil {
				return found, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: no image manifest for %s in index", ErrNotFound, plat)
}

// blobPath is where an OCI layout keeps the blob with digest h. h was
// parsed as a sha256 digest (64 hex digits), so it cannot climb out.
func blobPath(h v1.Hash) string {
	return "blobs/" + h.Algorithm + "/" + h.Hex
}

// readBlob reads a small blob of an OCI layout and verifies it.
func readBlob(a tarArchive, desc v1.Descriptor) ([]byte, error) {
	if desc.Digest.Algorithm != "sha256" {
		return nil, fmt.Errorf("%w: digest %q is not sha256", ErrNotImage, desc.Digest)
	}
	raw, err := a.readSmall(blobPath(desc.Digest))
	if err != nil {
		return nil, err
	}
	if err := verifyBlob(raw, desc); err != nil {
		return nil, fmt.Errorf("blob %s: %w", desc.Digest, err)
	}
	return raw, nil
}

// dockerSaveImage reads a `docker save` tarball holding one image. Nothing
// in it names the config or the layer files by digest, so the tarball is
// trusted as a whole; each layer is still checked against the diff_id the
// config gives it.
func dockerSaveImage(a tarArchive) (*image, error) {
	raw, err := a.readSmall("manifest.json")
	if err != nil {
		return nil, err
	}
	var m tarball.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("%w: manifest.json lists %d images, want exactly 1", ErrNotImage, len(m))
	}
	d := m[0]
	rawC, err := a.readSmall(d.Config)
	if err != nil {
		return nil, err
	}
	digest, _, err := v1.SHA256(bytes.NewReader(rawC))
	if err != nil {
		return nil, err
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(rawC))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", d.Config, err)
	}
	if len(d.Layers) != len(cfg.RootFS.DiffIDs) {
		return nil, fmt.Errorf("%w: manifest.json has %d layers, config %d diff_ids", ErrNotImage, len(d.Layers), len(cfg.RootFS.DiffIDs))
	}
	layers := make([]layerBlob, len(d.Layers))
	for i, member := range d.Layers {
		layers[i] = layerBlob{
			diffID: cfg.RootFS.DiffIDs[i],
			size:   -1,
			open:   func() (io.ReadCloser, int64, error) { return a.open(member) },
		}
	}
	return &image{digest: digest.String(), config: cfg, layers: layers}, nil
}
