package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// A task asked to keep its workspace (keep_workspace_s) leaves its
// sandbox's writable layer as a snapshot of its tenant's, named after it,
// when it ends: the workspace and the harness's home (its sessions). A
// follow-up task (continue: its id) starts its sandbox from that snapshot
// and, where the harness can, resumes its session. The service deletes
// each such snapshot once its time is up (sweepWorkspaces).

// keptWorkspace is the snapshot an ended task kept, until when.
type keptWorkspace struct {
	Snapshot  string    `json:"snapshot"`
	ExpiresAt time.Time `json:"expires_at"`
}

// workspaceSnapshot names the snapshot task id keeps its workspace in.
func workspaceSnapshot(id string) string { return "task-" + id }

// keptOf reads the workspace an ended task kept, nil for none.
func keptOf(t taskrec.Task) *keptWorkspace {
	var p progress
	if t.Progress != "" && json.Unmarshal([]byte(t.Progress), &p) == nil {
		return p.Workspace
	}
	return nil
}

// keepWorkspace snapshots the ending task's sandbox when its request
// asks for it; a snapshot that fails is said in an event, and the task
// ends as it would have.
func (r *taskRun) keepWorkspace(ctx context.Context, end ending) {
	if r.req.KeepWorkspaceS <= 0 || r.rec.SandboxID == "" {
		return
	}
	name := workspaceSnapshot(r.rec.ID)
	if _, err := r.s.m.CreateSnapshot(ctx, r.c, r.rec.SandboxID, name); err != nil {
		r.note(r.rec.SandboxID, "keeping the workspace failed: %v", err)
		return
	}
	r.kept = &keptWorkspace{Snapshot: name, ExpiresAt: r.s.opts.Now().UTC().Add(time.Duration(r.req.KeepWorkspaceS) * time.Second)}
	b, _ := json.Marshal(progress{Attempts: r.attempts, Workspace: r.kept})
	r.rec.Progress = string(b)
}

// resolveContinue checks that req may continue the task it names, of
// the caller's, and takes that task's harness when req names none.
func (s *Service) resolveContinue(ctx context.Context, c sandbox.Caller, req *Request) error {
	if req.Continue == "" {
		return nil
	}
	prev, err := s.own(ctx, c, req.Continue)
	if errors.Is(err, sandbox.ErrNotFound) {
		return invalid("continue: no task %.40q", req.Continue)
	}
	if err != nil {
		return err
	}
	switch ws := keptOf(prev); {
	case prev.State == taskrec.Queued || prev.State == taskrec.Running:
		return invalid("continue: task %s is %s; a follow-up starts once it has ended", prev.ID, prev.State)
	case ws == nil:
		return invalid("continue: task %s kept no workspace (run it with keep_workspace_s)", prev.ID)
	case !s.opts.Now().Before(ws.ExpiresAt):
		return invalid("continue: task %s's workspace was kept until %s", prev.ID, ws.ExpiresAt.Format(time.RFC3339))
	case req.Harness == "":
		req.Harness = prev.Harness
	case req.Harness != prev.Harness:
		return invalid("continue: task %s ran harness %s, not %s", prev.ID, prev.Harness, req.Harness)
	}
	return nil
}

// sweepWorkspaces deletes the kept workspaces whose time is up, or whose
// task is gone: at start, then every minute until Close.
func (s *Service) sweepWorkspaces(stop <-chan struct{}) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		s.sweepOnce(context.Background())
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func (s *Service) sweepOnce(ctx context.Context) {
	disks, err := s.st.ListDisks(ctx, sandboxrec.DiskSnapshot, "")
	if err != nil {
		s.log.Warn("task: list kept workspaces", "err", err)
		return
	}
	now := s.opts.Now()
	for _, d := range disks {
		id, ok := strings.CutPrefix(d.Name, "task-")
		if !ok || !strings.HasPrefix(id, "tsk_") {
			continue
		}
		t, err := s.st.GetTask(ctx, id)
		if err == nil && t.TenantID == d.TenantID {
			if ws := keptOf(t); ws == nil && (t.State == taskrec.Queued || t.State == taskrec.Running) ||
				ws != nil && now.Before(ws.ExpiresAt) {
				continue // being written, or kept still
			}
		} else if !errors.Is(err, errdefs.ErrNotFound) {
			continue
		}
		err = s.m.DeleteSnapshot(ctx, sandbox.Caller{TenantID: d.TenantID}, d.Name)
		if err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			s.log.Warn("task: delete a kept workspace", "snapshot", d.Name, "tenant", d.TenantID, "err", err)
		}
	}
}
