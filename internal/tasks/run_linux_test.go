package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tasks"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// harnessScript is a "harness": it reads the prompt from stdin, prints
// plain lines and one normalized event, edits the workspace (a new file,
// a deleted one, and the user's own .git, which the diff must ignore) and
// complains on stderr.
const harnessScript = `#!/bin/sh
set -e
read -r prompt || true  # no newline after the prompt
echo "prompt: $prompt"
echo "env: $AIRLOCK_TASK_PROMPT"
echo '{"type":"tool_call","name":"write","input":{"path":"answer.txt"}}'
{ cat input.txt; echo fixed; } > answer.txt
rm gone.txt
echo changed >> .git/config
mkdir -p out && echo report > out/report.md
echo oops >&2
echo done
`

func TestGenericTask(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	task := e.submit(t, tasks.Request{
		Harness: "generic", Prompt: "what is it?", Command: []string{"./run.sh"},
		Files: map[string]string{
			"run.sh": harnessScript, "input.txt": "question\n", "gone.txt": "bye\n", ".git/config": "[core]\n",
		},
		Artifacts: []string{"answer.txt", "**/*.md"},
	})
	got, evs := e.wait(t, task.ID)
	if got.State != taskrec.Succeeded || !got.HasExit || got.ExitCode != 0 || got.Summary != "done" {
		t.Fatalf("task ended %s (exit %d, reason %q, summary %q), want succeeded, exit 0, summary done; events %+v",
			got.State, got.ExitCode, got.Reason, got.Summary, evs)
	}
	// Events: numbered 1..n, all linked to the task's sandbox, in order
	// (stderr's raw line may come anywhere among stdout's).
	var kinds []string
	var stderr bool
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, ev.Seq)
		}
		if ev.SandboxID != got.SandboxID {
			t.Errorf("event %d (%s) links sandbox %q, want %q", ev.Seq, ev.Type, ev.SandboxID, got.SandboxID)
		}
		if ev.Type == tasks.EventRaw && ev.Stream == "stderr" {
			stderr = stderr || ev.Line == "oops"
			continue
		}
		k := ev.Type
		switch ev.Type {
		case tasks.EventMessage:
			k += ":" + ev.Text
		case tasks.EventToolCall:
			k += ":" + ev.Name + string(ev.Input)
		case tasks.EventFileChange:
			k += ":" + ev.Kind + " " + ev.Path
		case tasks.EventFinished:
			k += ":" + ev.Status + " " + ev.Summary
		}
		kinds = append(kinds, k)
	}
	want := []string{
		"task.started",
		"message:prompt: what is it?",
		"message:env: what is it?",
		`tool_call:write{"path":"answer.txt"}`,
		"message:done",
		"file_change:added answer.txt",
		"file_change:deleted gone.txt",
		"file_change:added out/report.md",
		"task.finished:succeeded done",
	}
	if d := cmp.Diff(want, kinds); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if !stderr {
		t.Error("no raw stderr event with the harness's complaint")
	}

	arts, err := e.svc.Artifacts(context.Background(), e.c, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range arts {
		names = append(names, a.Kind+":"+a.Name)
	}
	if d := cmp.Diff([]string{"diff:workspace.diff", "file:answer.txt", "file:out/report.md"}, names); d != "" {
		t.Errorf("artifacts (-want +got):\n%s", d)
	}
	answer, err := e.svc.Artifact(context.Background(), e.c, task.ID, "file", "answer.txt")
	if err != nil {
		t.Fatal(err)
	}
	if string(answer.Content) != "question\nfixed\n" || answer.Truncated {
		t.Errorf("answer.txt = %q (truncated %v)", answer.Content, answer.Truncated)
	}
	diff, err := e.svc.Artifact(context.Background(), e.c, task.ID, "diff", "workspace.diff")
	if err != nil {
		t.Fatal(err)
	}
	d := string(diff.Content)
	for _, s := range []string{"diff --git a/answer.txt b/answer.txt", "new file mode", "+fixed", "deleted file mode", "-bye"} {
		if !strings.Contains(d, s) {
			t.Errorf("diff lacks %q:\n%s", s, d)
		}
	}
	if strings.Contains(d, ".git/") {
		t.Errorf("diff shows the user's .git:\n%s", d)
	}
	e.gone(t, got.SandboxID)

	// Another tenant sees no such task.
	other := sandbox.Caller{TenantID: "t-nobody"}
	if _, err := e.svc.Get(context.Background(), other, task.ID); !isNotFound(err) {
		t.Errorf("another tenant's get: %v, want not found", err)
	}
}

