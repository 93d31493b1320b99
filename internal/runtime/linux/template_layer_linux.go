package linux

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/sbinit"
)

// A built template is a layer over the base template: what its build put
// in /usr/local (npm -g, pip --prefix, make install). Sandboxes see it as a
// read-only overlay of the layer on the host's /usr/local; nothing else of
// the build sandbox is kept.
//
// On disk, templates/NAME is a symlink to templates/.NAME@RANDOM, the
// build's directory (template.json and layer/usr-local). Replacing a
// template swaps the symlink; a build directory is removed once no symlink
// and no sandbox points at it, so a running sandbox keeps the layer it
// started with.

const (
	templateMeta  = "template.json"
	layerUsrLocal = sbinit.LayerUsrLocal
	usrLocal      = sbinit.UsrLocal
	// Where a build sandbox's writable /usr/local lives in its directory.
	buildUpper = sbinit.BuildUpper
	buildWork  = sbinit.BuildWork
)

func (r *Runtime) templatesDir() string { return filepath.Join(r.cfg.StateDir, "templates") }

// validTemplateName is a sandbox-id-like name other than base.
func validTemplateName(name string) error {
	if name == "base" {
		return fmt.Errorf("%w: template name %q is reserved", runtime.ErrInvalid, name)
	}
	if !validID(name) {
		return fmt.Errorf("%w: template name %q must be 1-63 of [a-z0-9-], not starting with '-'", runtime.ErrInvalid, name)
	}
	return nil
}

// resolveTemplate returns the build directory's name (under templatesDir)
// of a built template, "" for base.
func (r *Runtime) resolveTemplate(name string) (string, error) {
	if name == "" || name == "base" {
		return "", nil
	}
	if !validID(name) {
		return "", fmt.Errorf("%w: template %q", runtime.ErrNotFound, name)
	}
	target, err := os.Readlink(filepath.Join(r.templatesDir(), name))
	if err != nil || !strings.HasPrefix(target, "."+name+"@") || strings.Contains(target, "/") {
		return "", fmt.Errorf("%w: template %q", runtime.ErrNotFound, name)
	}
	return target, nil
}

func (r *Runtime) readTemplate(dirName string) (runtime.TemplateInfo, error) {
	var t runtime.TemplateInfo
	b, err := os.ReadFile(filepath.Join(r.templatesDir(), dirName, templateMeta))
	if err != nil {
		return t, err
	}
	return t, json.Unmarshal(b, &t)
}

// Template returns the template called name.
func (r *Runtime) Template(ctx context.Context, name string) (runtime.TemplateInfo, error) {
	if name == "base" {
		return runtime.BaseTemplate, nil
	}
	dirName, err := r.resolveTemplate(name)
	if err != nil {
		return runtime.TemplateInfo{}, err
	}
	if dirName == "" { // "" names no template
		return runtime.TemplateInfo{}, fmt.Errorf("%w: template %q", runtime.ErrNotFound, name)
	}
	t, err := r.readTemplate(dirName)
	if err != nil {
		return t, fmt.Errorf("read template %s: %w", name, err)
	}
	return t, nil
}

// Templates lists base and every built template, by name.
func (r *Runtime) Templates(ctx context.Context) ([]runtime.TemplateInfo, error) {
	entries, err := os.ReadDir(r.templatesDir())
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	out := []runtime.TemplateInfo{runtime.BaseTemplate}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		dirName, err := r.resolveTemplate(e.Name())
		if err != nil {
			continue
		}
		t, err := r.readTemplate(dirName)
		if err != nil {
			return nil, fmt.Errorf("read template %s: %w", e.Name(), err)
		}
		out = append(out, t)
	}
	sort.Slice(out[1:], func(i, j int) bool { return out[1+i].Name < out[1+j].Name })
	return out, nil
}

