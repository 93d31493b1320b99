package tasks

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// Where a task's files live in its sandbox. The snapshot's git directory
// is outside the workspace, so a repository the user sent (its own .git)
// is never touched.
const (
	Workspace = "/home/user/work"
	stateDir  = "/home/user/.airlock-task"
)

// setupMargin is how much longer than the harness's timeout the task's
// sandbox lives: creating it, writing files, snapshots and collecting
// artifacts.
const setupMargin = 5 * time.Minute

// run runs the task id to its end, or goes on with one an earlier daemon
// was running (resume.go).
func (s *Service) run(ctx context.Context, id string) {
	bg := context.WithoutCancel(ctx)
	rec, err := s.st.GetTask(bg, id)
	if err != nil {
		s.log.Error("task: read", "task", id, "err", err)
		return
	}
	if rec.State != taskrec.Queued && rec.State != taskrec.Running {
		return // cancelled meanwhile
	}
	t, err := s.decodeToRun(rec)
	if err != nil {
		s.finish(bg, &rec, taskrec.Failed, err.Error(), "", nil)
		return
	}
	r := &taskRun{s: s, rec: &rec, req: t.Request, h: harnesses[t.Request.Harness],
		c: sandbox.Caller{TenantID: rec.TenantID, KeyID: rec.KeyID}}
	r.run(ctx)
}

// taskRun is one task being run.
type taskRun struct {
	s   *Service
	rec *taskrec.Task
	req Request
	h   Harness
	c   sandbox.Caller
	// attempts are its tries so far, the current one last (attempts.go).
	attempts []Attempt
	// kept is the workspace it kept at its end (continuation.go).
	kept *keptWorkspace
}

func (r *taskRun) run(ctx context.Context) {
	bg := context.WithoutCancel(ctx)
	if r.attempts = attemptsOf(*r.rec); len(r.attempts) == 0 {
		r.attempts = []Attempt{{N: 1, StartedAt: r.s.opts.Now().UTC()}}
	}
	if r.rec.SandboxID != "" {
		r.s.watch(r.rec.SandboxID, r.rec.ID)
	}
	end := r.runIn(ctx)
	for end.infra && r.retry(ctx, end) {
		end = r.runIn(ctx)
	}
	if r.rec.SandboxID != "" {
		defer r.s.unwatch(r.rec.SandboxID)
	}
	if end.detached {
		// The daemon stops; the task does not. The next daemon goes on
		// from the progress saved.
		return
	}
	r.endAttempt(end.reason)
	// The sandbox goes before task.finished, so a client that saw the end
	// never finds the task's sandbox still there.
	if r.rec.SandboxID != "" {
		// The sandbox's audit log (and the tenant's event stream) gets the
		// end while the sandbox still exists.
		data := map[string]any{"task_id": r.rec.ID, "harness": r.h.Name, "state": end.state,
			"input_tokens": r.rec.InputTokens, "output_tokens": r.rec.OutputTokens}
		if end.reason != "" {
			data["reason"] = end.reason
		}
		if end.res != nil {
			data["exit_code"] = end.res.ExitCode
		}
		r.s.m.RecordTask(bg, r.c, r.rec.SandboxID, audit.TaskFinished, data)
		r.keepWorkspace(bg, end)
		dctx, cancel := context.WithTimeout(bg, time.Minute)
		if err := r.s.m.Delete(dctx, r.c, r.rec.SandboxID); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			r.s.log.Error("task: destroy sandbox", "task", r.rec.ID, "sandbox", r.rec.SandboxID, "err", err)
		}
		cancel()
	}
	r.s.finish(bg, r.rec, end.state, end.reason, end.summary, end.res)
}

// ending is how a task ended, or that this daemon stopped running it
// (detached). infra says Airlock failed it (its sandbox could not be had,
// prepared or followed), not the harness: a retry may do better.
type ending struct {
	state, reason, summary string
	res                    *sandbox.ExecResult
	detached               bool
	infra                  bool
}

