package noderpc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/airlockhq/airlock/internal/images/imagetest"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/tmplver"
)

// cutWriter fails once it has taken left bytes, as a connection that
// breaks mid-stream does.
type cutWriter struct {
	w    io.Writer
	left int
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if len(p) > c.left {
		n, _ := c.w.Write(p[:c.left])
		c.left = 0
		return n, errors.New("connection reset")
	}
	c.left -= len(p)
	return c.w.Write(p)
}

// TestTemplateMove: a template built on one node streams to another
// through both nodes' APIs, the stream cut once on the way and resumed
// at the bytes the receiver spooled; the copy runs as the original does
// and keeps its record. An image archive crosses to a node whole, and
// the template records where it came from.
func TestTemplateMove(t *testing.T) {
	a, b := newEnv(t), newEnv(t)
	ctx := context.Background()
	build := a.create(t, a.c, runtime.Spec{Build: true})
	mustSh(t, build, `mkdir -p /usr/local/bin && printf '#!/bin/sh\necho hello from node a\n' > /usr/local/bin/hello && chmod 755 /usr/local/bin/hello && head -c 2000000 /dev/urandom > /usr/local/blob`)
	src, err := a.c.CommitTemplate(ctx, build.ID(), runtime.TemplateInfo{Name: "nrpc-mv", Labels: map[string]string{"a": "b"},
		Start: &runtime.TemplateStart{Command: "sleep 1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.Template(ctx, "nrpc-mv"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("node b has the template before the move: %v", err)
	}
	version := tmplver.Of(src)
	cuts := 0
	n, resumed, err := runtime.MoveStream(ctx,
		func(off int64, w io.Writer) error {
			if cuts == 0 {
				cuts++
				w = &cutWriter{w: w, left: 700_000}
			}
			return a.c.ExportTemplate(ctx, "nrpc-mv", version, off, w)
		},
		func(r io.Reader) (int64, bool, error) { return b.c.ImportTemplate(ctx, src, r) })
	if err != nil || resumed != 1 || n < 2_000_000 {
		t.Fatalf("move: %d bytes, resumed %d: %v", n, resumed, err)
	}
	got, err := b.c.Template(ctx, "nrpc-mv")
	if err != nil || tmplver.Of(got) != version || got.Start == nil || got.Labels["a"] != "b" {
		t.Fatalf("the copy on node b: %+v %v", got, err)
	}
	sb := b.create(t, b.c, runtime.Spec{Template: "nrpc-mv"})
	if out := mustSh(t, sb, "hello; wc -c < /usr/local/blob"); out != "hello from node a\n2000000\n" {
		t.Errorf("a sandbox on the copy: %q", out)
	}
	// The source's template replaced meanwhile: the old version is not
	// exported under its name.
	if err := a.c.ExportTemplate(ctx, "nrpc-mv", "0000", 0, io.Discard); !errors.Is(err, runtime.ErrConflict) {
		t.Errorf("export of a version the node no longer has: %v", err)
	}
	if err := a.c.DeleteTemplate(ctx, "nrpc-mv"); err != nil {
		t.Fatal(err)
	}
	if err := b.c.DeleteTemplate(ctx, "nrpc-mv"); err != nil {
		t.Fatal(err)
	}

	// An image: the file, as an upload reaches a control plane.
	file := filepath.Join(t.TempDir(), "img.tar")
	ref, _ := name.ParseReference("test/img:latest")
	if err := tarball.WriteToFile(file, ref, imagetest.Image(t)); err != nil {
		t.Fatal(err)
	}
	img, err := b.c.ImportImage(ctx, runtime.TemplateInfo{Name: "nrpc-img", Description: "from a file"}, runtime.ImageSource{File: file, FileName: "upload.tar", MaxBytes: 1 << 30}, nil)
	if err != nil || img.Image != "file:upload.tar" || img.Description != "from a file" || img.Digest == "" {
		t.Fatalf("image from a file: %+v %v", img, err)
	}
	onImg := b.create(t, b.c, runtime.Spec{Template: "nrpc-img"})
	if out := mustSh(t, onImg, "cat /etc/os-release"); out != "ID=testimage\n" {
		t.Errorf("a sandbox on the image: %q", out)
	}
	// A stream pulled elsewhere, named by its reference.
	raw, _ := os.ReadFile(file)
	img2, err := b.c.ImportImage(ctx, runtime.TemplateInfo{Name: "nrpc-img2"}, runtime.ImageSource{Archive: bytes.NewReader(raw), Origin: "registry.example/test/img:latest"}, nil)
	if err != nil || img2.Image != "registry.example/test/img:latest" {
		t.Errorf("image from a stream: %+v %v", img2, err)
	}
	// Bad input is refused, and names what is wrong.
	if _, err := b.c.ImportImage(ctx, runtime.TemplateInfo{Name: "nrpc-img3"}, runtime.ImageSource{Ref: "registry.example/x:1"}, nil); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("a reference sent to a node: %v", err)
	}
	if _, err := b.c.ImportImage(ctx, runtime.TemplateInfo{Name: "nrpc-img3"}, runtime.ImageSource{Archive: bytes.NewReader(raw), MaxBytes: 1000}, nil); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("an archive over its bound: %v", err)
	}
	if _, err := b.c.ImportImage(ctx, runtime.TemplateInfo{Name: "nrpc-img3"}, runtime.ImageSource{Archive: bytes.NewReader([]byte("not a tar"))}, nil); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("garbage for an archive: %v", err)
	}
	if spools, _ := filepath.Glob(filepath.Join(b.rt.StateDir(), ".image-*")); len(spools) != 0 {
		t.Errorf("archives left on the node: %v", spools)
	}
	for _, n := range []string{"nrpc-img", "nrpc-img2"} {
		if err := b.c.DeleteTemplate(ctx, n); err != nil {
			t.Error(err)
		}
	}
}
