package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// A task is tried again, in a new sandbox, when Airlock failed it (its
// sandbox could not be created, prepared or followed: a node lost, a
// create refused, a daemon restart past recovery), up to its retry.max;
// a harness that fails has failed, and is not. Each try is an attempt,
// visible in the task (Attempts) and as an attempt event.

// EventAttempt starts a retry: Attempt is its number, Reason why the one
// before failed.
const EventAttempt = "attempt"

// Attempt is one try of a task.
type Attempt struct {
	N         int       `json:"attempt"`
	SandboxID string    `json:"sandbox_id,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Error says why Airlock failed it (and the task was tried again).
	Error string `json:"error,omitempty"`
}

// attemptsOf reads the attempts t's record keeps.
func attemptsOf(t taskrec.Task) []Attempt {
	var p progress
	if t.Progress != "" && json.Unmarshal([]byte(t.Progress), &p) == nil {
		return p.Attempts
	}
	return nil
}

// endedProgress is what an ended task's record keeps of its progress:
// its attempts.
func endedProgress(t taskrec.Task) string {
	a, ws := attemptsOf(t), keptOf(t)
	if len(a) == 0 && ws == nil {
		return ""
	}
	b, _ := json.Marshal(progress{Attempts: a, Workspace: ws})
	return string(b)
}

// startAttempt notes the sandbox of the current attempt (run starts the
// first).
func (r *taskRun) startAttempt(sb string) {
	r.attempts[len(r.attempts)-1].SandboxID = sb
}

// endAttempt ends the current attempt, failed by Airlock for why ("" for
// any other end).
func (r *taskRun) endAttempt(why string) {
	a := &r.attempts[len(r.attempts)-1]
	if a.EndedAt.IsZero() {
		a.EndedAt = r.s.opts.Now().UTC()
	}
	a.Error = why
	// Kept by finish (endedProgress).
	b, _ := json.Marshal(progress{Attempts: r.attempts, Workspace: r.kept})
	r.rec.Progress = string(b)
}

// retry starts the next attempt after end, an infrastructure failure,
// if the task has one left: the failed attempt's sandbox goes, and the
// task starts again from its request in a new one.
func (r *taskRun) retry(ctx context.Context, end ending) bool {
	max := 0
	if r.req.Retry != nil {
		max = r.req.Retry.Max
	}
	if len(r.attempts) > max || ctx.Err() != nil {
		return false
	}
	r.endAttempt(end.reason)
	if old := r.rec.SandboxID; old != "" {
		r.s.unwatch(old)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		if err := r.s.m.Delete(dctx, r.c, old); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			r.s.log.Error("task: destroy a failed attempt's sandbox", "task", r.rec.ID, "sandbox", old, "err", err)
		}
		cancel()
	}
	n := len(r.attempts) + 1
	r.attempts = append(r.attempts, Attempt{N: n, StartedAt: r.s.opts.Now().UTC()})
	r.s.emitLive(r.rec.ID, r.rec.SandboxID, Event{Type: EventAttempt, Attempt: n, Reason: end.reason})
	r.s.log.Warn("task: retrying", "task", r.rec.ID, "attempt", n, "after", end.reason)
	r.rec.SandboxID = ""
	r.save(ctx, progress{})
	return true
}