// runIn runs the task from where it is: from the start, or from the
// progress an earlier daemon saved.
func (r *taskRun) runIn(ctx context.Context) ending {
	p, err := r.resume(ctx)
	if err != nil {
		return r.cut(ctx, err, "resume the task")
	}
	if p.Phase == "" {
		if err := r.setUp(ctx); err != nil {
			return r.cut(ctx, err, "prepare the workspace")
		}
	}
	if p.Phase == "" || p.Phase == phaseHarness {
		// The sandbox asks its questions (airlock-approve) while the
		// harness runs: the channel opens before the harness starts.
		defer r.openChannel(ctx)()
	}
	if p.Phase == "" {
		if p, err = r.startHarness(ctx); err != nil {
			return r.cut(ctx, err, "start the harness")
		}
	}
	if p.Phase == phaseHarness {
		res, parser, err := r.follow(ctx, p)
		if err != nil || context.Cause(ctx) != nil {
			return r.cut(ctx, err, "run the harness")
		}
		p = progress{Phase: phaseCollect, Seq: r.s.seq(r.rec.ID), Exit: &res, Summary: truncUTF8(parser.Summary(), 4096)}
		if f, ok := parser.(failer); ok {
			p.Failure = truncUTF8(f.Failure(), 4096)
		}
		r.save(ctx, p)
	}
	// Collect even after a timeout: what the harness did so far is
	// what the user needs to see why.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	if err := r.collect(cctx, r.rec.SandboxID); err != nil {
		r.s.log.Warn("task: collect", "task", r.rec.ID, "sandbox", r.rec.SandboxID, "err", err)
		r.note(r.rec.SandboxID, "collecting artifacts failed: %v", err)
	}
	cancel()
	if context.Cause(ctx) != nil {
		return r.cut(ctx, context.Cause(ctx), "collect artifacts")
	}
	res := *p.Exit
	e := ending{state: taskrec.Succeeded, summary: p.Summary, res: &res}
	switch {
	case res.TimedOut:
		e.state, e.reason = taskrec.TimedOut, fmt.Sprintf("the harness ran past timeout_s (%d)", r.req.TimeoutS)
	case res.OOMKilled:
		e.state, e.reason = taskrec.Failed, "the harness ran out of memory"
	case res.ExitCode != 0 || res.Signal != 0:
		e.state = taskrec.Failed
		e.reason = fmt.Sprintf("the harness exited %d", res.ExitCode)
		if res.Signal != 0 {
			e.reason = fmt.Sprintf("the harness was killed by signal %d", res.Signal)
		}
	case p.Failure != "":
		e.state, e.reason = taskrec.Failed, "the harness reported: "+p.Failure
	}
	return e
}

// setUp creates the task's sandbox and prepares its workspace.
func (r *taskRun) setUp(ctx context.Context) error {
	s, bg := r.s, context.WithoutCancel(ctx)
	sb, err := r.createSandbox(ctx)
	if err != nil {
		return fmt.Errorf("create the task's sandbox: %w", err)
	}
	// Running from here: a task waiting for its tenant's sandbox quota
	// shows as queued.
	r.rec.SandboxID, r.rec.State, r.rec.StartedAt = sb.ID, taskrec.Running, s.opts.Now().UTC()
	if err := s.st.UpdateTask(bg, *r.rec); err != nil {
		s.log.Error("task: save", "task", r.rec.ID, "err", err)
	}
	r.s.watch(sb.ID, r.rec.ID)
	r.startAttempt(sb.ID)
	s.emit(r.rec.ID, sb.ID, Event{Type: EventStarted, Harness: r.h.Name})
	s.m.RecordTask(bg, r.c, sb.ID, audit.TaskStarted, map[string]any{"task_id": r.rec.ID, "harness": r.h.Name})
	return r.prepare(ctx, sb.ID)
}

// cut is the ending of a task that err cut short: cancelled, failed
// doing what, or detached when this daemon stops (the task goes on under
// the next).
func (r *taskRun) cut(ctx context.Context, err error, what string) ending {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCancelled):
		return ending{state: taskrec.Cancelled, reason: "cancelled"}
	case errors.Is(cause, errShutdown):
		return ending{detached: true}
	case errors.Is(cause, errBudget):
		return ending{state: taskrec.Failed, reason: cause.Error()}
	}
	return ending{state: taskrec.Failed, reason: fmt.Sprintf("%s: %v", what, err), infra: true}
}

// createSandbox creates the task's sandbox. A tenant at its sandbox quota
// (its own sandboxes count too) makes the task wait and retry rather than
// fail.
func (r *taskRun) createSandbox(ctx context.Context) (sandboxrec.Sandbox, error) {
	req := sandboxRequest(r.req, r.h, r.rec.ID)
	for {
		sb, err := r.s.m.Create(ctx, r.c, req)
		// Only a tenant quota passes; a request no host could hold never
		// will.
		if !errors.Is(err, sandbox.ErrTenantQuota) {
			return sb, err
		}
		select {
		case <-ctx.Done():
			return sandboxrec.Sandbox{}, err
		case <-time.After(time.Second):
		}
	}
}

