package sandbox

import (
	"context"
	"fmt"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// StateUnreachable is how a running sandbox on a lost node shows: its
// record stays running (it may come back with its live work); calls on it
// answer unavailable, naming the node.
const StateUnreachable = "unreachable"

// onNode says whether rec runs on a node other than this host.
func onNode(rec sandboxrec.Sandbox) bool { return rec.Node != "" && rec.Node != runtime.LocalNode }

// view is rec as a caller sees it: on a lost node, unreachable.
func (s *Service) view(rec sandboxrec.Sandbox) sandboxrec.Sandbox {
	if !alive(rec.State) || !onNode(rec) || s.opts.NodeLost == nil {
		return rec
	}
	if why, lost := s.opts.NodeLost(rec.Node); lost {
		rec.State, rec.Reason = StateUnreachable, why
	}
	return rec
}

// FailNode marks every running sandbox on the node failed, reason "why:
// node" (why: "node lost" past the grace period, or "node removed").
// When the node comes back, NodeBack destroys what is left of them there.
// It returns how many it marked.
func (s *Service) FailNode(ctx context.Context, node, why string) (int, error) {
	recs, err := s.st.ListSandboxes(ctx, sandboxrec.Filter{State: sandboxrec.Running})
	if err != nil {
		return 0, fmt.Errorf("list sandboxes: %w", err)
	}
	paused, err := s.st.ListSandboxes(ctx, sandboxrec.Filter{State: sandboxrec.Paused})
	if err != nil {
		return 0, fmt.Errorf("list sandboxes: %w", err)
	}
	recs = append(recs, paused...)
	n := 0
	for _, rec := range recs {
		if rec.Node != node {
			continue
		}
		if err := s.failOnNode(ctx, rec.ID, node, why); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (s *Service) failOnNode(ctx context.Context, id, node, why string) error {
	unlock := s.locks.lock(id)
	defer unlock()
	rec, err := s.st.GetSandbox(ctx, id)
	if err != nil || !alive(rec.State) {
		return err
	}
	s.detach(id)
	s.work.Drop(id)
	s.idle.forget(id)
	rec.State, rec.Reason, rec.EndedAt = sandboxrec.Failed, why+": "+node, s.now()
	// Saved as failed, it loses its tokens in the same write.
	if err := s.st.UpdateSandbox(ctx, rec); err != nil {
		return fmt.Errorf("mark sandbox %s failed: %w", id, err)
	}
	s.meterEnd(ctx, rec)
	s.auditor(Caller{}, rec.ID, rec.TenantID).record(audit.SandboxFailed, map[string]any{"reason": rec.Reason})
	s.audit.forget(rec.ID)
	s.log.Warn("sandbox failed: its node is gone", "sandbox", id, "node", node, "why", why)
	return nil
}

// NodeBack takes a node back that answers again: the sandboxes it runs
// without a live record (failed while it was lost, or deleted) are
// destroyed, and those this service could not reach when it started are
// attached now (network, idle timer, metering, live work). The others
// need nothing: their egress listeners listen again on their own
// (relistener), their followers attach again.
func (s *Service) NodeBack(ctx context.Context, node string, ids []string) error {
	for _, id := range ids {
		if err := s.reclaim(ctx, id); err != nil {
			return err
		}
	}
	s.unattachedMu.Lock()
	var todo []string
	for id, n := range s.unattached {
		if n == node {
			todo = append(todo, id)
			delete(s.unattached, id)
		}
	}
	s.unattachedMu.Unlock()
	for _, id := range todo {
		rec, err := s.st.GetSandbox(ctx, id)
		if err != nil || !alive(rec.State) {
			continue
		}
		unlock := s.locks.lock(id)
		err = s.reattach(ctx, rec, s.now())
		unlock()
		if err != nil {
			return err
		}
	}
	return nil
}
