package tasks

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// With approval, codex runs airlock-approve as its PreToolUse hook for
// every call, trusted without a person at codex's /hooks screen, and
// bounded so the hook decides (deny) before codex would give up on it and
// let the call run; the rest of the command line is as without approval.
func TestCodexArgvApproval(t *testing.T) {
	req := Request{Prompt: "p", Model: &Model{Name: "m1", BaseURL: "https://model.test/v1"}}
	plain := codexArgv(req)
	for _, tc := range []struct {
		timeoutS int64
		hook     string
	}{
		{DefaultApprovalTimeoutS, `[{hooks=[{type="command",command="/home/user/.airlock-task/bin/airlock-approve --hook codex --wait 630 || { echo \"airlock-approve failed, so Airlock denies the call\" \u003e\u00262; exit 2; }",timeout=660}]}]`},
		{60, `[{hooks=[{type="command",command="/home/user/.airlock-task/bin/airlock-approve --hook codex --wait 90 || { echo \"airlock-approve failed, so Airlock denies the call\" \u003e\u00262; exit 2; }",timeout=120}]}]`},
		// Not validated (no default set yet): the default.
		{0, `[{hooks=[{type="command",command="/home/user/.airlock-task/bin/airlock-approve --hook codex --wait 630 || { echo \"airlock-approve failed, so Airlock denies the call\" \u003e\u00262; exit 2; }",timeout=660}]}]`},
	} {
		r := req
		r.Approval = &Approval{Tools: []string{ToolShell}, TimeoutS: tc.timeoutS}
		got := codexArgv(r)
		want := slices.Insert(slices.Clone(plain), 5, "--dangerously-bypass-hook-trust", "-c", "hooks.PreToolUse="+tc.hook)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("timeout_s %d: argv (-want +got):\n%s", tc.timeoutS, d)
		}
	}

	// A follow-up turn resumes the session, hooked the same way.
	r := req
	r.Continue, r.Approval = "tsk_1", &Approval{All: true, TimeoutS: 60}
	got := codexArgv(r)
	if !slices.Equal(got[:4], []string{"codex", "exec", "resume", "--last"}) || !slices.Contains(got, "--dangerously-bypass-hook-trust") ||
		!slices.ContainsFunc(got, func(a string) bool { return strings.HasPrefix(a, "hooks.PreToolUse=") }) {
		t.Errorf("follow-up argv %q", got)
	}
	// Without approval, no hook and no trust bypass.
	if slices.Contains(plain, "--dangerously-bypass-hook-trust") || slices.ContainsFunc(plain, func(a string) bool { return strings.Contains(a, "hooks") }) {
		t.Errorf("argv without approval %q", plain)
	}
}

// The tools codex's hook names fall in the categories a task gates.
func TestCodexCategories(t *testing.T) {
	for tool, want := range map[string]string{
		"Bash": ToolShell, "apply_patch": ToolWrite, "exec_command": ToolShell,
		"view_image": "", "list_mcp_resources": "", "mcp__docs__search": "",
	} {
		if got := category(HarnessCodex, tool); got != want {
			t.Errorf("codex %s: category %q, want %q", tool, got, want)
		}
	}
	a := &Approval{Tools: []string{ToolWrite}}
	if !a.gates(category(HarnessCodex, "apply_patch")) || a.gates(category(HarnessCodex, "Bash")) {
		t.Error("approval.tools [write] gates codex's Bash or not its apply_patch")
	}
}

// The warning codex prints as an error item because Airlock passed
// --dangerously-bypass-hook-trust is not the task's error; other errors
// still are.
func TestCodexParserHookTrustWarning(t *testing.T) {
	p := &codexParser{}
	var got []Event
	for _, l := range []string{
		`{"type":"item.completed","item":{"id":"item_0","type":"error","message":"` + "`--dangerously-bypass-hook-trust`" + ` is enabled. Enabled hooks may run without review for this invocation."}}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"error","message":"something broke"}}`,
	} {
		got = append(got, p.Line(l)...)
	}
	want := []Event{{Type: EventMessage, Role: "error", Text: "something broke"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}
