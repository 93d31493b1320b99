package noderpc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Templates across the hop: a template built or imported on one node is
// streamed to another as snapshots are (GET and PUT .../tar, raw bytes,
// resumed at an offset), its record in the query; an image archive a
// control plane pulled or was uploaded is sent whole to the node that
// imports it.

var (
	_ runtime.TemplateMover = (*Runtime)(nil)
	_ runtime.ImageImporter = (*Runtime)(nil)
)

func (c *Runtime) ExportTemplate(ctx context.Context, name, version string, offset int64, w io.Writer) error {
	return c.exportTar(ctx, "template", name, offset, w, "version="+url.QueryEscape(version))
}

func (c *Runtime) ImportTemplate(ctx context.Context, t runtime.TemplateInfo, r io.Reader) (int64, bool, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return 0, false, fmt.Errorf("%w: template %s: %v", runtime.ErrInvalid, t.Name, err)
	}
	return c.importTar(ctx, "template", t.Name, "info="+url.QueryEscape(string(b)), r)
}

// ImportImage sends the archive (src.Archive, or the file src.File) to
// the node, which imports it. A registry reference is the caller's to
// pull into an archive: a node reaches no registry of its own.
func (c *Runtime) ImportImage(ctx context.Context, t runtime.TemplateInfo, src runtime.ImageSource, _ func(runtime.ImageProgress)) (runtime.TemplateInfo, error) {
	seg, err := segment("template", t.Name)
	if err != nil {
		return t, err
	}
	body, origin := src.Archive, src.Origin
	switch {
	case body == nil && src.File != "":
		f, err := os.Open(src.File)
		if err != nil {
			return t, fmt.Errorf("image %s: %w", src.File, err)
		}
		defer f.Close()
		body, origin = f, cmp.Or(origin, "file:"+filepath.Base(cmp.Or(src.FileName, src.File)))
	case body == nil:
		return t, fmt.Errorf("%w: node %s imports an image archive, not a reference: pull it first", runtime.ErrInvalid, c.host)
	}
	info, err := json.Marshal(t)
	if err != nil {
		return t, fmt.Errorf("%w: template %s: %v", runtime.ErrInvalid, t.Name, err)
	}
	q := url.Values{"info": {string(info)}, "origin": {origin}, "max_bytes": {strconv.FormatInt(src.MaxBytes, 10)}}
	var out runtime.TemplateInfo
	if err := c.send(ctx, http.MethodPut, "/templates/"+seg+"/image?"+q.Encode(), body, &out); err != nil {
		return t, err
	}
	return out, nil
}

func (s *server) templateMoveRoutes() {
	s.mux.HandleFunc("GET "+prefix+"/templates/{name}/tar", func(w http.ResponseWriter, r *http.Request) {
		mv, err := runtimeAs[runtime.TemplateMover](s, "move templates")
		exportTar(w, r, err, func(off int64, cw io.Writer) error {
			return mv.ExportTemplate(r.Context(), r.PathValue("name"), r.URL.Query().Get("version"), off, cw)
		})
	})
	s.handle("PUT "+prefix+"/templates/{name}/tar", func(r *http.Request) (any, error) {
		mv, err := runtimeAs[runtime.TemplateMover](s, "move templates")
		if err != nil {
			return nil, err
		}
		t, err := templateArg(r)
		if err != nil {
			return nil, err
		}
		have, done, err := mv.ImportTemplate(r.Context(), t, r.Body)
		return importReply{have, done}, err
	})
	s.handle("PUT "+prefix+"/templates/{name}/image", func(r *http.Request) (any, error) {
		imp, err := runtimeAs[runtime.ImageImporter](s, "import images")
		if err != nil {
			return nil, err
		}
		t, err := templateArg(r)
		if err != nil {
			return nil, err
		}
		max, err := queryInt(r, "max_bytes")
		if err != nil {
			return nil, err
		}
		spool, err := s.spoolArchive(r.Body, max)
		if err != nil {
			return nil, err
		}
		defer os.Remove(spool)
		src := runtime.ImageSource{File: spool, Origin: r.URL.Query().Get("origin"), MaxBytes: max}
		return imp.ImportImage(r.Context(), t, src, nil)
	})
}

// templateArg is the template record in the query, named as the path
// names it.
func templateArg(r *http.Request) (runtime.TemplateInfo, error) {
	var t runtime.TemplateInfo
	if err := json.Unmarshal([]byte(r.URL.Query().Get("info")), &t); err != nil {
		return t, fmt.Errorf("%w: info: %v", runtime.ErrInvalid, err)
	}
	if t.Name != r.PathValue("name") {
		return t, fmt.Errorf("%w: info names template %q, the path %q", runtime.ErrInvalid, t.Name, r.PathValue("name"))
	}
	return t, nil
}

// spoolArchive keeps an image archive on the node's disk (the runtime's
// state directory, where templates go; an import reads the archive more
// than once), at most max bytes of it when max is set.
func (s *server) spoolArchive(body io.Reader, max int64) (string, error) {
	dir := os.TempDir()
	if sd, ok := s.rt.(interface{ StateDir() string }); ok {
		dir = sd.StateDir()
	}
	f, err := os.CreateTemp(dir, ".image-*.tar")
	if err != nil {
		return "", fmt.Errorf("spool the image archive: %w", err)
	}
	if max > 0 {
		body = io.LimitReader(body, max+1)
	}
	n, err := io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && max > 0 && n > max {
		err = fmt.Errorf("%w: the image archive is over %d bytes", runtime.ErrInvalid, max)
	}
	if err != nil {
		os.Remove(f.Name())
		if errors.Is(err, runtime.ErrInvalid) {
			return "", err
		}
		return "", fmt.Errorf("%w: receive the image archive: %v", runtime.ErrUnavailable, err)
	}
	return f.Name(), nil
}