// CommitTemplate ends the build sandbox's processes (what it wrote must
// hold still while the host's root reads it: a file swapped for a symlink
// mid-copy would otherwise copy a host file into the template), copies its
// /usr/local (its template's layer, then what the build added) into a new
// build directory owned by the host's root, and points the name at it.
// The sandbox is left to be destroyed.
func (r *Runtime) CommitTemplate(ctx context.Context, sandboxID string, t runtime.TemplateInfo) (runtime.TemplateInfo, error) {
	if err := validTemplateName(t.Name); err != nil {
		return t, err
	}
	sbi, err := r.Get(ctx, sandboxID)
	if err != nil {
		return t, err
	}
	sb := sbi.(*sandbox)
	if !sb.p.Build {
		return t, fmt.Errorf("%w: sandbox %s was not created as a template build", runtime.ErrInvalid, sandboxID)
	}
	sb.killOnce.Do(sb.killInit)
	t.From = sb.p.TemplateName
	if t.From == "" {
		t.From = "base"
	}
	return r.installTemplate(t, func(dir string, t runtime.TemplateInfo) (runtime.TemplateInfo, error) {
		layer := filepath.Join(dir, layerUsrLocal)
		if err := os.MkdirAll(layer, 0o755); err != nil {
			return t, err
		}
		links := map[[2]uint64]string{}
		if sb.p.Template != "" {
			n, err := copyLayer(ctx, filepath.Join(r.templatesDir(), sb.p.Template, layerUsrLocal), layer, links)
			if err != nil {
				return t, fmt.Errorf("copy %s's layer: %w", t.From, err)
			}
			t.SizeBytes += n
		}
		n, err := copyLayer(ctx, filepath.Join(sb.dir, buildUpper), layer, links)
		if err != nil {
			return t, fmt.Errorf("copy the build's /usr/local: %w", err)
		}
		t.SizeBytes += n
		return t, nil
	})
}

// installTemplate makes a new build directory for template t.Name, has
// fill put the template in it (and complete t), then points the name at
// it (replacing one of that name: sandboxes running on the old one keep
// it). On any error nothing of it is left.
func (r *Runtime) installTemplate(t runtime.TemplateInfo, fill func(dir string, t runtime.TemplateInfo) (runtime.TemplateInfo, error)) (runtime.TemplateInfo, error) {
	suffix := make([]byte, 6)
	rand.Read(suffix)
	dirName := "." + t.Name + "@" + hex.EncodeToString(suffix)
	dir := filepath.Join(r.templatesDir(), dirName)
	tmpLink := filepath.Join(r.templatesDir(), ".link-"+t.Name+"-"+hex.EncodeToString(suffix))
	// No name points at the new directory until the end: a collection
	// meanwhile (another sandbox's destroy, the sweep) leaves it alone.
	committing.add(dir)
	committing.add(tmpLink)
	defer committing.remove(dir)
	defer committing.remove(tmpLink)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return t, fmt.Errorf("create template dir: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	t, err := fill(dir, t)
	if err != nil {
		return t, err
	}
	if t.CreatedAt.IsZero() { // a copy from another node keeps its time
		t.CreatedAt = time.Now().UTC().Truncate(time.Second)
	}
	t.Nodes = nil
	b, _ := json.MarshalIndent(t, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, templateMeta), b, 0o644); err != nil {
		return t, err
	}
	// Swap the name over atomically: a symlink made aside, renamed onto it.
	if err := os.Symlink(dirName, tmpLink); err != nil {
		return t, err
	}
	if err := os.Rename(tmpLink, filepath.Join(r.templatesDir(), t.Name)); err != nil {
		os.Remove(tmpLink)
		return t, fmt.Errorf("install template: %w", err)
	}
	ok = true
	r.collectTemplates()
	return t, nil
}

// DeleteTemplate removes the name; its directory goes when unused.
func (r *Runtime) DeleteTemplate(ctx context.Context, name string) error {
	if err := validTemplateName(name); err != nil {
		return err
	}
	if _, err := r.resolveTemplate(name); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(r.templatesDir(), name)); err != nil {
		return fmt.Errorf("delete template: %w", err)
	}
	r.collectTemplates()
	return nil
}

// committing is the set of template directories (and their names' links
// made aside) that commits of this process are writing.
var committing = dirSet{m: map[string]bool{}}

