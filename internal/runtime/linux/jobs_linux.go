package linux

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/airlockhq/airlock/internal/runtime"
)

var _ runtime.JobRunner = (*sandbox)(nil)

// jobsSupported says whether the sandbox's agent runs jobs: one started by
// an older binary may not. The version is asked once per sandbox value.
func (s *sandbox) jobsSupported(ctx context.Context) error {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	if s.agentVersion == 0 {
		v, err := s.client.Version(ctx)
		if err != nil {
			return s.wrap(err)
		}
		s.agentVersion = v
	}
	if s.agentVersion < 2 {
		return fmt.Errorf("%w: sandbox %s runs agent protocol %d, which has no jobs", runtime.ErrUnsupported, s.p.ID, s.agentVersion)
	}
	return nil
}

func (s *sandbox) Spawn(ctx context.Context, req runtime.ExecRequest, buffer int64, meta json.RawMessage) (runtime.JobInfo, error) {
	if err := s.jobsSupported(ctx); err != nil {
		return runtime.JobInfo{}, err
	}
	info, err := s.client.Spawn(ctx, s.withDefaults(req), buffer, meta)
	return info, s.wrap(err)
}

func (s *sandbox) Attach(ctx context.Context, pid int, offset int64, follow bool, out func(runtime.JobOutput) error) (runtime.JobEnd, error) {
	end, err := s.client.Attach(ctx, pid, offset, follow, out)
	return end, s.wrap(err)
}

func (s *sandbox) Input(ctx context.Context, pid int, r io.Reader, closeStdin bool) error {
	return s.wrap(s.client.Input(ctx, pid, r, closeStdin))
}

func (s *sandbox) Jobs(ctx context.Context) ([]runtime.JobInfo, error) {
	if err := s.jobsSupported(ctx); err != nil {
		return nil, err
	}
	jobs, err := s.client.Jobs(ctx)
	return jobs, s.wrap(err)
}

func (s *sandbox) Forget(ctx context.Context, pid int) error {
	return s.wrap(s.client.Forget(ctx, pid))
}
