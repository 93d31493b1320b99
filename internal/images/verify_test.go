package images

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// corruptBlob serves blob h with one byte changed at offset at (from
// the end when negative), as a broken mirror or a tampering proxy would.
func corruptBlob(h v1.Hash, at int) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+h.String()) {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			i := at
			if i < 0 {
				i += len(body)
			}
			body[i] ^= 0xff
			maps.Copy(w.Header(), rec.Header())
			w.WriteHeader(rec.Code)
			w.Write(body)
		})
	}
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

func TestImportCorruptBlob(t *testing.T) {
	img := imageOf(t, fixtureLayers(t)...)
	layers, _ := img.Layers()
	digest := func(i int) v1.Hash { d, _ := layers[i].Digest(); return d }
	size := func(i int) int { s, _ := layers[i].Size(); return int(s) }
	configDigest, _ := img.ConfigName()

	tests := []struct {
		name string
		blob v1.Hash
		at   int
	}{
		// gzip fails before the blob's end here; the error must still
		// name the digest, not the decompressor's complaint.
		{"gzip layer, middle byte", digest(1), size(1) / 2},
		{"gzip layer, first byte", digest(0), 0},
		{"gzip layer, last byte", digest(0), -1},
		{"zstd layer, middle byte", digest(2), size(2) / 2},
		{"config", configDigest, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := newDst(t)
			ref := push(t, startRegistry(t, corruptBlob(tt.blob, tt.at)), "corrupt", img, nil)
			_, err := Import(context.Background(), registrySource(t, ref), dst, nil)
			t.Logf("error: %v", err)
			if !errors.Is(err, ErrDigestMismatch) || !contains(err, "digest mismatch") || !contains(err, tt.blob.String()) {
				t.Fatalf("Import of a corrupt blob: %v, want a digest mismatch naming %s", err, tt.blob)
			}
			mustNotExist(t, dst)
		})
	}
}

func TestImportDiffIDMismatch(t *testing.T) {
	dst := newDst(t)
	img := withDiffID(t, imageOf(t, fixtureLayers(t)...), 2)
	ref := push(t, startRegistry(t, nil), "diffid", img, nil)
	_, err := Import(context.Background(), registrySource(t, ref), dst, nil)
	t.Logf("error: %v", err)
	layers, _ := img.Layers()
	d, _ := layers[2].Digest()
	if !errors.Is(err, ErrDigestMismatch) || !contains(err, d.String()) || !contains(err, "diff_id") {
		t.Fatalf("Import with a wrong diff_id: %v, want a digest mismatch naming layer %s", err, d)
	}
	mustNotExist(t, dst)
}

func TestImportMaxBytes(t *testing.T) {
	img := imageOf(t, fixtureLayers(t)...)
	ref := push(t, startRegistry(t, nil), "big", img, nil)
	// A bomb: 1 MiB of zeros, which gzip stores in about a KiB.
	bomb := imageOf(t, layerOf(t, false, entry{name: "zeros", body: strings.Repeat("\x00", 1<<20), mode: 0o644}))
	bombRef := push(t, startRegistry(t, nil), "bomb", bomb, nil)

	tests := []struct {
		name     string
		ref      string
		maxBytes int64
		wantErr  bool
	}{
		{"under", ref, 1 << 20, false},
		{"no limit", ref, 0, false},
		{"over", ref, 2048, true},
		{"compressed small, uncompressed over", bombRef, 512 << 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := newDst(t)
			src := registrySource(t, tt.ref)
			src.MaxBytes = tt.maxBytes
			_, err := Import(context.Background(), src, dst, nil)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Import: %v", err)
				}
				return
			}
			t.Logf("error: %v", err)
			if !errors.Is(err, ErrTooLarge) || !errors.Is(err, errdefs.ErrLimitExceeded) {
				t.Fatalf("Import over MaxBytes: %v, want ErrTooLarge", err)
			}
			mustNotExist(t, dst)
		})
	}
}

// TestImportMissingBlob: a registry that lost a layer fails the import
// after earlier layers were written, and they are removed.
func TestImportMissingBlob(t *testing.T) {
	dst := newDst(t)
	img := imageOf(t, fixtureLayers(t)...)
	layers, _ := img.Layers()
	lost, _ := layers[2].Digest()
	host := startRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+lost.String()) {
				http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown"}]}`, http.StatusNotFound)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	ref := push(t, host, "lost", img, nil)
	_, err := Import(context.Background(), registrySource(t, ref), dst, nil)
	t.Logf("error: %v", err)
	if !errors.Is(err, ErrNotFound) || !contains(err, lost.String()) {
		t.Fatalf("Import with a lost blob: %v, want ErrNotFound naming %s", err, lost)
	}
	mustNotExist(t, dst)
}
