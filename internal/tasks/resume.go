package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// A task outlives the daemon that runs it. Its harness is a background
// process of its sandbox (a job of the sandbox's agent, which keeps it
// and its output while no daemon runs), and the task's record keeps how
// far it got (progress): the next daemon, after a restart, a crash or an
// upgrade, goes on from there. It follows the harness's output again from
// offset 0 and parses it afresh, so the parser's state (the summary, the
// token counts) is whole, and stores only the events past those the
// phase had already stored: the events of a phase are a function of the
// harness's output (or of the workspace, for collect), made again in the
// same order. A task cut before its harness started starts again in a
// new sandbox.

// Phases of a running task that a later daemon can go on from.
const (
	phaseHarness = "harness" // the harness runs
	phaseCollect = "collect" // it ended; the workspace is being collected
)

// progress is how far a running task got (taskrec.Task.Progress). The zero
// value: its sandbox is being created and prepared.
type progress struct {
	Phase  string `json:"phase"`
	ExecID string `json:"exec_id,omitempty"` // the harness's
	Pid    int    `json:"pid,omitempty"`
	// Seq is the task's newest stored event when the phase began.
	Seq     int64               `json:"seq"`
	Exit    *sandbox.ExecResult `json:"exit,omitempty"`    // collect: the harness's end
	Summary string              `json:"summary,omitempty"` // collect: its final answer
	// Failure is why a harness that exited 0 failed, by its own output.
	Failure string `json:"failure,omitempty"`
	// Attempts are the task's tries (attempts.go); the only field kept
	// once it has ended.
	Attempts []Attempt `json:"attempts,omitempty"`
	// Workspace is the snapshot an ended task kept (continuation.go).
	Workspace *keptWorkspace `json:"workspace,omitempty"`
}

// harnessTag tags the harness among its sandbox's background processes.
const harnessTag = "task-harness"

// promptFile holds the prompt the harness reads on its stdin: a file, not
// a pipe from the daemon, so the harness has all of it whatever becomes
// of the daemon that started it.
const promptFile = stateDir + "/prompt"

// resume reads the progress of a task an earlier daemon was running and
// sets up its event log to go on from it; a fresh task has none. A task
// cut before its harness started loses its sandbox and starts again.
func (r *taskRun) resume(ctx context.Context) (progress, error) {
	var p progress
	if r.rec.State != taskrec.Running {
		r.s.track(r.rec.ID, 0, 0)
		return p, nil
	}
	if r.rec.Progress != "" {
		if err := json.Unmarshal([]byte(r.rec.Progress), &p); err != nil {
			return p, fmt.Errorf("task %s: decode its progress: %w", r.rec.ID, err)
		}
	}
	n, newest, err := r.s.countEvents(ctx, r.rec.ID, p.Seq)
	if err != nil {
		return p, err
	}
	switch p.Phase {
	case phaseHarness, phaseCollect:
		r.s.track(r.rec.ID, newest, n)
		if p.Phase == phaseHarness {
			// Counted again as the output is parsed again.
			r.rec.InputTokens, r.rec.OutputTokens = 0, 0
		}
		r.s.log.Info("task: resumed", "task", r.rec.ID, "sandbox", r.rec.SandboxID, "phase", p.Phase, "events", n)
		return p, nil
	case "":
	default:
		return p, fmt.Errorf("task %s: unknown phase %q", r.rec.ID, p.Phase)
	}
	r.s.track(r.rec.ID, newest, 0)
	if old := r.rec.SandboxID; old != "" {
		r.note(old, "the daemon restarted while the task's sandbox was being prepared: starting again in a new one")
		if err := r.s.m.Delete(ctx, r.c, old); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			return p, fmt.Errorf("destroy the half-prepared sandbox %s: %w", old, err)
		}
		r.rec.SandboxID = ""
	}
	return p, nil
}

// startHarness starts the harness in the prepared workspace and saves
// that it runs.
func (r *taskRun) startHarness(ctx context.Context) (progress, error) {
	sbID := r.rec.SandboxID
	if _, err := r.s.m.WriteFile(ctx, r.c, sbID, promptFile, strings.NewReader(r.req.Prompt), 0o600); err != nil {
		return progress{}, fmt.Errorf("write the prompt: %w", err)
	}
	script := `exec "$@" < "$0"`
	installed, err := r.installApprove(ctx, sbID)
	if err != nil {
		return progress{}, err
	}
	if installed {
		// airlock-approve on the PATH the sandbox has, whatever it is.
		script = `export PATH="` + approveDir + `:$PATH"; ` + script
	}
	argv := append([]string{"sh", "-c", script, promptFile}, r.h.Argv(r.req)...)
	info, err := r.s.m.StartBackground(ctx, r.c, sbID, sandbox.ExecRequest{Cmd: argv, Cwd: Workspace,
		Env: r.h.env(r.req, r.rec.ID), TimeoutS: r.req.TimeoutS, Tag: harnessTag})
	if err != nil {
		return progress{}, err
	}
	p := progress{Phase: phaseHarness, ExecID: info.ExecID, Pid: info.Pid, Seq: r.s.seq(r.rec.ID)}
	r.save(ctx, p)
	return p, nil
}

