package linux_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/tmplver"
)

// buildTemplate commits a build sandbox that ran script as template name,
// deleted when the test ends.
func buildTemplate(t *testing.T, name, script string, info runtime.TemplateInfo) runtime.TemplateInfo {
	t.Helper()
	r := testRuntime(t)
	build := createSpec(t, runtime.Spec{Build: true})
	mustSh(t, build, script)
	info.Name = name
	got, err := r.CommitTemplate(context.Background(), build.ID(), info)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.DeleteTemplate(context.Background(), name) })
	return got
}

// TestTemplateCopy: a template's stream, cut off once, is picked up where
// the receiver's spool ends; until it is whole the copy's name shows
// nowhere; the copy keeps the record (start command, labels, time) and
// the files, and an import of a version the runtime holds is done at once.
func TestTemplateCopy(t *testing.T) {
	r := testRuntime(t)
	ctx := context.Background()
	name := fmt.Sprintf("mv-%d", os.Getpid())
	src := buildTemplate(t, name, `set -e
		mkdir -p /usr/local/bin /usr/local/share/big
		printf '#!/bin/sh\necho hello from the copy\n' > /usr/local/bin/hello
		chmod 755 /usr/local/bin/hello
		head -c 300000 /dev/urandom > /usr/local/share/big/blob
		ln /usr/local/share/big/blob /usr/local/share/big/same`,
		runtime.TemplateInfo{Description: "d", Labels: map[string]string{"k": "v"}, Start: &runtime.TemplateStart{Command: "sleep 1000"}})
	version := tmplver.Of(src)

	if err := r.ExportTemplate(ctx, "base", "x", 0, io.Discard); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("export of base: %v", err)
	}
	if err := r.ExportTemplate(ctx, name, "not-"+version, 0, io.Discard); !errors.Is(err, runtime.ErrConflict) {
		t.Errorf("export of another version: %v", err)
	}
	var whole bytes.Buffer
	if err := r.ExportTemplate(ctx, name, version, 0, &whole); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := r.ExportTemplate(ctx, name, version, 1000, &again); err != nil || !bytes.Equal(again.Bytes(), whole.Bytes()[1000:]) {
		t.Fatalf("export from an offset is not the rest of the same stream (%d bytes, %v)", again.Len(), err)
	}

	copyInfo := src
	copyInfo.Name = name + "-copy"
	t.Cleanup(func() { r.DeleteTemplate(context.Background(), copyInfo.Name) })
	cut := false
	n, resumed, err := runtime.MoveStream(ctx,
		func(off int64, w io.Writer) error {
			if !cut {
				cut = true
				if _, err := w.Write(whole.Bytes()[:whole.Len()/2]); err != nil {
					return err
				}
				// Cut off: nothing of the copy may show.
				if _, err := r.Template(ctx, copyInfo.Name); !errors.Is(err, runtime.ErrNotFound) {
					t.Errorf("the copy shows half-sent: %v", err)
				}
				return errors.New("connection reset")
			}
			return r.ExportTemplate(ctx, name, version, off, w)
		},
		func(rd io.Reader) (int64, bool, error) { return r.ImportTemplate(ctx, copyInfo, rd) })
	if err != nil || n != int64(whole.Len()) || resumed != 1 {
		t.Fatalf("move: %d bytes of %d, resumed %d times: %v", n, whole.Len(), resumed, err)
	}
	got, err := r.Template(ctx, copyInfo.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(src.CreatedAt) || got.Description != "d" || got.Labels["k"] != "v" || got.Start == nil || got.Start.Command != "sleep 1000" || got.SizeBytes != src.SizeBytes {
		t.Errorf("copy's record %+v, source's %+v", got, src)
	}
	if tmplver.Of(got) != tmplver.Of(copyInfo) {
		t.Errorf("the copy's version differs from what was sent")
	}
	use := createSpec(t, runtime.Spec{Template: copyInfo.Name})
	if out := mustSh(t, use, "hello; stat -c '%h %u' /usr/local/share/big/blob; cmp /usr/local/share/big/blob /usr/local/share/big/same && echo same"); out != "hello from the copy\n2 65534\nsame\n" {
		t.Errorf("in a sandbox on the copy: %q", out)
	}
	if have, done, err := r.ImportTemplate(ctx, copyInfo, strings.NewReader("")); err != nil || !done || have != 0 {
		t.Errorf("import of a version it holds: %d %v %v", have, done, err)
	}
	if spools, _ := filepath.Glob(filepath.Join(r.StateDir(), "templates", ".incoming-*")); len(spools) != 0 {
		t.Errorf("spools left: %v", spools)
	}
}

// tarOf writes entries (a body for regular files) as a tar stream.
func tarOf(t *testing.T, hs ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range hs {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Linkname))
		}
		body := h.Linkname
		if h.Typeflag == tar.TypeReg {
			h.Linkname = ""
		}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(body))
		}
	}
	tw.Close()
	return b.Bytes()
}

