package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/tasks"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// failingCreates is the real sandbox layer whose next creates fail as an
// unreachable node's would.
type failingCreates struct {
	tasks.Sandboxes
	left atomic.Int32
}

func (f *failingCreates) Create(ctx context.Context, c sandbox.Caller, req sandbox.CreateRequest) (sandboxrec.Sandbox, error) {
	if f.left.Add(-1) >= 0 {
		return sandboxrec.Sandbox{}, fmt.Errorf("%w: node n1 did not answer", sandbox.ErrUnavailable)
	}
	return f.Sandboxes.Create(ctx, c, req)
}

// TestTaskRetriesInfrastructureFailures: a task whose sandbox cannot be
// created once is tried again and succeeds, each attempt in the task and
// an attempt event; without retries, or past retry.max, it fails; a
// harness that fails is not retried.
func TestTaskRetriesInfrastructureFailures(t *testing.T) {
	base := newEnv(t, tasks.Options{})
	fail := &failingCreates{Sandboxes: base.mgr}
	svc, err := tasks.New(context.Background(), shared, fail, tasks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	e := env{mgr: base.mgr, svc: svc, c: base.c}
	run := func(fails int32, retry *tasks.Retry, cmd string) (tasks.Task, []tasks.Event) {
		t.Helper()
		fail.left.Store(fails)
		task := e.submit(t, tasks.Request{Harness: "generic", Command: []string{"sh", "-c", cmd},
			Artifacts: []string{"out.txt"}, Retry: retry})
		return e.wait(t, task.ID)
	}

	got, evs := run(1, &tasks.Retry{Max: 2}, "echo ok > out.txt")
	if got.State != taskrec.Succeeded || len(got.Attempts) != 2 {
		t.Fatalf("task %s (%s), attempts %+v; events %+v", got.State, got.Reason, got.Attempts, evs)
	}
	if a := got.Attempts; a[0].SandboxID != "" || !strings.Contains(a[0].Error, "node n1 did not answer") ||
		a[1].SandboxID != got.SandboxID || a[1].Error != "" || a[1].N != 2 {
		t.Errorf("attempts %+v", a)
	}
	var attempt bool
	for _, ev := range evs {
		attempt = attempt || ev.Type == tasks.EventAttempt && ev.Attempt == 2 && strings.Contains(ev.Reason, "did not answer")
	}
	if !attempt {
		t.Errorf("no attempt event: %+v", evs)
	}

	for _, tc := range []struct {
		name  string
		fails int32
		retry *tasks.Retry
		cmd   string
		want  int // attempts
	}{
		{"no retry", 1, nil, "true", 1},
		{"past retry.max", 3, &tasks.Retry{Max: 2}, "true", 3},
		{"the harness fails", 0, &tasks.Retry{Max: 2}, "exit 3", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, evs := run(tc.fails, tc.retry, tc.cmd)
			if got.State != taskrec.Failed || len(got.Attempts) != tc.want {
				t.Errorf("task %s (%s), %d attempts, want failed after %d; events %+v", got.State, got.Reason, len(got.Attempts), tc.want, evs)
			}
		})
	}
	if _, err := e.svc.Submit(context.Background(), e.c, tasks.Request{Harness: "generic", Command: []string{"true"},
		Retry: &tasks.Retry{Max: 11}}); !errors.Is(err, sandbox.ErrInvalid) || !strings.Contains(err.Error(), "retry.max") {
		t.Errorf("retry.max 11: %v", err)
	}
}

// TestTaskContinue: a task that keeps its workspace can be continued: the
// follow-up turn starts from its final files (the harness's home too),
// sees only its own changes in its diff, and the earlier one cannot be
// continued once its workspace is dropped; bad continues are refused.
func TestTaskContinue(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	first := e.submit(t, tasks.Request{Harness: "generic", Command: []string{"sh", "-c", "echo one > notes.txt; echo s1 > ~/session"},
		KeepWorkspaceS: 300})
	if got, evs := e.wait(t, first.ID); got.State != taskrec.Succeeded {
		t.Fatalf("first turn %s (%s): %+v", got.State, got.Reason, evs)
	}
	second := e.submit(t, tasks.Request{Continue: first.ID, Command: []string{"sh", "-c",
		`cat notes.txt ~/session; echo two >> notes.txt`}, Artifacts: []string{"notes.txt"}})
	got, evs := e.wait(t, second.ID)
	if got.State != taskrec.Succeeded || got.Harness != "generic" {
		t.Fatalf("follow-up %s (%s): %+v", got.State, got.Reason, evs)
	}
	var said []string
	for _, ev := range evs {
		if ev.Type == tasks.EventMessage {
			said = append(said, ev.Text)
		}
	}
	if strings.Join(said, ",") != "one,s1" {
		t.Errorf("the follow-up saw %q, want the first turn's files", said)
	}
	diff, err := e.svc.Artifact(context.Background(), e.c, second.ID, "diff", "workspace.diff")
	if d := string(diff.Content); err != nil || !strings.Contains(d, "+two") || strings.Contains(d, "+one") {
		t.Errorf("the follow-up's diff should hold its own change only: %v %q", err, d)
	}

	for _, tc := range []struct {
		name string
		req  tasks.Request
		want string
	}{
		{"unknown task", tasks.Request{Continue: "tsk_000000000000000000000000", Command: []string{"true"}}, "no task"},
		{"kept nothing", tasks.Request{Continue: second.ID, Command: []string{"true"}}, "kept no workspace"},
		{"other harness", tasks.Request{Continue: first.ID, Harness: "codex", Prompt: "go on"}, "ran harness generic"},
	} {
		if _, err := e.svc.Submit(context.Background(), e.c, tc.req); !errors.Is(err, sandbox.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want invalid naming %q", tc.name, err, tc.want)
		}
	}
	other := newEnv(t, tasks.Options{})
	if _, err := other.svc.Submit(context.Background(), other.c, tasks.Request{Continue: first.ID, Command: []string{"true"}}); !errors.Is(err, sandbox.ErrInvalid) {
		t.Errorf("another tenant continued the task: %v", err)
	}
}

// TestTaskKeptWorkspaceExpires: a kept workspace is deleted once its
// time is up (a service sweeps at start and every minute), and the task
// can no longer be continued.
func TestTaskKeptWorkspaceExpires(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	first := e.submit(t, tasks.Request{Harness: "generic", Command: []string{"true"}, KeepWorkspaceS: 1})
	if got, _ := e.wait(t, first.ID); got.State != taskrec.Succeeded {
		t.Fatalf("task %s (%s)", got.State, got.Reason)
	}
	name := "task-" + first.ID
	if _, err := e.mgr.GetSnapshot(context.Background(), e.c, name); err != nil {
		t.Fatalf("the kept workspace: %v", err)
	}
	time.Sleep(1100 * time.Millisecond)
	svc, err := tasks.New(context.Background(), shared, e.mgr, tasks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := e.mgr.GetSnapshot(context.Background(), e.c, name)
		if errors.Is(err, sandbox.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired workspace is still kept: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := svc.Submit(context.Background(), e.c, tasks.Request{Continue: first.ID, Command: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "was kept until") {
		t.Errorf("continuing an expired workspace: %v", err)
	}
}
