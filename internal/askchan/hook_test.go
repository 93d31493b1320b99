package askchan

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// codexInput is a PreToolUse input as Codex 0.169 writes it for a call.
func codexInput(tool, input string) string {
	return `{"session_id":"s1","turn_id":"t1","transcript_path":null,"cwd":"/home/user/workspace",` +
		`"hook_event_name":"PreToolUse","model":"m","permission_mode":"bypassPermissions",` +
		`"tool_name":"` + tool + `","tool_input":` + input + `,"tool_use_id":"exec-1"}`
}

// runHook runs airlock-approve --hook codex on stdin and returns its exit
// code and the deny reason it printed ("" when it printed nothing).
func runHook(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"--hook", "codex"}, args...), strings.NewReader(stdin), &stdout, &stderr)
	if stdout.Len() == 0 {
		return code, ""
	}
	var out struct {
		HookSpecificOutput struct {
			HookEventName            string `json:"hookEventName"`
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("the hook printed %q: %v", stdout.String(), err)
	}
	o := out.HookSpecificOutput
	if o.HookEventName != "PreToolUse" || o.PermissionDecision != "deny" || o.PermissionDecisionReason == "" {
		t.Errorf("the hook printed %+v; Codex takes only a deny with a reason", o)
	}
	return code, o.PermissionDecisionReason
}

// The hook asks about the call Codex names, with its input, and answers
// as Codex wants: nothing to allow, a deny decision with the person's
// reason to deny. It always exits 0: Codex lets a call run whose hook
// failed.
func TestCodexHook(t *testing.T) {
	var asked atomic.Value
	listen(t, func(ctx context.Context, a Ask) Answer {
		asked.Store(a)
		return Answer{Allow: a.Tool == "Bash", Reason: "by key_1"}
	})
	for _, tc := range []struct {
		tool, input string
		want        Ask
		deny        string
	}{
		{"Bash", `{"command":"echo fixed > answer.txt"}`,
			Ask{Kind: KindHarness, Harness: "codex", Tool: "Bash", Input: json.RawMessage(`{"command":"echo fixed > answer.txt"}`)}, ""},
		{"apply_patch", `{"command":"*** Begin Patch\n*** Add File: b.txt\n+hi\n*** End Patch\n"}`,
			Ask{Kind: KindHarness, Harness: "codex", Tool: "apply_patch", Input: json.RawMessage(`{"command":"*** Begin Patch\n*** Add File: b.txt\n+hi\n*** End Patch\n"}`)},
			"A person denied this through Airlock's approvals: by key_1"},
		{"list_mcp_resources", `null`,
			Ask{Kind: KindHarness, Harness: "codex", Tool: "list_mcp_resources", Input: json.RawMessage(`{}`)},
			"A person denied this through Airlock's approvals: by key_1"},
	} {
		code, deny := runHook(t, codexInput(tc.tool, tc.input), "--wait", "60")
		if code != 0 || deny != tc.deny {
			t.Errorf("%s: exit %d, deny %q; want 0, %q", tc.tool, code, deny, tc.deny)
		}
		if diff := cmp.Diff(tc.want, asked.Load()); diff != "" {
			t.Errorf("%s: asked (-want +got):\n%s", tc.tool, diff)
		}
	}
}

// Whatever keeps the hook from asking is a denial saying why, never a
// failure Codex would let the call through on.
func TestCodexHookFailsClosed(t *testing.T) {
	var asks atomic.Int64
	listen(t, func(ctx context.Context, a Ask) Answer {
		asks.Add(1)
		return Answer{Allow: true}
	})
	big := codexInput("Bash", `{"command":"`+strings.Repeat("x", maxHookInput)+`"}`)
	for _, tc := range []struct {
		name, stdin string
		args        []string
		says        string
	}{
		{"not JSON", "{", nil, "could not read the tool call"},
		{"no tool", `{"hook_event_name":"PreToolUse","tool_input":{}}`, nil, "could not read the tool call"},
		{"another event", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{}}`, nil, `not "PostToolUse"`},
		{"too big", big, nil, "is over"},
	} {
		before := asks.Load()
		code, deny := runHook(t, tc.stdin, tc.args...)
		if code != 0 || !strings.Contains(deny, tc.says) {
			t.Errorf("%s: exit %d, deny %q; want 0 and a denial saying %q", tc.name, code, deny, tc.says)
		}
		if asks.Load() != before {
			t.Errorf("%s: asked a person all the same", tc.name)
		}
	}

	// No decision within --wait: a denial, before Codex would give up on
	// the hook and let the call run.
	release := make(chan struct{})
	defer close(release)
	slow := func(Ask) (Answer, error) {
		<-release
		return Answer{Allow: true}, nil
	}
	if deny := codexHook(strings.NewReader(codexInput("Bash", `{}`)), "codex", 100*time.Millisecond, slow); !strings.Contains(deny, "no decision in time") {
		t.Errorf("no decision within the wait: deny %q", deny)
	}
}

// No channel: a denial that says so.
func TestCodexHookNoChannel(t *testing.T) {
	old, oldWait := dialAddr, FirstDial
	dialAddr, FirstDial = "@airlock-approvals-nobody-listens", 300*time.Millisecond
	defer func() { dialAddr, FirstDial = old, oldWait }()
	if code, deny := runHook(t, codexInput("Bash", `{"command":"ls"}`)); code != 0 || !strings.Contains(deny, "no approvals channel") {
		t.Errorf("no channel: exit %d, deny %q", code, deny)
	}
}

// A wrong command line exits 2 with the usage on stderr, which Codex
// takes as a block with that text as the reason.
func TestCodexHookUsage(t *testing.T) {
	for _, args := range [][]string{{"--hook"}, {"--hook", "claude"}, {"--hook", "codex", "--wait"}, {"--hook", "codex", "--wait", "0"}, {"--hook", "codex", "--wait", "x"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(args, strings.NewReader(codexInput("Bash", `{}`)), &stdout, &stderr); code != 2 || stderr.Len() == 0 || stdout.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout.String(), stderr.String())
		}
	}
	var stderr bytes.Buffer
	Main([]string{"--help"}, nil, io.Discard, &stderr)
	if !strings.Contains(stderr.String(), "--hook codex") {
		t.Errorf("the usage does not name --hook codex:\n%s", stderr.String())
	}
}

// Whatever Codex (or an agent) writes to the hook, it never allows a call
// the person did not allow, and allows one only when it asked about it.
func FuzzCodexHook(f *testing.F) {
	f.Add(codexInput("Bash", `{"command":"ls"}`))
	f.Add(codexInput("apply_patch", `null`))
	f.Add(`{"hook_event_name":"PostToolUse","tool_name":"Bash"}`)
	f.Add(`{"tool_name":""}`)
	f.Fuzz(func(t *testing.T, stdin string) {
		deny := func(Ask) (Answer, error) { return Answer{}, nil }
		if got := codexHook(strings.NewReader(stdin), "codex", 0, deny); got == "" {
			t.Errorf("%q: allowed, though the person denied", stdin)
		}
		asked := false
		allow := func(a Ask) (Answer, error) {
			asked = a.Tool != "" && a.Kind == KindHarness && json.Valid(a.Input)
			return Answer{Allow: true}, nil
		}
		if got := codexHook(strings.NewReader(stdin), "codex", 0, allow); got == "" && !asked {
			t.Errorf("%q: allowed without asking about a tool", stdin)
		}
	})
}