// sandboxRequest is the sandbox a task of req, run by h, asks for.
func sandboxRequest(req Request, h Harness, taskID string) sandbox.CreateRequest {
	cr := sandbox.CreateRequest{
		Template: h.Template,
		CPUs:     req.Limits.CPUs, MemoryMB: cmp.Or(req.Limits.MemoryMB, h.MemoryMB),
		Pids: req.Limits.Pids, DiskMB: req.Limits.DiskMB,
		TimeoutS: min(req.TimeoutS+int64(setupMargin/time.Second), MaxTimeoutS),
		Secrets:  req.Secrets,
		Metadata: map[string]string{"airlock.task": taskID},
		Budget:   req.Budget,
	}
	if req.Continue != "" {
		cr.Snapshot = workspaceSnapshot(req.Continue)
	}
	// The harness's default model hosts, unless the request names its own
	// endpoint (then the caller's allow-list must reach it).
	allow := append([]string(nil), req.Allow...)
	if req.Model == nil || req.Model.BaseURL == "" {
		allow = append(allow, h.Hosts...)
	}
	if len(allow) > 0 {
		cr.Network = &egress.Policy{Mode: egress.ModeAllowlist, Allow: allow}
	}
	return cr
}

// prepare writes the files into the workspace and snapshots it.
func (r *taskRun) prepare(ctx context.Context, sbID string) error {
	// A follow-up turn's sandbox starts from the earlier task's final
	// workspace: only the files of this turn are written.
	if r.req.Continue == "" {
		if err := r.s.m.Mkdir(ctx, r.c, sbID, Workspace, 0o755); err != nil {
			return err
		}
		if err := r.fill(ctx, sbID); err != nil {
			return err
		}
	}
	for p, content := range r.req.Files {
		mode := uint32(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if _, err := r.s.m.WriteFile(ctx, r.c, sbID, Workspace+"/"+p, strings.NewReader(content), fsMode(mode)); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return r.git(ctx, sbID, snapshotScript)
}

// fill unpacks or clones the request's repo into the empty workspace, as
// the sandbox user (a hostile archive can only write where that user
// can, inside the sandbox).
func (r *taskRun) fill(ctx context.Context, sbID string) error {
	repo := r.req.Repo
	if repo == nil {
		return nil
	}
	what, argv := "unpack the tarball", []string{"sh", "-c", `tar -xf "$1" -C "$2" && rm -f "$1"`, "sh", stateDir + "/repo.tar", Workspace}
	if g := repo.Git; g != nil {
		what = "git clone " + g.URL
		switch {
		case g.Ref == "":
			argv = []string{"git", "clone", "--quiet", "--depth", "1", "--", g.URL, Workspace}
		case commitish(g.Ref):
			argv = []string{"sh", "-c", `git clone --quiet -- "$1" "$2" && git -C "$2" checkout --quiet --detach "$3"`, "sh", g.URL, Workspace, g.Ref}
		default:
			argv = []string{"git", "clone", "--quiet", "--depth", "1", "--branch", g.Ref, "--", g.URL, Workspace}
		}
	} else {
		if err := r.s.m.Mkdir(ctx, r.c, sbID, stateDir, 0o700); err != nil {
			return err
		}
		if _, err := r.s.m.WriteFile(ctx, r.c, sbID, stateDir+"/repo.tar", bytes.NewReader(repo.Tarball), 0o600); err != nil {
			return fmt.Errorf("repo: %w", err)
		}
	}
	// No timeout of its own: the sandbox's (the task's) bounds it.
	res, err := r.s.m.Exec(ctx, r.c, sbID, sandbox.ExecRequest{Cmd: argv,
		Env: map[string]string{"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}})
	if err != nil {
		return fmt.Errorf("repo: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("repo: %s exited %d: %s", what, res.ExitCode, strings.TrimSpace(truncUTF8(res.Stderr+res.Stdout, 2048)))
	}
	return nil
}

// commitish says ref names a commit (7 to 40 lowercase hex digits): cloned
// whole, then checked out.
func commitish(ref string) bool {
	if len(ref) < 7 || len(ref) > 40 {
		return false
	}
	for i := 0; i < len(ref); i++ {
		if c := ref[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// finish saves the task's end and emits task.finished, its last event.
func (s *Service) finish(ctx context.Context, t *taskrec.Task, state, reason, summary string, res *sandbox.ExecResult) {
	t.State, t.Reason, t.EndedAt, t.Progress = state, reason, s.opts.Now().UTC(), endedProgress(*t)
	if summary == "" {
		summary = reason
	}
	t.Summary = truncUTF8(summary, 4096)
	e := Event{Type: EventFinished, Status: state, Summary: t.Summary, Reason: reason}
	if res != nil {
		t.HasExit, t.ExitCode = true, res.ExitCode
		e.ExitCode = intPtr(res.ExitCode)
	}
	if t.InputTokens > 0 || t.OutputTokens > 0 {
		e.InputTokens, e.OutputTokens = t.InputTokens, t.OutputTokens
	}
	if err := s.st.UpdateTask(ctx, *t); err != nil {
		s.log.Error("task: save end", "task", t.ID, "state", state, "err", err)
	}
	s.emit(t.ID, t.SandboxID, e)
	s.exportTrace(ctx, *t)
}
