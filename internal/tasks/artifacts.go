package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// Artifacts lists the caller's task's artifacts (the workspace diff and
// the files its patterns matched), without content.
func (s *Service) Artifacts(ctx context.Context, c sandbox.Caller, id string) ([]taskrec.Artifact, error) {
	if _, err := s.own(ctx, c, id); err != nil {
		return nil, err
	}
	return s.st.TaskArtifacts(ctx, id)
}

// Artifact returns one artifact of the caller's task with its content:
// kind "diff" (name workspace.diff) or "file" (its workspace path).
func (s *Service) Artifact(ctx context.Context, c sandbox.Caller, id, kind, name string) (taskrec.Artifact, error) {
	if _, err := s.own(ctx, c, id); err != nil {
		return taskrec.Artifact{}, err
	}
	a, err := s.st.TaskArtifact(ctx, id, kind, name)
	if errors.Is(err, errdefs.ErrNotFound) {
		return taskrec.Artifact{}, fmt.Errorf("%w: task %s has no artifact %q", sandbox.ErrNotFound, id, name)
	}
	return a, err
}
