package linux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlockhq/airlock/internal/images"
	"github.com/airlockhq/airlock/internal/runtime"
)

// An image template is templates/.NAME@RANDOM/rootfs: the image's layers
// flattened (internal/images), used as the sandbox's whole lower layer
// instead of the host's /usr, with template.json beside it.

var _ runtime.ImageImporter = (*Runtime)(nil)

const imageRootfs = "rootfs"

// ImportImage pulls src and installs it as template t.Name (replacing one
// of that name: sandboxes running on the old one keep it).
func (r *Runtime) ImportImage(ctx context.Context, t runtime.TemplateInfo, src runtime.ImageSource, progress func(runtime.ImageProgress)) (runtime.TemplateInfo, error) {
	if err := validTemplateName(t.Name); err != nil {
		return t, err
	}
	if src.Archive != nil {
		return t, fmt.Errorf("%w: an image archive stream is for a node's API, not its runtime", runtime.ErrInvalid)
	}
	if r.rootless {
		return t, fmt.Errorf("%w: importing images needs the server to run as root", runtime.ErrUnsupported)
	}
	isrc := images.Source{Ref: src.Ref, File: src.File, Username: src.Username, Password: src.Password,
		Insecure: src.Insecure, MaxBytes: src.MaxBytes}
	if src.Ref != "" {
		if src.Dial == nil {
			return t, fmt.Errorf("%w: an image pull needs a dialer", runtime.ErrInvalid)
		}
		// Every request, token exchanges and blob redirects included,
		// goes through the caller's dialer.
		isrc.Transport = images.DialTransport(src.Dial)
	}
	report := images.ReportTo(progress)
	return r.installTemplate(t, func(dir string, t runtime.TemplateInfo) (runtime.TemplateInfo, error) {
		cfg, err := images.Import(ctx, isrc, filepath.Join(dir, imageRootfs), report)
		if err != nil {
			return t, fmt.Errorf("import image: %w", images.AsRuntimeError(err))
		}
		if err := addSandboxUser(filepath.Join(dir, imageRootfs, "etc")); err != nil {
			return t, fmt.Errorf("import image: %w", err)
		}
		t.From, t.Image, t.Digest = "image", src.Ref, cfg.Digest
		if src.Ref == "" {
			t.Image = "file:" + filepath.Base(src.File)
			if src.FileName != "" {
				t.Image = "file:" + filepath.Base(src.FileName)
			}
		}
		if src.Origin != "" {
			t.Image = src.Origin
		}
		t.Env, t.Workdir, t.User, t.SizeBytes = cfg.Env, cfg.WorkingDir, cfg.User, cfg.Size
		return t, nil
	})
}

// addSandboxUser gives the image's /etc a user and group "user" of uid
// and gid 1000 (what every sandbox command runs as) when it has none, so
// that tools asking who they are get an answer.
func addSandboxUser(etc string) error {
	add := func(file, match, line string) error {
		p := filepath.Join(etc, file)
		fi, err := os.Lstat(p)
		if err == nil && !fi.Mode().IsRegular() {
			return nil // a symlink or stranger: leave the image's as it is
		}
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Split(l, ":"); len(f) > 2 && f[2] == match {
				return nil
			}
		}
		if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
			b = append(b, '\n')
		}
		return os.WriteFile(p, append(b, line...), 0o644)
	}
	if err := add("passwd", "1000", "user:x:1000:1000::/home/user:/bin/sh\n"); err != nil {
		return fmt.Errorf("add the sandbox user: %w", err)
	}
	if err := add("group", "1000", "user:x:1000:\n"); err != nil {
		return fmt.Errorf("add the sandbox group: %w", err)
	}
	return nil
}

// imageTemplate reads template dirName's record when it is an image's.
func (r *Runtime) imageTemplate(dirName string) (runtime.TemplateInfo, bool) {
	if dirName == "" {
		return runtime.TemplateInfo{}, false
	}
	t, err := r.readTemplate(dirName)
	if err != nil || t.Image == "" {
		return runtime.TemplateInfo{}, false
	}
	return t, true
}

// imageEnv is an image's environment under a sandbox's own: the image's
// PATH and settings apply, but not over who the sandbox user is.
func imageEnv(img []string, own map[string]string) map[string]string {
	if len(img) == 0 {
		return own
	}
	out := map[string]string{}
	for _, kv := range img {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(v, 0) {
			continue
		}
		switch k {
		case "HOME", "USER", "LOGNAME":
			continue
		}
		out[k] = v
	}
	for k, v := range own {
		out[k] = v
	}
	return out
}
