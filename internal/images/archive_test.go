package images

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// saveTarball writes img as `docker save` does.
func saveTarball(t testing.TB, img v1.Image) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "docker-save.tar")
	tag, err := name.NewTag("example.com/fixture:latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(p, tag, img); err != nil {
		t.Fatalf("docker save: %v", err)
	}
	return p
}

// writeLayout writes img (or an index) as an OCI image layout directory.
func writeLayout(t testing.TB, img any) string {
	t.Helper()
	dir := t.TempDir()
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	switch v := img.(type) {
	case v1.Image:
		err = lp.AppendImage(v)
	case v1.ImageIndex:
		err = lp.AppendIndex(v)
	}
	if err != nil {
		t.Fatalf("write layout: %v", err)
	}
	return dir
}

// tarDir tars a directory's content, as `tar -C dir -cf out .` does.
func tarDir(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "oci-layout.tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestImportArchives(t *testing.T) {
	img := imageOf(t, fixtureLayers(t)...)
	manifestDigest, _ := img.Digest()
	configDigest, _ := img.ConfigName()
	multi := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: withPlatform(t, imageOf(t, layerOf(t, false, fileE("decoy", "", 0o644))), "linux", "arm64"),
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	)

	tests := []struct {
		name       string
		src        Source
		wantDigest v1.Hash
	}{
		{"registry", registrySource(t, push(t, startRegistry(t, nil), "fixture", img, nil)), manifestDigest},
		// docker save has no manifest: the digest is the image ID.
		{"docker save", Source{File: saveTarball(t, img)}, configDigest},
		{"OCI layout", Source{File: tarDir(t, writeLayout(t, img))}, manifestDigest},
		{"OCI layout with a multi-platform index", Source{File: tarDir(t, writeLayout(t, multi)), Platform: "linux/amd64"}, manifestDigest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := newDst(t)
			cfg, err := Import(context.Background(), tt.src, dst, nil)
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if diff := cmp.Diff(fixtureWant, snapshot(t, dst)); diff != "" {
				t.Errorf("root filesystem (-want +got):\n%s", diff)
			}
			want := Config{
				Env: testRunConfig.Env, WorkingDir: "/srv", User: "33:33",
				Entrypoint: testRunConfig.Entrypoint, Cmd: testRunConfig.Cmd,
				Digest: tt.wantDigest.String(), Size: fixtureSize(),
			}
			if diff := cmp.Diff(want, cfg); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImportArchiveCorrupt(t *testing.T) {
	img := imageOf(t, fixtureLayers(t)...)
	layers, _ := img.Layers()
	layerDigest, _ := layers[1].Digest()
	configDigest, _ := img.ConfigName()

	// flipInLayout corrupts one blob of an OCI layout before it is tarred.
	flipInLayout := func(t testing.TB, h v1.Hash) string {
		dir := writeLayout(t, img)
		flipByte(t, filepath.Join(dir, "blobs", h.Algorithm, h.Hex))
		return tarDir(t, dir)
	}
	tests := []struct {
		name     string
		file     func(t testing.TB) string
		wantErr  error
		wantText string
	}{
		{"OCI layout, layer byte flipped", func(t testing.TB) string { return flipInLayout(t, layerDigest) }, ErrDigestMismatch, layerDigest.String()},
		{"OCI layout, config byte flipped", func(t testing.TB) string { return flipInLayout(t, configDigest) }, ErrDigestMismatch, configDigest.String()},
		{"docker save, diff_id wrong", func(t testing.TB) string { return saveTarball(t, withDiffID(t, img, 1)) }, ErrDigestMismatch, "diff_id"},
		{"not an image", func(t testing.TB) string { return tarDir(t, t.TempDir()) }, ErrNotImage, "neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := newDst(t)
			_, err := Import(context.Background(), Source{File: tt.file(t)}, dst, nil)
			t.Logf("error: %v", err)
			if !errors.Is(err, tt.wantErr) || !contains(err, tt.wantText) {
				t.Fatalf("Import: %v, want %v naming %q", err, tt.wantErr, tt.wantText)
			}
			mustNotExist(t, dst)
		})
	}
}

// flipByte inverts the byte in the middle of a file.
func flipByte(t testing.TB, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// withDiffID gives layer i of img a diff_id no content has.
func withDiffID(t testing.TB, img v1.Image, i int) v1.Image {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.RootFS.DiffIDs[i] = v1.Hash{Algorithm: "sha256", Hex: "0000000000000000000000000000000000000000000000000000000000000000"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