func isNotFound(err error) bool { return err != nil && strings.Contains(err.Error(), "not found") }

// TestTaskQueue: ten tasks, four at a time; no more than four ran at any
// moment (by their own started and finished events), each in a sandbox
// of its own, all gone afterwards.
func TestTaskQueue(t *testing.T) {
	e := newEnv(t, tasks.Options{Concurrency: 4})
	var ids []string
	for range 10 {
		ids = append(ids, e.submit(t, tasks.Request{Harness: "generic", Command: []string{"sh", "-c", "sleep 0.3; echo hi"}}).ID)
	}
	type span struct{ start, end time.Time }
	var spans []span
	sandboxes := map[string]bool{}
	for _, id := range ids {
		got, evs := e.wait(t, id)
		if got.State != taskrec.Succeeded {
			t.Fatalf("task %s ended %s: %s", id, got.State, got.Reason)
		}
		var sp span
		for _, ev := range evs {
			switch ev.Type {
			case tasks.EventStarted:
				sp.start = ev.Time
			case tasks.EventFinished:
				sp.end = ev.Time
			}
		}
		spans = append(spans, sp)
		sandboxes[got.SandboxID] = true
		e.gone(t, got.SandboxID)
	}
	if len(sandboxes) != 10 {
		t.Errorf("%d distinct sandboxes for 10 tasks", len(sandboxes))
	}
	most := 0
	for _, a := range spans {
		n := 0
		for _, b := range spans {
			if !b.start.After(a.start) && b.end.After(a.start) {
				n++
			}
		}
		most = max(most, n)
	}
	if most > 4 || most < 2 {
		t.Errorf("at most %d tasks ran at once, want 2..4 (the limit is 4)", most)
	}
}

func TestTaskCancel(t *testing.T) {
	e := newEnv(t, tasks.Options{Concurrency: 1})
	running := e.submit(t, tasks.Request{Harness: "generic", Command: []string{"sh", "-c", "echo up; sleep 60"}})
	queued := e.submit(t, tasks.Request{Harness: "generic", Command: []string{"true"}})
	waitFor(t, e, running.ID, func(ev tasks.Event) bool { return ev.Type == tasks.EventMessage && ev.Text == "up" })

	if q, err := e.svc.Cancel(context.Background(), e.c, queued.ID); err != nil || q.State != taskrec.Cancelled {
		t.Fatalf("cancel queued: %v, state %s", err, q.State)
	}
	start := time.Now()
	got, err := e.svc.Cancel(context.Background(), e.c, running.ID)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("cancel took %v, want under 2 s", took)
	}
	if got.State != taskrec.Cancelled {
		t.Errorf("cancelled task is %s (%s)", got.State, got.Reason)
	}
	e.gone(t, got.SandboxID)
	if q, _ := e.svc.Get(context.Background(), e.c, queued.ID); q.SandboxID != "" {
		t.Errorf("the cancelled queued task got sandbox %s", q.SandboxID)
	}
}

func TestTaskTimeout(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	task := e.submit(t, tasks.Request{Harness: "generic", Command: []string{"sh", "-c", "echo > started.txt; sleep 60"}, TimeoutS: 1})
	got, evs := e.wait(t, task.ID)
	if got.State != taskrec.TimedOut {
		t.Fatalf("task ended %s (%s), want timed_out; events %+v", got.State, got.Reason, evs)
	}
	last := evs[len(evs)-1]
	if last.Type != tasks.EventFinished || last.Status != taskrec.TimedOut {
		t.Errorf("last event %+v, want task.finished timed_out", last)
	}
	// What the harness did before it was stopped is still collected.
	if !hasEvent(evs, func(ev tasks.Event) bool { return ev.Type == tasks.EventFileChange && ev.Path == "started.txt" }) {
		t.Errorf("no file_change for started.txt in %+v", evs)
	}
	e.gone(t, got.SandboxID)
}