func dir(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755} }

// file is a regular file whose body is body (carried in Linkname until
// tarOf writes it).
func file(name, body string, mode int64) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Linkname: body}
}

// TestTemplateImportRefusesHostileTar: a stream that holds what no
// template holds is refused whole, and leaves nothing behind: no name, no
// directory, no spool.
func TestTemplateImportRefusesHostileTar(t *testing.T) {
	r := testRuntime(t)
	ctx := context.Background()
	layer := []*tar.Header{dir("layer/"), dir("layer/usr-local/")}
	with := func(hs ...*tar.Header) []*tar.Header { return append(append([]*tar.Header{}, layer...), hs...) }
	xattr := file("layer/usr-local/x", "x", 0o644)
	xattr.PAXRecords = map[string]string{"SCHILY.xattr.user.overlay.redirect": "/etc"}
	owned := file("layer/usr-local/x", "x", 0o644)
	owned.Uid = 1000
	cases := map[string][]*tar.Header{
		"setuid":                with(file("layer/usr-local/su", "x", 0o4755)),
		"setgid":                with(file("layer/usr-local/sg", "x", 0o2755)),
		"device":                with(&tar.Header{Name: "layer/usr-local/null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}),
		"whiteout":              with(&tar.Header{Name: "layer/usr-local/wh", Typeflag: tar.TypeChar}),
		"fifo":                  with(&tar.Header{Name: "layer/usr-local/p", Typeflag: tar.TypeFifo}),
		"outside the layer":     with(file("layer/etc-passwd", "x", 0o644)),
		"beside the tree":       with(file("template.json", "{}", 0o644)),
		"climbing out":          with(file("layer/usr-local/../../../x", "x", 0o644)),
		"absolute":              with(file("/etc/x", "x", 0o644)),
		"usr-local a symlink":   {dir("layer/"), {Name: "layer/usr-local", Typeflag: tar.TypeSymlink, Linkname: "/"}},
		"through a symlink":     with(&tar.Header{Name: "layer/usr-local/l", Typeflag: tar.TypeSymlink, Linkname: "/tmp"}, file("layer/usr-local/l/x", "x", 0o644)),
		"hard link out":         with(&tar.Header{Name: "layer/usr-local/h", Typeflag: tar.TypeLink, Linkname: "../../etc/shadow"}),
		"xattr":                 with(xattr),
		"owner other than root": with(owned),
		"no usr-local":          {dir("layer/")},
	}
	for what, hs := range cases {
		name := fmt.Sprintf("bad-%d", seq.Add(1))
		info := runtime.TemplateInfo{Name: name, From: "base", CreatedAt: time.Now().UTC().Truncate(time.Second)}
		_, done, err := r.ImportTemplate(ctx, info, bytes.NewReader(tarOf(t, hs...)))
		if err == nil || done {
			t.Errorf("%s: imported (done %v)", what, done)
			r.DeleteTemplate(ctx, name)
			continue
		}
		if _, terr := r.Template(ctx, name); !errors.Is(terr, runtime.ErrNotFound) {
			t.Errorf("%s: the template shows after a refused import: %v", what, terr)
		}
		if left, _ := filepath.Glob(filepath.Join(r.StateDir(), "templates", "*"+name+"*")); len(left) != 0 {
			t.Errorf("%s: left %v", what, left)
		}
		if left, _ := filepath.Glob(filepath.Join(r.StateDir(), "templates", "."+name+"@*")); len(left) != 0 {
			t.Errorf("%s: left %v", what, left)
		}
	}
	if _, err := os.Stat("/etc/x"); err == nil {
		t.Error("an absolute entry was written to the host")
	}
	// An image's root whose mount points are symlinks gets them as
	// directories, as an import from a registry would.
	name := fmt.Sprintf("img-%d", seq.Add(1))
	info := runtime.TemplateInfo{Name: name, From: "image", Image: "file:x.tar", CreatedAt: time.Now().UTC().Truncate(time.Second)}
	t.Cleanup(func() { r.DeleteTemplate(context.Background(), name) })
	_, done, err := r.ImportTemplate(ctx, info, bytes.NewReader(tarOf(t, dir("rootfs/"),
		&tar.Header{Name: "rootfs/proc", Typeflag: tar.TypeSymlink, Linkname: "/"},
		&tar.Header{Name: "rootfs/tmp", Typeflag: tar.TypeSymlink, Linkname: "../../../"})))
	if err != nil || !done {
		t.Fatalf("import of an image's root: %v %v", done, err)
	}
	for _, m := range []string{"proc", "tmp", "etc", "home/user"} {
		fi, err := os.Lstat(filepath.Join(r.StateDir(), "templates", name, "rootfs", m))
		if err != nil || !fi.IsDir() {
			t.Errorf("mount point /%s of the imported root: %v %v", m, fi, err)
		}
	}
}
