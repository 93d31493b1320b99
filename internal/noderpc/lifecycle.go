package noderpc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Pause and resume, snapshots and volumes across the hop: a snapshot or
// a volume lives on the node that made it.

var (
	_ runtime.Pauser      = (*sandbox)(nil)
	_ runtime.Snapshotter = (*Runtime)(nil)
	_ runtime.Volumer     = (*Runtime)(nil)
)

type (
	snapshotArgs struct{ Sandbox, Name string }
	volumeArgs   struct {
		Name   string
		SizeMB int64
	}
)

func (s *sandbox) Pause(ctx context.Context) error {
	return s.rt.call(ctx, http.MethodPost, s.path("pause", nil), nil, nil)
}

func (s *sandbox) Resume(ctx context.Context) error {
	return s.rt.call(ctx, http.MethodPost, s.path("resume", nil), nil, nil)
}

func (c *Runtime) Snapshot(ctx context.Context, id, name string) (int64, error) {
	var r sizeReply
	err := c.call(ctx, http.MethodPost, "/snapshots", snapshotArgs{id, name}, &r)
	return r.Size, err
}

func (c *Runtime) DeleteSnapshot(ctx context.Context, name string) error {
	seg, err := segment("snapshot", name)
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodDelete, "/snapshots/"+seg, nil, nil)
}

func (c *Runtime) CreateVolume(ctx context.Context, name string, sizeMB int64) error {
	return c.call(ctx, http.MethodPost, "/volumes", volumeArgs{name, sizeMB}, nil)
}

func (c *Runtime) DeleteVolume(ctx context.Context, name string) error {
	seg, err := segment("volume", name)
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodDelete, "/volumes/"+seg, nil, nil)
}

func (s *server) lifecycleRoutes() {
	s.snapshotTarRoutes()
	s.handle("POST "+prefix+"/sandboxes/{id}/pause", func(r *http.Request) (any, error) {
		p, err := sandboxAs[runtime.Pauser](s, r, "pause")
		if err != nil {
			return nil, err
		}
		return nil, p.Pause(r.Context())
	})
	s.handle("POST "+prefix+"/sandboxes/{id}/resume", func(r *http.Request) (any, error) {
		p, err := sandboxAs[runtime.Pauser](s, r, "resume")
		if err != nil {
			return nil, err
		}
		return nil, p.Resume(r.Context())
	})
	s.handle("POST "+prefix+"/snapshots", func(r *http.Request) (any, error) {
		var a snapshotArgs
		if err := decode(r, &a); err != nil {
			return nil, err
		}
		sn, err := runtimeAs[runtime.Snapshotter](s, "keep snapshots")
		if err != nil {
			return nil, err
		}
		size, err := sn.Snapshot(r.Context(), a.Sandbox, a.Name)
		return sizeReply{size}, err
	})
	s.handle("DELETE "+prefix+"/snapshots/{name}", func(r *http.Request) (any, error) {
		sn, err := runtimeAs[runtime.Snapshotter](s, "keep snapshots")
		if err != nil {
			return nil, err
		}
		return nil, sn.DeleteSnapshot(r.Context(), r.PathValue("name"))
	})
	s.handle("POST "+prefix+"/volumes", func(r *http.Request) (any, error) {
		var a volumeArgs
		if err := decode(r, &a); err != nil {
			return nil, err
		}
		v, err := runtimeAs[runtime.Volumer](s, "keep volumes")
		if err != nil {
			return nil, err
		}
		return nil, v.CreateVolume(r.Context(), a.Name, a.SizeMB)
	})
	s.handle("DELETE "+prefix+"/volumes/{name}", func(r *http.Request) (any, error) {
		v, err := runtimeAs[runtime.Volumer](s, "keep volumes")
		if err != nil {
			return nil, err
		}
		return nil, v.DeleteVolume(r.Context(), r.PathValue("name"))
	})
}

// runtimeAs is this node's runtime as the optional interface T,
// ErrUnsupported if it does not offer it (it cannot what).
func runtimeAs[T any](s *server, what string) (T, error) {
	t, ok := s.rt.(T)
	if !ok {
		return t, fmt.Errorf("%w: this node's runtime cannot %s", runtime.ErrUnsupported, what)
	}
	return t, nil
}

var _ runtime.SnapshotMover = (*Runtime)(nil)

type importReply struct {
	Have int64
	Done bool
}

var _ runtime.VolumeMover = (*Runtime)(nil)