// TestTaskRestart: a task an earlier daemon was setting up (its sandbox
// made, its harness not yet started) starts again in a new sandbox and
// the half-prepared one is destroyed; a queued one runs.
func TestTaskRestart(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	e.svc.Close()
	ctx := context.Background()
	sb, err := e.mgr.Create(ctx, e.c, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(tasks.Request{Harness: "generic", Command: []string{"echo", "again"}, TimeoutS: 60})
	now := time.Now().UTC()
	for _, rec := range []taskrec.Task{
		{ID: "tsk_restart_running_" + e.c.TenantID, TenantID: e.c.TenantID, Harness: "generic", State: taskrec.Running, Spec: string(spec), SandboxID: sb.ID, CreatedAt: now, StartedAt: now},
		{ID: "tsk_restart_queued_" + e.c.TenantID, TenantID: e.c.TenantID, Harness: "generic", State: taskrec.Queued, Spec: string(spec), CreatedAt: now},
	} {
		if err := shared.CreateTask(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := tasks.New(ctx, shared, e.mgr, tasks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	e.svc = svc
	got, evs := e.wait(t, "tsk_restart_running_"+e.c.TenantID)
	if got.State != taskrec.Succeeded || got.Summary != "again" || got.SandboxID == sb.ID {
		t.Errorf("the task cut in its set-up ended %s (%q) in sandbox %s, want succeeded in a new sandbox", got.State, got.Reason, got.SandboxID)
	}
	if !hasEvent(evs, func(ev tasks.Event) bool {
		return ev.Type == tasks.EventRaw && strings.Contains(ev.Line, "starting again")
	}) {
		t.Errorf("no event says the task started again: %+v", evs)
	}
	e.gone(t, sb.ID)
	e.gone(t, got.SandboxID)
	got, _ = e.wait(t, "tsk_restart_queued_"+e.c.TenantID)
	if got.State != taskrec.Succeeded {
		t.Errorf("the queued task ended %s (%q), want succeeded", got.State, got.Reason)
	}
}

// TestTaskResume: a service that stops while a task's harness runs leaves
// the harness running; the next service goes on with the task from the
// harness's output, kept by the sandbox's agent: the events come once
// each, in order, with what the harness printed while no service ran, and
// the task ends with its real result and artifacts. A harness that ended
// while no service ran is collected by the next.
func TestTaskResume(t *testing.T) {
	for _, tc := range []struct {
		name string
		// sleep is how long the harness goes on after "before"; the
		// service is down for 2 s.
		sleep string
	}{{"running", "4"}, {"ended-meanwhile", "0.5"}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tasks.Options{})
			task := e.submit(t, tasks.Request{Harness: "generic", TimeoutS: 120, Prompt: "the prompt",
				Command:   []string{"sh", "-c", `read -r p; echo "before $p"; sleep ` + tc.sleep + `; echo while-down; echo fixed > answer.txt; echo '{"type":"usage","input_tokens":7,"output_tokens":3}'; echo after; exit 3`},
				Artifacts: []string{"answer.txt"}})
			waitFor(t, e, task.ID, func(ev tasks.Event) bool { return ev.Type == tasks.EventMessage && ev.Text == "before the prompt" })
			e.svc.Close()
			if got, _ := e.svc.Get(context.Background(), e.c, task.ID); got.State != taskrec.Running {
				t.Fatalf("after the service stopped the task is %s (%q), want running", got.State, got.Reason)
			}
			time.Sleep(2 * time.Second)
			svc, err := tasks.New(context.Background(), shared, e.mgr, tasks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			e.svc = svc
			got, evs := e.wait(t, task.ID)
			if got.State != taskrec.Failed || !got.HasExit || got.ExitCode != 3 || got.Summary != "after" ||
				got.InputTokens != 7 || got.OutputTokens != 3 {
				t.Errorf("task ended %s exit %d (%q), summary %q, tokens %d/%d; want failed, exit 3, summary after, tokens 7/3",
					got.State, got.ExitCode, got.Reason, got.Summary, got.InputTokens, got.OutputTokens)
			}
			var kinds []string
			for i, ev := range evs {
				if ev.Seq != int64(i+1) {
					t.Errorf("event %d has seq %d", i, ev.Seq)
				}
				k := ev.Type
				switch ev.Type {
				case tasks.EventMessage:
					k += ":" + ev.Text
				case tasks.EventFileChange:
					k += ":" + ev.Kind + " " + ev.Path
				case tasks.EventFinished:
					k += ":" + ev.Status
				}
				kinds = append(kinds, k)
			}
			want := []string{"task.started", "message:before the prompt", "message:while-down", "usage", "message:after",
				"file_change:added answer.txt", "task.finished:failed"}
			if diff := cmp.Diff(want, kinds); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			arts, err := shared.TaskArtifacts(context.Background(), task.ID)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, a := range arts {
				names = append(names, a.Kind+":"+a.Name)
			}
			if slices.Sort(names); !slices.Equal(names, []string{"diff:workspace.diff", "file:answer.txt"}) {
				t.Errorf("artifacts %v", names)
			}
			e.gone(t, got.SandboxID)
		})
	}
}

func hasEvent(evs []tasks.Event, f func(tasks.Event) bool) bool {
	for _, ev := range evs {
		if f(ev) {
			return true
		}
	}
	return false
}

// waitFor follows the task until an event f accepts.
func waitFor(t *testing.T, e env, id string, f func(tasks.Event) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errFound := context.Canceled
	err := e.svc.Follow(ctx, e.c, id, 0, func() {}, func(ev tasks.Event) error {
		if f(ev) {
			return errFound
		}
		return nil
	})
	if err != errFound {
		t.Fatalf("waiting for an event of %s: %v", id, err)
	}
}

// TestTaskDefaultArtifacts: without patterns, the files the task added or
// changed are its artifacts; deleted and untouched files are not, nor a
// link (said in a raw event).
func TestTaskDefaultArtifacts(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	task := e.submit(t, tasks.Request{Harness: "generic",
		Files:   map[string]string{"keep.txt": "same\n", "edit.txt": "old\n", "gone.txt": "bye\n"},
		Command: []string{"sh", "-c", "echo new > edit.txt && rm gone.txt && mkdir -p sub && echo made > sub/new.txt && ln -s /etc/passwd link"}})
	got, evs, arts := e.succeeded(t, task.ID)
	var files []string
	for _, a := range arts {
		if a.Kind == "file" {
			files = append(files, a.Name)
		}
	}
	slices.Sort(files)
	if want := []string{"edit.txt", "sub/new.txt"}; !slices.Equal(files, want) {
		t.Errorf("artifacts %v, want %v", files, want)
	}
	if a, err := e.svc.Artifact(context.Background(), e.c, task.ID, "file", "edit.txt"); err != nil || string(a.Content) != "new\n" {
		t.Errorf("edit.txt: %q %v", a.Content, err)
	}
	if !hasEvent(evs, func(ev tasks.Event) bool {
		return ev.Type == tasks.EventRaw && strings.Contains(ev.Line, "link not kept")
	}) {
		t.Errorf("no event says the link was not kept: %+v", evs)
	}
	e.gone(t, got.SandboxID)
}

// TestTaskArtifactBounds: a file past the per-file bound is kept cut and
// marked, and a harness that turns the diff into a link to an endless
// file (/dev/zero) costs the diff, said in a raw event, not the task or
// the other artifacts.
func TestTaskArtifactBounds(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	task := e.submit(t, tasks.Request{Harness: "generic", Artifacts: []string{"out/*"}, Command: []string{"sh", "-c",
		"mkdir out && head -c 9000000 /dev/zero > out/big.bin && echo small > out/small.txt && " +
			"mkdir -p /home/user/.airlock-task && ln -sf /dev/zero /home/user/.airlock-task/diff"}})
	got, evs, arts := e.succeeded(t, task.ID)
	byName := map[string]taskrec.Artifact{}
	for _, a := range arts {
		byName[a.Name] = a
	}
	if a := byName["out/big.bin"]; !a.Truncated || a.Size != 9000000 {
		t.Errorf("big.bin: %+v, want truncated, size 9000000", a)
	}
	if a, err := e.svc.Artifact(context.Background(), e.c, task.ID, "file", "out/big.bin"); err != nil || len(a.Content) != tasks.MaxArtifactBytes {
		t.Errorf("big.bin kept %d bytes (%v), want %d", len(a.Content), err, tasks.MaxArtifactBytes)
	}
	if a := byName["out/small.txt"]; a.Truncated || a.Size != 6 {
		t.Errorf("small.txt: %+v", a)
	}
	if a, ok := byName["workspace.diff"]; ok {
		t.Errorf("the endless diff was kept: %+v", a)
	}
	if !hasEvent(evs, func(ev tasks.Event) bool {
		return ev.Type == tasks.EventRaw && strings.Contains(ev.Line, "no workspace diff")
	}) {
		t.Errorf("no event says the diff is missing: %+v", evs)
	}
	e.gone(t, got.SandboxID)
}

// succeeded waits for the task, which must succeed, and returns it, its
// events and its artifacts.
func (e *env) succeeded(t *testing.T, id string) (tasks.Task, []tasks.Event, []taskrec.Artifact) {
	t.Helper()
	got, evs := e.wait(t, id)
	if got.State != taskrec.Succeeded {
		t.Fatalf("task ended %s (%s): %+v", got.State, got.Reason, evs)
	}
	arts, err := e.svc.Artifacts(context.Background(), e.c, id)
	if err != nil {
		t.Fatal(err)
	}
	return got, evs, arts
}

// TestTaskSandboxChecked: a task whose sandbox could never be created is
// refused when submitted, with the sandbox's own error, and nothing is
// stored; a quota other sandboxes hold only makes a task wait.
func TestTaskSandboxChecked(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	ctx := context.Background()
	small := e
	small.c = sandbox.Caller{TenantID: e.c.TenantID + "-small", KeyID: "k-small"}
	if err := shared.CreateTenant(ctx, tenancy.Tenant{ID: small.c.TenantID, Name: small.c.TenantID, MaxMemoryMB: 256}); err != nil {
		t.Fatal(err)
	}
	cmd := []string{"true"}
	for _, tc := range []struct {
		name string
		e    env
		req  tasks.Request
		want error
	}{
		{"cpus past the host", e, tasks.Request{Harness: "generic", Command: cmd, Limits: tasks.Limits{CPUs: 1000}}, sandbox.ErrLimitExceeded},
		{"memory past the tenant's quota", small, tasks.Request{Harness: "generic", Command: cmd, Limits: tasks.Limits{MemoryMB: 512}}, sandbox.ErrLimitExceeded},
		{"unknown secret", e, tasks.Request{Harness: "generic", Command: cmd, Secrets: []string{"NO_SUCH_SECRET"}}, sandbox.ErrInvalid},
		{"bad allow-list entry", e, tasks.Request{Harness: "generic", Command: cmd, Allow: []string{"exa mple.com"}}, sandbox.ErrInvalid},
	} {
		_, err := tc.e.svc.Submit(ctx, tc.e.c, tc.req)
		if !errors.Is(err, tc.want) || errors.Is(err, sandbox.ErrTenantQuota) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if l, err := tc.e.svc.List(ctx, tc.e.c, taskrec.Filter{}); err != nil || len(l) != 0 {
			t.Errorf("%s: tasks stored: %d %v", tc.name, len(l), err)
		}
	}
	// Within the quota, it runs.
	task := small.submit(t, tasks.Request{Harness: "generic", Command: cmd, Limits: tasks.Limits{MemoryMB: 128}})
	if got, _ := small.wait(t, task.ID); got.State != taskrec.Succeeded {
		t.Errorf("task within the quota ended %s (%s)", got.State, got.Reason)
	}
}
