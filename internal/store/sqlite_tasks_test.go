package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTasks(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := Task{ID: "tsk_a", TenantID: "t1", KeyID: "k1", Harness: "generic", State: TaskQueued, Spec: `{"x":1}`, CreatedAt: t0}
	b := Task{ID: "tsk_b", TenantID: "t1", Harness: "codex", State: TaskQueued, Spec: `{}`, CreatedAt: t0.Add(time.Second)}
	c := Task{ID: "tsk_c", TenantID: "t2", Harness: "generic", State: TaskQueued, Spec: `{}`, CreatedAt: t0}
	for _, task := range []Task{a, b, c} {
		if err := s.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateTask(ctx, a); !errors.Is(err, ErrConflict) {
		t.Errorf("second create: %v, want conflict", err)
	}
	a.State, a.SandboxID, a.HasExit, a.ExitCode, a.Summary = TaskSucceeded, "sb-1", true, 0, "done"
	a.StartedAt, a.EndedAt, a.InputTokens, a.OutputTokens = t0.Add(time.Second), t0.Add(2*time.Second), 10, 20
	a.Spec = "ignored: the spec never changes"
	if err := s.UpdateTask(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTask(ctx, "tsk_a")
	if err != nil {
		t.Fatal(err)
	}
	a.Spec = `{"x":1}`
	if d := cmp.Diff(a, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if _, err := s.GetTask(ctx, "tsk_nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("get unknown: %v", err)
	}
	if err := s.UpdateTask(ctx, Task{ID: "tsk_nope"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("update unknown: %v", err)
	}
	for _, tc := range []struct {
		f    TaskFilter
		want []string
	}{
		{TaskFilter{TenantID: "t1"}, []string{"tsk_a", "tsk_b"}},
		{TaskFilter{TenantID: "t1", States: []string{TaskQueued, TaskRunning}}, []string{"tsk_b"}},
		{TaskFilter{TenantID: "t1", Harness: "generic"}, []string{"tsk_a"}},
		{TaskFilter{TenantID: "t1", After: "tsk_a"}, []string{"tsk_b"}},
		{TaskFilter{States: []string{TaskQueued}, Limit: 1}, []string{"tsk_b"}},
	} {
		list, err := s.ListTasks(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, task := range list {
			ids = append(ids, task.ID)
		}
		if d := cmp.Diff(tc.want, ids); d != "" {
			t.Errorf("list %+v (-want +got):\n%s", tc.f, d)
		}
	}

	// Events are numbered per task, after the newest.
	for i := range 2 {
		evs := []TaskEvent{{Time: t0, Type: "message", SandboxID: "sb-1", Data: []byte(`{}`)}, {Time: t0, Type: "raw", Data: []byte(`{}`)}}
		if err := s.AppendTaskEvents(ctx, "tsk_a", evs); err != nil {
			t.Fatal(err)
		}
		if evs[0].Seq != int64(2*i+1) || evs[1].Seq != int64(2*i+2) {
			t.Errorf("batch %d numbered %d, %d", i, evs[0].Seq, evs[1].Seq)
		}
	}
	if err := s.AppendTaskEvents(ctx, "tsk_b", []TaskEvent{{Time: t0, Type: "raw", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.TaskEvents(ctx, "tsk_a", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Seq != 2 || evs[1].Seq != 3 || evs[1].SandboxID != "sb-1" || !evs[1].Time.Equal(t0) {
		t.Errorf("events after 1, limit 2: %+v", evs)
	}

	// Artifacts: listed without content, read with it, replaced by name.
	arts := []TaskArtifact{
		{TaskID: "tsk_a", Name: "workspace.diff", Kind: "diff", Size: 3, SHA256: "h", Content: []byte("+x\n")},
		{TaskID: "tsk_a", Name: "out/a.txt", Kind: "file", Size: 10, SHA256: "h2", Truncated: true, Content: []byte("abc")},
	}
	if err := s.SaveTaskArtifacts(ctx, arts); err != nil {
		t.Fatal(err)
	}
	list, err := s.TaskArtifacts(ctx, "tsk_a")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Kind != "diff" || list[0].Content != nil || list[1].Name != "out/a.txt" || !list[1].Truncated {
		t.Errorf("artifact list %+v", list)
	}
	one, err := s.TaskArtifact(ctx, "tsk_a", "file", "out/a.txt")
	if err != nil || string(one.Content) != "abc" {
		t.Errorf("artifact: %+v, %v", one, err)
	}
	if _, err := s.TaskArtifact(ctx, "tsk_b", "file", "out/a.txt"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another task's artifact: %v", err)
	}
}
