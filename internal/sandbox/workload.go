package sandbox

import (
	"slices"
	"sync"
	"time"
)

// workload is what the daemon runs in a sandbox beyond one request:
// background processes and sessions. It lives in memory and ends with the
// sandbox (or the daemon).
type workload struct {
	mu       sync.Mutex
	procs    []*bgProc           // in start order
	execs    []*bgProc           // commands streamed to clients (exec_jobs.go)
	sessions map[string]*session // by id
}

// workload returns sandbox id's workload; with create, a new one if it has
// none yet.
func (s *Service) workload(id string, create bool) *workload {
	s.workMu.Lock()
	defer s.workMu.Unlock()
	w := s.work[id]
	if w == nil && create {
		w = &workload{sessions: map[string]*session{}}
		s.work[id] = w
	}
	return w
}

// dropWorkload forgets a stopped sandbox's workload and ends it: readers
// of background output learn the sandbox is gone, rather than seeing its
// destroy as an ordinary exit, and shells are closed.
func (s *Service) dropWorkload(id string) (waited []<-chan struct{}) {
	s.workMu.Lock()
	w := s.work[id]
	delete(s.work, id)
	s.workMu.Unlock()
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := s.now()
	for _, p := range slices.Concat(w.procs, w.execs) {
		if p.stdin != nil {
			p.stdin.CloseWithError(errSandboxGone)
		}
		p.out.Finish(ended{ExecResult{}, errSandboxGone, now})
		p.stopFollowing() // a job's follower records the end
		waited = append(waited, p.exited)
	}
	for _, se := range w.sessions {
		se.tty.Finish(ended{ExecResult{}, errSandboxGone, now})
		se.close()
		se.end()
		se.stopFollowing()
		waited = append(waited, se.exited)
	}
	return waited
}

// awaitEnds waits, boundedly, until the processes and shells of a
// destroyed sandbox have recorded their ends, so the log has them before
// the sandbox's own end.
func awaitEnds(waited []<-chan struct{}) {
	deadline := time.After(2 * time.Second)
	for _, ch := range waited {
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}
