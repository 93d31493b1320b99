package linux

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/airlockhq/airlock/internal/runtime"
)

var (
	_ runtime.JobRunner      = (*sandbox)(nil)
	_ runtime.AgentVersioner = (*sandbox)(nil)
)

// AgentVersion is the protocol version the sandbox's agent speaks, asked
// once per sandbox value (the runtime keeps one per live sandbox).
func (s *sandbox) AgentVersion(ctx context.Context) (int, error) {
	if err := s.jobsSupported(ctx, 0); err != nil {
		return 0, err
	}
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	return s.agentVersion, nil
}

// Agent protocol versions the job methods need: jobs came with 2, an
// input held open (which a terminal job needs) with 3.
const (
	protoJobs    = 2
	protoTTYJobs = 3
)

// jobsSupported says whether the sandbox's agent speaks protocol version
// want or newer: one started by an older binary may not. The version is
// asked once per sandbox value.
func (s *sandbox) jobsSupported(ctx context.Context, want int) error {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	if s.agentVersion == 0 {
		v, err := s.client.Version(ctx)
		if err != nil {
			return s.wrap(err)
		}
		s.agentVersion = v
	}
	if s.agentVersion < want {
		return fmt.Errorf("%w: sandbox %s runs agent protocol %d: this needs %d", runtime.ErrUnsupported, s.p.ID, s.agentVersion, want)
	}
	return nil
}

func (s *sandbox) Spawn(ctx context.Context, req runtime.ExecRequest, buffer int64, meta json.RawMessage) (runtime.JobInfo, error) {
	want := protoJobs
	if req.TTY != nil {
		want = protoTTYJobs
	}
	if err := s.jobsSupported(ctx, want); err != nil {
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
	if err := s.jobsSupported(ctx, protoJobs); err != nil {
		return nil, err
	}
	jobs, err := s.client.Jobs(ctx)
	return jobs, s.wrap(err)
}

func (s *sandbox) Forget(ctx context.Context, pid int) error {
	return s.wrap(s.client.Forget(ctx, pid))
}

func (s *sandbox) OpenInput(ctx context.Context, pid int) (runtime.JobStdin, error) {
	if err := s.jobsSupported(ctx, protoTTYJobs); err != nil {
		return nil, err
	}
	in, err := s.client.OpenInput(ctx, pid)
	if err != nil {
		return nil, s.wrap(err)
	}
	return in, nil
}
