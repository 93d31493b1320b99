package images

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// Save pulls src.Ref (the manifest for the platform, its config and its
// layers, each checked against its digest as it streams) and writes it to
// w as a tar of an OCI image layout, which Import reads as a File. So a
// host whose egress rules reach the registry fetches an image for a host
// that reaches nothing: the bytes are checked again where they are
// flattened. It returns the manifest digest, as Import's Config has it.
func Save(ctx context.Context, src Source, w io.Writer, progress func(Progress)) (string, error) {
	if src.Ref == "" {
		return "", fmt.Errorf("save image: %w: no reference", errdefs.ErrInvalid)
	}
	plat, err := src.check()
	if err != nil {
		return "", err
	}
	img, err := pullImage(ctx, src, plat)
	if err != nil {
		return "", err
	}
	if err := checkPlatform(img.config, plat); err != nil {
		return "", err
	}
	var stored int64
	for _, l := range img.layers {
		stored += l.size
	}
	if src.MaxBytes > 0 && stored > src.MaxBytes {
		return "", fmt.Errorf("%w: its layers are %d bytes, over the %d-byte limit", ErrTooLarge, stored, src.MaxBytes)
	}
	tw := tar.NewWriter(w)
	index, _ := json.Marshal(v1.IndexManifest{SchemaVersion: 2, Manifests: []v1.Descriptor{{
		MediaType: img.raw.mediaType, Size: int64(len(img.raw.manifest)), Digest: v1.Hash{Algorithm: "sha256", Hex: sha256Hex(img.raw.manifest)},
	}}})
	small := []struct {
		name string
		b    []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{"blobs/sha256/" + sha256Hex(img.raw.manifest), img.raw.manifest},
		{blobPath(img.raw.configDigest), img.raw.config},
	}
	for _, f := range small {
		if err := writeMember(tw, f.name, int64(len(f.b)), bytes.NewReader(f.b)); err != nil {
			return "", err
		}
	}
	for i, l := range img.layers {
		if err := saveLayer(ctx, tw, l, i+1, len(img.layers), progress); err != nil {
			return "", fmt.Errorf("layer %s (%d of %d): %w", l.id(), i+1, len(img.layers), err)
		}
	}
	return img.digest, tw.Close()
}

// saveLayer copies one layer's stored bytes into the layout, verified.
func saveLayer(ctx context.Context, tw *tar.Writer, l layerBlob, n, of int, progress func(Progress)) error {
	br, report, err := openLayer(ctx, l, n, of, progress)
	if err != nil {
		return err
	}
	defer br.close()
	if err := writeMember(tw, blobPath(l.digest), br.size, br); err != nil {
		return err
	}
	if err := br.finish(); err != nil {
		return err
	}
	report(true)
	return nil
}

func writeMember(tw *tar.Writer, name string, size int64, r io.Reader) error {
	h := &tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, r, size); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func sha256Hex(b []byte) string {
	h, _, _ := v1.SHA256(bytes.NewReader(b))
	return h.Hex
}

// DialTransport is the registry transport of a pull whose every
// connection dial makes (the caller's egress rules): no proxy from the
// environment, no host credentials.
func DialTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error)) http.RoundTripper {
	return &http.Transport{DialContext: dial, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 30 * time.Second, ResponseHeaderTimeout: 60 * time.Second}
}
