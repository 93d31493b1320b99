package noderpc

import (
	"context"
	"fmt"
	"net/http"

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