// follow turns the harness's output, from offset 0, into events until it
// ends; the runtime's timeout kills its tree at timeout_s, and the
// context is a backstop should the runtime not answer.
func (r *taskRun) follow(ctx context.Context, p progress) (sandbox.ExecResult, Parser, error) {
	sbID := r.rec.SandboxID
	parser := r.h.NewParser()
	out := &harnessOutput{r: r, es: newEventStream(r.s, r.rec, sbID, parser)}
	hctx, cancel := context.WithTimeout(ctx, time.Duration(r.req.TimeoutS)*time.Second+30*time.Second)
	defer cancel()
	err := r.s.m.ExecOutput(hctx, r.c, sbID, p.ExecID, 0, true, out)
	out.es.flush()
	if errors.Is(err, sandbox.ErrServerStopping) {
		// The harness goes on; this daemon's Close detaches the task.
		<-ctx.Done()
	}
	if errors.Is(err, sandbox.ErrNotFound) && ctx.Err() == nil {
		// The daemon that saw it end recorded its exit and forgot it
		// before the task's next phase was saved: its end is in the
		// audit log, its events were stored as they came.
		if info, gerr := r.s.m.GetExec(ctx, r.c, sbID, p.ExecID); gerr == nil && info.Exit != nil {
			return *info.Exit, parser, nil
		}
	}
	switch {
	case err != nil:
		return sandbox.ExecResult{}, parser, err
	case out.exit == nil:
		return sandbox.ExecResult{}, parser, errors.New("the harness's output ended without its exit")
	}
	return *out.exit, parser, nil
}

// harnessOutput is the sandbox.ProcStream the harness's output is read
// through.
type harnessOutput struct {
	r    *taskRun
	es   *eventStream
	exit *sandbox.ExecResult
}

func (h *harnessOutput) Output(stream string, _ int64, data []byte) error {
	if stream == "stderr" {
		return h.es.Stderr(data)
	}
	return h.es.Stdout(data)
}

func (h *harnessOutput) Dropped(offset, n int64) error {
	h.es.flush()
	h.r.note(h.r.rec.SandboxID, "%d bytes of the harness's output (from offset %d) were not kept", n, offset)
	return nil
}

func (h *harnessOutput) Exit(res sandbox.ExecResult, _ int64) error {
	h.exit = &res
	return nil
}

func (h *harnessOutput) End(int64) error { return nil }

// save stores the task's progress (and its token counts so far).
func (r *taskRun) save(ctx context.Context, p progress) {
	p.Attempts = r.attempts
	b, err := json.Marshal(p)
	if err == nil {
		r.rec.Progress = string(b)
		err = r.s.st.UpdateTask(context.WithoutCancel(ctx), *r.rec)
	}
	if err != nil {
		r.s.log.Error("task: save progress", "task", r.rec.ID, "phase", p.Phase, "err", err)
	}
}

// track starts keeping the newest event of a task that runs, and how
// many of its next events to drop (stored before a restart).
func (s *Service) track(id string, newest int64, skip int) {
	s.mu.Lock()
	s.logs[id] = &eventLog{seq: newest, skip: skip}
	s.mu.Unlock()
}

// seq is the newest stored event of a running task.
func (s *Service) seq(id string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.logs[id]; l != nil {
		return l.seq
	}
	return 0
}

// countEvents counts the task's events after seq and returns the newest
// one's seq (seq when there are none).
func (s *Service) countEvents(ctx context.Context, id string, after int64) (int, int64, error) {
	n, newest := 0, after
	for {
		rows, err := s.st.TaskEvents(ctx, id, newest, 1000)
		if err != nil {
			return 0, 0, fmt.Errorf("task %s: read its events: %w", id, err)
		}
		for _, r := range rows {
			if !live(r) {
				n++
			}
		}
		if len(rows) > 0 {
			newest = rows[len(rows)-1].Seq
		}
		if len(rows) < 1000 {
			return n, newest, nil
		}
	}
}
