package sandbox

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// A sandbox from a snapshot, or with volumes, goes to their node when it
// has room.
// When it has none (full, draining, lost), the control plane picks
// another node, streams the snapshot there (a tar of its writable layer,
// resumed where it broke off), makes the sandbox from that copy, and
// drops the copy: the snapshot itself stays where it was taken. Volumes
// no sandbox mounts move for good (volumes_move.go). The sandbox's
// lifecycle says what each transfer cost.

// createElsewhere makes spec's sandbox on another node than its
// snapshot's, which refused it for want of room.
func (s *Service) createElsewhere(ctx context.Context, spec runtime.Spec, from origin, template string) (runtime.Sandbox, *SnapshotTransfer, error) {
	chooser, ok := s.rt.(runtime.NodeChooser)
	if !ok || len(spec.Volumes) > 0 {
		return nil, nil, fmt.Errorf("%w: node %s has no room, and the sandbox cannot go elsewhere", runtime.ErrUnavailable, from.node)
	}
	target, err := chooser.Choose(ctx, spec.Limits, from.node)
	if err != nil {
		return nil, nil, err
	}
	src, err := s.mover(ctx, from.node)
	if err != nil {
		return nil, nil, err
	}
	dst, err := s.mover(ctx, target)
	if err != nil {
		return nil, nil, err
	}
	if tc, ok := s.rt.(templateCopier); ok {
		// The copy is made on the snapshot's template.
		if err := tc.EnsureTemplate(ctx, target, template); err != nil {
			return nil, nil, err
		}
	}
	copyName, err := runtimeName("t-")
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	n, resumed, err := moveSnapshot(ctx, src, dst, from.snapshot, copyName, template)
	defer s.dropSnapshot(context.WithoutCancel(ctx), target, copyName)
	if err != nil {
		return nil, nil, fmt.Errorf("stream the snapshot from node %s to node %s: %w", from.node, target, err)
	}
	tr := &SnapshotTransfer{From: from.node, To: target, Bytes: n, DurationMS: time.Since(start).Milliseconds(), Resumed: resumed}
	s.log.Info("snapshot streamed to a node with room", "from", from.node, "to", target, "bytes", n, "duration_ms", tr.DurationMS)
	spec.Node, spec.Snapshot = target, copyName
	sb, err := s.rt.Create(ctx, spec)
	return sb, tr, err
}

// templateCopier is a runtime that copies templates to the nodes that
// need them (placement).
type templateCopier interface {
	EnsureTemplate(ctx context.Context, node, template string) error
}

func (s *Service) mover(ctx context.Context, node string) (runtime.SnapshotMover, error) {
	rt, err := s.on(ctx, node)
	if err != nil {
		return nil, err
	}
	m, ok := rt.(runtime.SnapshotMover)
	if !ok {
		return nil, fmt.Errorf("%w: node %s cannot move snapshots", ErrUnavailable, node)
	}
	return m, nil
}

// moveSnapshot streams snapshot name from src to dst as copyName.
func moveSnapshot(ctx context.Context, src, dst runtime.SnapshotMover, name, copyName, template string) (int64, int, error) {
	return runtime.MoveStream(ctx,
		func(off int64, w io.Writer) error { return src.ExportSnapshot(ctx, name, off, w) },
		func(r io.Reader) (int64, bool, error) { return dst.ImportSnapshot(ctx, copyName, template, r) })
}