// collectTemplates removes build directories no name and no sandbox
// points at (replaced or deleted templates, failed commits).
func (r *Runtime) collectTemplates() {
	entries, err := os.ReadDir(r.templatesDir())
	if err != nil {
		return
	}
	used := map[string]bool{}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			if target, err := os.Readlink(filepath.Join(r.templatesDir(), e.Name())); err == nil {
				used[target] = true
			}
		}
	}
	sbs, _ := os.ReadDir(r.sandboxesDir())
	snaps, _ := os.ReadDir(r.snapshotsDir())
	for _, e := range snaps {
		// A snapshot keeps the template its sandbox ran on, for the
		// sandboxes to be made from it.
		b, err := os.ReadFile(filepath.Join(r.snapshotsDir(), e.Name(), stateFile))
		var p persisted
		if err == nil && json.Unmarshal(b, &p) == nil && p.Template != "" {
			used[p.Template] = true
		}
	}
	for _, e := range sbs {
		if strings.HasPrefix(e.Name(), ".") {
			continue // the disk pool's records, snapshots, volumes
		}
		b, err := os.ReadFile(filepath.Join(r.sandboxesDir(), e.Name(), stateFile))
		if err != nil {
			// A sandbox being created has no state yet: keep everything.
			if _, serr := os.Stat(filepath.Join(r.sandboxesDir(), e.Name())); serr == nil {
				return
			}
			continue
		}
		var p persisted
		if json.Unmarshal(b, &p) == nil && p.Template != "" {
			used[p.Template] = true
		}
	}
	for _, e := range entries {
		name := e.Name()
		if committing.has(filepath.Join(r.templatesDir(), name)) {
			continue
		}
		if e.IsDir() && strings.HasPrefix(name, ".") && strings.Contains(name, "@") && !used[name] {
			os.RemoveAll(filepath.Join(r.templatesDir(), name))
		}
		if strings.HasPrefix(name, ".link-") {
			os.Remove(filepath.Join(r.templatesDir(), name))
		}
	}
}

// copyLayer copies a tree into dst, over what is there. Commits run as the
// host's root (build sandboxes need it), so the copies are root's: files
// keep their permission bits but never setuid or setgid, hard links within the tree stay links (links maps a source
// inode to its first copy), and overlay whiteouts, devices, fifos and
// sockets are left out (a build cannot delete the host's files). It
// returns the bytes copied.
func copyLayer(ctx context.Context, src, dst string, links map[[2]uint64]string) (int64, error) {
	var total int64
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == src {
				return filepath.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if rel == "." {
				return nil
			}
			if fi, err := os.Lstat(target); err == nil && !fi.IsDir() {
				os.Remove(target)
			}
			if err := os.Mkdir(target, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			return os.Chmod(target, info.Mode().Perm()|info.Mode()&fs.ModeSticky)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			os.RemoveAll(target)
			return os.Symlink(link, target)
		case info.Mode().IsRegular():
			os.RemoveAll(target)
			st := info.Sys().(*syscall.Stat_t)
			key := [2]uint64{st.Dev, st.Ino}
			if st.Nlink > 1 {
				if first, ok := links[key]; ok {
					return os.Link(first, target)
				}
				links[key] = target
			}
			// Permission bits only: a new file of root's, so no setuid.
			n, err := copyRegular(path, target, fs.FileMode.Perm)
			total += n
			return err
		}
		return nil // whiteout, device, fifo or socket
	})
	return total, err
}

// copyRegular copies the regular file src to the new file dst, never
// through a symlink, with the mode perm gives for src's as the open file
// has it, and returns the bytes copied.
func copyRegular(src, dst string, perm func(fs.FileMode) fs.FileMode) (int64, error) {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is no longer a regular file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		// Chmod, not the open's mode: the umask must not change it.
		err = out.Chmod(perm(fi.Mode()))
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// buildSkeleton makes the build sandbox's /usr/local upper layer: every
// directory of the lower layers (the template's, then the host's), owned by
// the sandbox user, so the build can add files anywhere under /usr/local
// without copying a directory up (which the sandbox's user namespace could
// not do for directories of the host's root). Existing files stay
// read-only to the build.
func buildSkeleton(upper string, lowers []string, uid int) error {
	if err := os.Mkdir(upper, 0o755); err != nil {
		return err
	}
	if err := os.Lchown(upper, uid, uid); err != nil {
		return err
	}
	for _, lower := range lowers {
		err := filepath.WalkDir(lower, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == lower && errors.Is(err, fs.ErrNotExist) {
					return filepath.SkipAll
				}
				return err
			}
			if !d.IsDir() || path == lower {
				return nil
			}
			rel, _ := filepath.Rel(lower, path)
			p := filepath.Join(upper, rel)
			if err := os.Mkdir(p, 0o755); err != nil {
				if errors.Is(err, fs.ErrExist) {
					return nil
				}
				return err
			}
			return os.Lchown(p, uid, uid)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// StateDir is the directory the runtime keeps its state in.
func (r *Runtime) StateDir() string { return r.cfg.StateDir }
