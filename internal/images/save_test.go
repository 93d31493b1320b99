package images

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// TestSaveThenImport: an image pulled by Save into an OCI layout tar and
// imported from that file is the image imported from the registry: the
// same tree, the same manifest digest. A file is no source to save, and
// an image over the size bound is refused before any layer is read.
func TestSaveThenImport(t *testing.T) {
	dst := newDst(t)
	img := imageOf(t, fixtureLayers(t)...)
	ref := push(t, startRegistry(t, nil), "fixture", img, nil)
	file := filepath.Join(t.TempDir(), "saved.tar")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	var layers int
	digest, err := Save(context.Background(), registrySource(t, ref), f, func(p Progress) {
		if p.Done {
			layers++
		}
	})
	f.Close()
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	want, _ := img.Digest()
	if digest != want.String() || layers != len(fixtureLayers(t)) {
		t.Errorf("Save: digest %s (want %s), %d layers reported done", digest, want, layers)
	}
	cfg, err := Import(context.Background(), Source{File: file}, dst, nil)
	if err != nil {
		t.Fatalf("Import of the saved file: %v", err)
	}
	if diff := cmp.Diff(fixtureWant, snapshot(t, dst)); diff != "" {
		t.Errorf("root filesystem (-want +got):\n%s", diff)
	}
	if cfg.Digest != want.String() {
		t.Errorf("imported digest %s, want %s", cfg.Digest, want)
	}
	if _, err := Save(context.Background(), Source{File: file}, f, nil); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("Save of a file: %v", err)
	}
	src := registrySource(t, ref)
	src.MaxBytes = 10
	if _, err := Save(context.Background(), src, f, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Save past MaxBytes: %v", err)
	}
}
