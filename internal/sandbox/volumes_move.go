package sandbox

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// VolumeTransfer says that a volume moved to the node a sandbox went to,
// its own node having no room, and what that cost.
type VolumeTransfer struct {
	Volume string `json:"volume"`
	SnapshotTransfer
}

// createMovingVolumes makes spec's sandbox on another node than its
// volumes', which refused it for want of room, moving the volumes there
// first: only volumes no sandbox mounts move.
func (s *Service) createMovingVolumes(ctx context.Context, c Caller, spec runtime.Spec, vols []VolumeMount, node string) (runtime.Sandbox, []VolumeTransfer, error) {
	chooser, ok := s.rt.(runtime.NodeChooser)
	if !ok {
		return nil, nil, fmt.Errorf("%w: node %s has no room, and its volumes cannot move", runtime.ErrUnavailable, node)
	}
	for _, v := range vols {
		all, _, err := s.mountedBy(ctx, c.TenantID, v.Name)
		if err != nil {
			return nil, nil, err
		}
		// The sandbox being made counts already: not it.
		all = slices.DeleteFunc(all, func(id string) bool { return id == spec.ID })
		if len(all) > 0 {
			return nil, nil, fmt.Errorf("%w: node %s has no room, and volume %s cannot move while %s mount it",
				runtime.ErrUnavailable, node, v.Name, strings.Join(all, ", "))
		}
	}
	target, err := chooser.Choose(ctx, spec.Limits, node)
	if err != nil {
		return nil, nil, err
	}
	var moved []VolumeTransfer
	for _, v := range vols {
		tr, err := s.moveVolume(ctx, c, v.Name, node, target)
		if err != nil {
			return nil, moved, err
		}
		moved = append(moved, tr)
	}
	spec.Node = target
	sb, err := s.rt.Create(ctx, spec)
	return sb, moved, err
}

// moveVolume streams the caller's volume from node to target, records it
// there, and removes it from node.
func (s *Service) moveVolume(ctx context.Context, c Caller, name, node, target string) (VolumeTransfer, error) {
	unlock := s.locks.lock("volume/" + c.TenantID + "/" + name)
	defer unlock()
	d, err := s.ownDisk(ctx, c, sandboxrec.DiskVolume, name)
	if err != nil {
		return VolumeTransfer{}, err
	}
	_, sp := volumeOf(d)
	src, err := s.volumeMover(ctx, node)
	if err != nil {
		return VolumeTransfer{}, err
	}
	dst, err := s.volumeMover(ctx, target)
	if err != nil {
		return VolumeTransfer{}, err
	}
	start := time.Now()
	n, resumed, err := runtime.MoveStream(ctx,
		func(off int64, w io.Writer) error { return src.ExportVolume(ctx, sp.Runtime, off, w) },
		func(r io.Reader) (int64, bool, error) { return dst.ImportVolume(ctx, sp.Runtime, d.Bytes>>20, r) })
	if err != nil {
		return VolumeTransfer{}, fmt.Errorf("move volume %s from node %s to node %s: %w", name, node, target, err)
	}
	if err := s.st.MoveDisk(ctx, sandboxrec.DiskVolume, c.TenantID, name, target); err != nil {
		return VolumeTransfer{}, fmt.Errorf("record volume %s on node %s: %w", name, target, err)
	}
	if v, err := s.volumer(ctx, node); err == nil {
		if err := v.DeleteVolume(ctx, sp.Runtime); err != nil {
			s.log.Error("delete a moved volume's old copy", "volume", name, "node", node, "err", err)
		}
	}
	tr := VolumeTransfer{Volume: name, SnapshotTransfer: SnapshotTransfer{From: node, To: target, Bytes: n,
		DurationMS: time.Since(start).Milliseconds(), Resumed: resumed}}
	s.log.Info("volume moved to a node with room", "volume", name, "from", node, "to", target, "bytes", n)
	return tr, nil
}

func (s *Service) volumeMover(ctx context.Context, node string) (runtime.VolumeMover, error) {
	rt, err := s.on(ctx, node)
	if err != nil {
		return nil, err
	}
	m, ok := rt.(runtime.VolumeMover)
	if !ok {
		return nil, fmt.Errorf("%w: node %s cannot move volumes", ErrUnavailable, node)
	}
	return m, nil
}
