package tasks_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/tasks"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// TestTaskAirlockApprove: a generic task's airlock-approve blocks until a
// person decides, exits 0 on allow and 1 on deny; a decision remembered
// for the task answers the same question again without asking; each
// question and answer is a task event; an agent's own sandbox token
// cannot decide (approvals' service refuses a caller without a key).
func TestTaskAirlockApprove(t *testing.T) {
	ap := approvals.New(approvals.Options{Store: shared})
	e := newEnv(t, tasks.Options{Approvals: ap})
	task := e.submit(t, tasks.Request{
		Harness: "generic", Command: []string{"sh", "-c", `
airlock-approve "deploy"; echo "deploy=$?"
airlock-approve "deploy"; echo "again=$?"
airlock-approve "drop the database"; echo "drop=$?"`},
	})
	who := approvals.Caller{TenantID: e.c.TenantID, KeyID: e.c.KeyID}
	decide := func(text string, d approvals.Decision) approvals.Approval {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			pending, err := ap.List(context.Background(), who, approvals.Pending)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range pending {
				if a.Kind != approvals.KindCommand || a.Command == nil || a.Command.Text != text {
					continue
				}
				if a.Task != "" && a.Task != task.ID {
					t.Errorf("approval names task %q, want %q", a.Task, task.ID)
				}
				if _, err := ap.Decide(context.Background(), approvals.Caller{TenantID: e.c.TenantID}, a.ID, d); err == nil {
					t.Error("a caller without an API key decided an approval")
				}
				got, err := ap.Decide(context.Background(), who, a.ID, d)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no pending approval asks %q", text)
		return approvals.Approval{}
	}
	allowed := decide("deploy", approvals.Decision{Allow: true, Remember: approvals.RememberTask, Reason: "go"})
	denied := decide("drop the database", approvals.Decision{Reason: "never"})

	got, evs := e.wait(t, task.ID)
	if got.State != taskrec.Succeeded {
		t.Fatalf("task %s: %s", got.State, got.Reason)
	}
	var out, approvalsSeen []string
	for _, ev := range evs {
		switch ev.Type {
		case tasks.EventMessage:
			out = append(out, ev.Text)
		case tasks.EventApproval:
			approvalsSeen = append(approvalsSeen, ev.Kind+" "+ev.Text+" "+ev.Status+" "+ev.Approval)
		}
	}
	if d := cmp.Diff([]string{"deploy=0", "again=0", "drop=1"}, out); d != "" {
		t.Errorf("exit codes (-want +got):\n%s", d)
	}
	want := []string{
		"command deploy pending " + allowed.ID, "command deploy allowed " + allowed.ID,
		"command drop the database pending " + denied.ID, "command drop the database denied " + denied.ID,
	}
	if d := cmp.Diff(want, approvalsSeen); d != "" {
		t.Errorf("approval events (-want +got):\n%s", d)
	}
	all, _ := ap.List(context.Background(), who, "")
	if len(all) != 2 {
		b, _ := json.Marshal(all)
		t.Errorf("%d approvals opened, want 2 (the remembered one asks nobody): %s", len(all), b)
	}
}

// TestTaskApprovalRequest: a task's approval is checked on submit.
func TestTaskApprovalRequest(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	for _, tc := range []struct {
		body, want string
	}{
		{`{"harness":"generic","command":["true"],"approval":{"tools":"all"}}`, "does not ask permission through Airlock"},
		{`{"harness":"generic","command":["true"],"approval":{"tools":"some"}}`, `want "all" or a list`},
		{`{"harness":"generic","command":["true"],"approval":{"tools":[]}}`, "name at least one"},
	} {
		var req tasks.Request
		err := json.Unmarshal([]byte(tc.body), &req)
		if err == nil {
			_, err = e.svc.Submit(context.Background(), e.c, req)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
}