func (c *Runtime) ExportSnapshot(ctx context.Context, name string, offset int64, w io.Writer) error {
	return c.exportTar(ctx, "snapshot", name, offset, w, "")
}

func (c *Runtime) ImportSnapshot(ctx context.Context, name, template string, r io.Reader) (int64, bool, error) {
	return c.importTar(ctx, "snapshot", name, "template="+url.QueryEscape(template), r)
}

func (c *Runtime) ExportVolume(ctx context.Context, name string, offset int64, w io.Writer) error {
	return c.exportTar(ctx, "volume", name, offset, w, "")
}

func (c *Runtime) ImportVolume(ctx context.Context, name string, sizeMB int64, r io.Reader) (int64, bool, error) {
	return c.importTar(ctx, "volume", name, "size_mb="+strconv.FormatInt(sizeMB, 10), r)
}

// exportTar copies the node's tar of a snapshot, volume or template
// (kind) to w; query, when not empty, says more.
func (c *Runtime) exportTar(ctx context.Context, kind, name string, offset int64, w io.Writer, query string) error {
	seg, err := segment(kind, name)
	if err != nil {
		return err
	}
	if query != "" {
		query = "&" + query
	}
	resp, err := c.do(ctx, http.MethodGet, "/"+kind+"s/"+seg+"/tar?offset="+strconv.FormatInt(offset, 10)+query, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return c.unreachable(ctx, fmt.Errorf("export %s %s: %w", kind, name, err))
	}
	return nil
}

// importTar sends r to the node's import of a snapshot, volume or
// template.
func (c *Runtime) importTar(ctx context.Context, kind, name, query string, r io.Reader) (int64, bool, error) {
	seg, err := segment(kind, name)
	if err != nil {
		return 0, false, err
	}
	var out importReply
	err = c.send(ctx, http.MethodPut, "/"+kind+"s/"+seg+"/tar?"+query, r, &out)
	return out.Have, out.Done, err
}

// tarRoutes stream a snapshot's layer or a volume's tree: raw bytes, not
// frames. An export that fails after its first byte cuts the connection,
// so the receiver holds a stream that is short, never one that is wrong.
func (s *server) snapshotTarRoutes() {
	s.mux.HandleFunc("GET "+prefix+"/snapshots/{name}/tar", func(w http.ResponseWriter, r *http.Request) {
		mv, err := runtimeAs[runtime.SnapshotMover](s, "move snapshots")
		exportTar(w, r, err, func(off int64, cw io.Writer) error {
			return mv.ExportSnapshot(r.Context(), r.PathValue("name"), off, cw)
		})
	})
	s.handle("PUT "+prefix+"/snapshots/{name}/tar", func(r *http.Request) (any, error) {
		mv, err := runtimeAs[runtime.SnapshotMover](s, "move snapshots")
		if err != nil {
			return nil, err
		}
		have, done, err := mv.ImportSnapshot(r.Context(), r.PathValue("name"), r.URL.Query().Get("template"), r.Body)
		return importReply{have, done}, err
	})
	s.mux.HandleFunc("GET "+prefix+"/volumes/{name}/tar", func(w http.ResponseWriter, r *http.Request) {
		mv, err := runtimeAs[runtime.VolumeMover](s, "move volumes")
		exportTar(w, r, err, func(off int64, cw io.Writer) error {
			return mv.ExportVolume(r.Context(), r.PathValue("name"), off, cw)
		})
	})
	s.handle("PUT "+prefix+"/volumes/{name}/tar", func(r *http.Request) (any, error) {
		mv, err := runtimeAs[runtime.VolumeMover](s, "move volumes")
		if err != nil {
			return nil, err
		}
		size, err := queryInt(r, "size_mb")
		if err != nil {
			return nil, err
		}
		have, done, err := mv.ImportVolume(r.Context(), r.PathValue("name"), size, r.Body)
		return importReply{have, done}, err
	})
}

// exportTar answers an export: the error as JSON while nothing is
// written, a cut connection after.
func exportTar(w http.ResponseWriter, r *http.Request, err error, export func(off int64, w io.Writer) error) {
	var off int64
	if err == nil {
		off, err = queryInt(r, "offset")
		if err == nil && off < 0 {
			err = fmt.Errorf("%w: offset %d", runtime.ErrInvalid, off)
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	cw := &countingWriter{w: w}
	if err := export(off, cw); err != nil {
		if cw.n == 0 {
			writeError(w, err)
			return
		}
		panic(http.ErrAbortHandler)
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
