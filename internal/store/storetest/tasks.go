package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

func testTasks(t *testing.T, h *harness) {
	s := h.s
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	a := taskrec.Task{ID: "tsk_a", TenantID: "t1", KeyID: "k1", Harness: "generic", State: taskrec.Queued, Spec: `{"x":1}`, CreatedAt: t0}
	b := taskrec.Task{ID: "tsk_b", TenantID: "t1", Harness: "codex", State: taskrec.Queued, Spec: `{}`, CreatedAt: t0.Add(time.Second)}
	c := taskrec.Task{ID: "tsk_c", TenantID: "t2", Harness: "generic", State: taskrec.Queued, Spec: `{}`, CreatedAt: t0}
	for _, task := range []taskrec.Task{a, b, c} {
		must(t, s.CreateTask(ctx, task))
	}
	if err := s.CreateTask(ctx, a); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second create: %v, want conflict", err)
	}
	a.State, a.SandboxID, a.HasExit, a.ExitCode, a.Summary = taskrec.Succeeded, "sb-1", true, 0, "done"
	a.StartedAt, a.EndedAt, a.InputTokens, a.OutputTokens = t0.Add(time.Second), t0.Add(2*time.Second), 10, 20
	a.Progress = `{"turn":3}`
	a.Spec = "ignored: the spec never changes"
	must(t, s.UpdateTask(ctx, a))
	got, err := s.GetTask(ctx, "tsk_a")
	must(t, err)
	a.Spec = `{"x":1}`
	if d := cmp.Diff(a, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if got, _ := s.GetTask(ctx, "tsk_b"); got.HasExit {
		t.Errorf("a task without an exit reads back with one: %+v", got)
	}
	if _, err := s.GetTask(ctx, "tsk_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get unknown: %v", err)
	}
	if err := s.UpdateTask(ctx, taskrec.Task{ID: "tsk_nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("update unknown: %v", err)
	}
	for _, tc := range []struct {
		f    taskrec.Filter
		want []string
	}{
		{taskrec.Filter{TenantID: "t1"}, []string{"tsk_a", "tsk_b"}},
		{taskrec.Filter{TenantID: "t1", States: []string{taskrec.Queued, taskrec.Running}}, []string{"tsk_b"}},
		{taskrec.Filter{TenantID: "t1", Harness: "generic"}, []string{"tsk_a"}},
		{taskrec.Filter{TenantID: "t1", After: "tsk_a"}, []string{"tsk_b"}},
		{taskrec.Filter{States: []string{taskrec.Queued}, Limit: 1}, []string{"tsk_b"}},
		{taskrec.Filter{}, []string{"tsk_a", "tsk_b", "tsk_c"}},
		{taskrec.Filter{TenantID: "t3"}, nil},
	} {
		list, err := s.ListTasks(ctx, tc.f)
		must(t, err)
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
		evs := []taskrec.Event{{Time: t0, Type: "message", SandboxID: "sb-1", Data: []byte(`{}`)}, {Time: t0, Type: "raw", Data: []byte(`{}`)}}
		must(t, s.AppendTaskEvents(ctx, "tsk_a", evs))
		if evs[0].Seq != int64(2*i+1) || evs[1].Seq != int64(2*i+2) || evs[0].TaskID != "tsk_a" {
			t.Errorf("batch %d numbered %d, %d", i, evs[0].Seq, evs[1].Seq)
		}
	}
	must(t, s.AppendTaskEvents(ctx, "tsk_b", []taskrec.Event{{Time: t0, Type: "raw", Data: []byte(`{}`)}}))
	must(t, s.AppendTaskEvents(ctx, "tsk_b", nil))
	evs, err := s.TaskEvents(ctx, "tsk_a", 1, 2)
	must(t, err)
	if len(evs) != 2 || evs[0].Seq != 2 || evs[1].Seq != 3 || evs[1].SandboxID != "sb-1" || !evs[1].Time.Equal(t0) {
		t.Errorf("events after 1, limit 2: %+v", evs)
	}
	if all, _ := s.TaskEvents(ctx, "tsk_a", 0, 0); len(all) != 4 {
		t.Errorf("limit 0 is all: %d events", len(all))
	}
	if b, _ := s.TaskEvents(ctx, "tsk_b", 0, 0); len(b) != 1 || b[0].Seq != 1 {
		t.Errorf("another task's events: %+v", b)
	}

	// Artifacts: listed without content, read with it, replaced by name.
	arts := []taskrec.Artifact{
		{TaskID: "tsk_a", Name: "workspace.diff", Kind: "diff", Size: 3, SHA256: "h", Content: []byte("+x\n")},
		{TaskID: "tsk_a", Name: "out/a.txt", Kind: "file", Size: 10, SHA256: "h2", Truncated: true, Content: []byte("abc")},
	}
	must(t, s.SaveTaskArtifacts(ctx, arts))
	list, err := s.TaskArtifacts(ctx, "tsk_a")
	must(t, err)
	if len(list) != 2 || list[0].Kind != "diff" || list[0].Content != nil || list[1].Name != "out/a.txt" || !list[1].Truncated {
		t.Errorf("artifact list %+v", list)
	}
	one, err := s.TaskArtifact(ctx, "tsk_a", "file", "out/a.txt")
	if err != nil || string(one.Content) != "abc" || one.Size != 10 || one.SHA256 != "h2" {
		t.Errorf("artifact: %+v, %v", one, err)
	}
	must(t, s.SaveTaskArtifacts(ctx, []taskrec.Artifact{{TaskID: "tsk_a", Name: "out/a.txt", Kind: "file", Size: 2, SHA256: "h3", Content: []byte("zz")}}))
	if one, err := s.TaskArtifact(ctx, "tsk_a", "file", "out/a.txt"); err != nil || string(one.Content) != "zz" || one.Truncated {
		t.Errorf("replaced artifact: %+v, %v", one, err)
	}
	if _, err := s.TaskArtifact(ctx, "tsk_b", "file", "out/a.txt"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another task's artifact: %v", err)
	}
}
