package linux

import (
	"context"
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
	protoHold    = 4 // attach's hold, spawn's closed stdin
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

func (s *sandbox) Spawn(ctx context.Context, req runtime.ExecRequest, opts runtime.JobOptions) (runtime.JobInfo, error) {
	want := protoJobs
	if req.TTY != nil {
		want = protoTTYJobs
	}
	if opts.CloseStdin {
		want = protoHold
	}
	if err := s.jobsSupported(ctx, want); err != nil {
		return runtime.JobInfo{}, err
	}
	before := s.oomKills()
	info, err := s.client.Spawn(ctx, s.withDefaults(req), opts)
	if err == nil && before >= 0 {
		s.jobsMu.Lock()
		if s.jobOOM == nil {
			s.jobOOM = map[int]oomMark{}
		}
		s.jobOOM[info.Pid] = oomMark{before: before}
		s.jobsMu.Unlock()
	}
	return info, s.wrap(err)
}

func (s *sandbox) Attach(ctx context.Context, pid int, offset int64, mode runtime.AttachMode, out func(runtime.JobOutput) error) (runtime.JobEnd, error) {
	if mode == runtime.AttachHold {
		if err := s.jobsSupported(ctx, protoHold); err != nil {
			return runtime.JobEnd{Next: offset}, err
		}
	}
	end, err := s.client.Attach(ctx, pid, offset, mode, out)
	if end.Exit != nil {
		end.Exit.OOMKilled = s.oomKilled(pid)
	}
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
	err := s.client.Forget(ctx, pid)
	if err == nil {
		s.jobsMu.Lock()
		delete(s.jobOOM, pid)
		s.jobsMu.Unlock()
	}
	return s.wrap(err)
}

// oomMark is what the sandbox's cgroup counted of OOM kills when a job
// started and, once it is known to have ended, whether the kernel's OOM
// killer struck while it ran (the kill looks like any SIGKILL).
type oomMark struct {
	before  int64
	decided bool
	killed  bool
}

// oomKills is the sandbox's count of OOM kills, -1 when it has none.
func (s *sandbox) oomKills() int64 {
	if s.cg == nil {
		return -1
	}
	n, err := s.cg.OOMKills()
	if err != nil {
		return -1
	}
	return n
}

// oomKilled says whether job pid, which has ended, was OOM-killed: decided
// at the first look after its end, for a job this sandbox value started
// (one an earlier daemon started is not known: false).
func (s *sandbox) oomKilled(pid int) bool {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	m, ok := s.jobOOM[pid]
	if !ok {
		return false
	}
	if !m.decided {
		m.decided, m.killed = true, s.oomKills() > m.before
		s.jobOOM[pid] = m
	}
	return m.killed
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
