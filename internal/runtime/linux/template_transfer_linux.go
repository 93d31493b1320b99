package linux

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/images"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/quota"
	"github.com/airlockhq/airlock/internal/runtime/tmplver"
)

// A template moves to a node that lacks it as a tar of its one tree
// (layer/ of a built template, rootfs/ of an image's), its record carried
// beside the stream, never in it. The receiver spools the stream
// (templates/.incoming-NAME@VERSION.tar), resumed where it broke off,
// unpacks it into a fresh build directory through open parents, refusing
// what no template holds, and points the name at it only once it is whole
// (installTemplate): a sandbox never sees half a template.

var _ runtime.TemplateMover = (*Runtime)(nil)

// templateTree is the directory of a template's build directory that
// holds its files.
func templateTree(t runtime.TemplateInfo) string {
	if t.Image != "" {
		return imageRootfs
	}
	return "layer"
}

// ExportTemplate writes template name's tree from offset on.
func (r *Runtime) ExportTemplate(ctx context.Context, name, version string, offset int64, w io.Writer) error {
	if err := validTemplateName(name); err != nil {
		return err // base is every host's own
	}
	dirName, err := r.resolveTemplate(name)
	if err != nil {
		return err
	}
	t, err := r.readTemplate(dirName)
	if err != nil {
		return fmt.Errorf("read template %s: %w", name, err)
	}
	if v := tmplver.Of(t); v != version {
		return fmt.Errorf("%w: template %s was replaced (version %s, not %s)", runtime.ErrConflict, name, v, version)
	}
	tree := templateTree(t)
	// Owners as they are: root's in a built layer, the image's own in a
	// rootfs (all of uid_t, so none is turned into nobody).
	err = exportTar(func(w io.Writer) error {
		return quota.WriteTar(filepath.Join(r.templatesDir(), dirName, tree), tree+"/", w, 0, math.MaxUint32)
	}, offset, w)
	if err != nil {
		return fmt.Errorf("export template %s: %w", name, err)
	}
	return nil
}

// importing serializes imports of one template name in this process: two
// streams must not append to one spool.
var importing = struct {
	mu    sync.Mutex
	names map[string]*sync.Mutex
}{names: map[string]*sync.Mutex{}}

func lockImport(dir, name string) func() {
	importing.mu.Lock()
	m, ok := importing.names[dir+"/"+name]
	if !ok {
		m = &sync.Mutex{}
		importing.names[dir+"/"+name] = m
	}
	importing.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// ImportTemplate spools rd and, once the stream is whole, installs t from
// it.
func (r *Runtime) ImportTemplate(ctx context.Context, t runtime.TemplateInfo, rd io.Reader) (int64, bool, error) {
	if err := validTemplateName(t.Name); err != nil {
		return 0, false, err
	}
	if t.CreatedAt.IsZero() {
		return 0, false, fmt.Errorf("%w: template %s: a copy keeps its creation time, and none was given", runtime.ErrInvalid, t.Name)
	}
	t.Nodes = nil
	version := tmplver.Of(t)
	defer lockImport(r.templatesDir(), t.Name)()
	if have, err := r.Template(ctx, t.Name); err == nil && tmplver.Of(have) == version {
		return 0, true, nil
	}
	spool := filepath.Join(r.templatesDir(), ".incoming-"+t.Name+"@"+version+".tar")
	r.dropSpools(t.Name, spool)
	have, whole, err := spoolTar(spool, rd)
	if err != nil || !whole {
		return have, false, err
	}
	defer os.Remove(spool)
	tree := templateTree(t)
	_, err = r.installTemplate(t, func(dir string, t runtime.TemplateInfo) (runtime.TemplateInfo, error) {
		f, err := os.Open(spool)
		if err != nil {
			return t, err
		}
		defer f.Close()
		if err := quota.ReadTarChecked(f, dir, templateEntry(tree)); err != nil {
			return t, fmt.Errorf("%w: %v", runtime.ErrInvalid, err)
		}
		return t, checkTemplateTree(dir, tree)
	})
	if err != nil {
		return 0, false, fmt.Errorf("import template %s: %w", t.Name, err)
	}
	return have, true, nil
}

// dropSpools removes what earlier transfers of other versions of name
// left behind.
func (r *Runtime) dropSpools(name, keep string) {
	old, _ := filepath.Glob(filepath.Join(r.templatesDir(), ".incoming-"+name+"@*.tar"))
	for _, p := range old {
		if p != keep {
			os.Remove(p)
		}
	}
}

// templateEntry refuses, beyond quota.ReadTar's guards (no entry outside
// the root, none through a symlink), what no template of this runtime
// holds: an entry outside its tree, setuid or setgid bits (a template's
// files belong to host root or the image's ids), devices and whiteouts,
// xattrs (user.overlay.* would steer the overlay a sandbox mounts the
// template in), owners other than root in a built layer (which
// copyLayer makes root's alone), and a tree root or a built layer's
// usr-local that is not a directory (the init mounts onto them: a
// symlink there would land outside the template).
func templateEntry(tree string) func(h *tar.Header) error {
	return func(h *tar.Header) error {
		name := path.Clean(h.Name)
		if name != tree && !strings.HasPrefix(name, tree+"/") {
			return fmt.Errorf("outside the template's %s/", tree)
		}
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeReg, tar.TypeSymlink, tar.TypeLink:
		default:
			return fmt.Errorf("entry type %q, which a template never holds", h.Typeflag)
		}
		if (name == tree || name == layerUsrLocal) && h.Typeflag != tar.TypeDir {
			return errors.New("not a directory")
		}
		if tree == "layer" && name != tree && name != layerUsrLocal && !strings.HasPrefix(name, layerUsrLocal+"/") {
			return fmt.Errorf("a built template's layer holds %s only", layerUsrLocal)
		}
		if h.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			return errors.New("setuid or setgid bits")
		}
		for k := range h.PAXRecords {
			if strings.HasPrefix(k, "SCHILY.xattr.") {
				return errors.New("an xattr")
			}
		}
		if h.Uid < 0 || h.Gid < 0 || tree == "layer" && (h.Uid != 0 || h.Gid != 0) {
			return fmt.Errorf("owner %d:%d", h.Uid, h.Gid)
		}
		return nil
	}
}

// checkTemplateTree checks what the stream made as a whole: the tree is
// there, and an image's root has its mount points as real directories.
func checkTemplateTree(dir, tree string) error {
	if tree == imageRootfs {
		return images.MakeMountPoints(filepath.Join(dir, tree))
	}
	fi, err := os.Lstat(filepath.Join(dir, layerUsrLocal))
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: the stream holds no %s directory", runtime.ErrInvalid, layerUsrLocal)
	}
	return nil
}
