package tasks

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The lines follow cline 3.0.65's --json output: agent events as its
// translator writes them (content_start/content_end, usage deltas, error
// with an Error object), tool outputs as its tools return them.
func TestClineParser(t *testing.T) {
	tests := []struct {
		name    string
		lines   []string
		want    []Event
		summary string
	}{
		{
			name: "messages, edits and usage",
			lines: []string{
				`{"type":"agent_event","event":{"type":"content_start","contentType":"reasoning","reasoning":"Let me","redacted":false}}`,
				`{"type":"agent_event","event":{"type":"content_start","contentType":"text","text":"I'll","accumulated":"I'll"}}`,
				`{"type":"agent_event","event":{"type":"content_end","contentType":"text","text":"I'll fix it."}}`,
				`{"type":"agent_event","event":{"type":"content_end","contentType":"reasoning","reasoning":"Let me look."}}`,
				`{"type":"agent_event","event":{"type":"content_start","contentType":"tool","toolName":"editor","toolCallId":"c1","input":{"path":"/home/user/work/new.txt","new_text":"x"}}}`,
				`{"type":"agent_event","event":{"type":"content_start","contentType":"tool","toolName":"editor","toolCallId":"c2","input":{"path":"/home/user/work/a.go","old_text":"a","new_text":"b"}}}`,
				`{"type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"editor","toolCallId":"c1","output":{"query":"edit:/home/user/work/new.txt","result":"File created successfully at: /home/user/work/new.txt","success":true},"durationMs":3}}`,
				`{"type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"editor","toolCallId":"c2","output":{"query":"edit:/home/user/work/a.go","result":"--- a\n+++ b","success":true},"durationMs":3}}`,
				`{"type":"agent_event","event":{"type":"content_start","contentType":"tool","toolName":"apply_patch","toolCallId":"c3","input":{"input":"*** Begin Patch\n*** Add File: n.go\n+x\n*** Update File: o.go\n*** Move to: p.go\n@@\n-a\n+b\n*** Delete File: d.go\n*** End Patch"}}}`,
				`{"type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"apply_patch","toolCallId":"c3","output":{"query":"apply_patch","result":"Successfully applied patch to the following files:\nn.go\no.go -> p.go\nd.go: [deleted]","success":true}}}`,
				`{"type":"agent_event","event":{"type":"usage","inputTokens":100,"outputTokens":7,"cacheReadTokens":60,"totalInputTokens":100,"totalOutputTokens":7}}`,
				`{"type":"agent_event","event":{"type":"done","reason":"completed","text":"Fixed.","iterations":2}}`,
				`{"type":"run_result","finishReason":"completed","iterations":2,"usage":{"inputTokens":100,"outputTokens":7},"aggregateUsage":{"inputTokens":150,"outputTokens":9},"text":"Fixed."}`,
			},
			want: []Event{
				{Type: EventMessage, Role: "assistant", Text: "I'll fix it."},
				{Type: EventMessage, Role: "reasoning", Text: "Let me look."},
				{Type: EventToolCall, ID: "c1", Name: "editor", Input: json.RawMessage(`{"path":"/home/user/work/new.txt","new_text":"x"}`)},
				{Type: EventToolCall, ID: "c2", Name: "editor", Input: json.RawMessage(`{"path":"/home/user/work/a.go","old_text":"a","new_text":"b"}`)},
				{Type: EventToolResult, ID: "c1", Name: "editor", Output: "File created successfully at: /home/user/work/new.txt"},
				{Type: EventFileChange, Path: "/home/user/work/new.txt", Kind: "added"},
				{Type: EventToolResult, ID: "c2", Name: "editor", Output: "--- a\n+++ b"},
				{Type: EventFileChange, Path: "/home/user/work/a.go", Kind: "modified"},
				{Type: EventToolCall, ID: "c3", Name: "apply_patch", Input: json.RawMessage(`{"input":"*** Begin Patch\n*** Add File: n.go\n+x\n*** Update File: o.go\n*** Move to: p.go\n@@\n-a\n+b\n*** Delete File: d.go\n*** End Patch"}`)},
				{Type: EventToolResult, ID: "c3", Name: "apply_patch", Output: "Successfully applied patch to the following files:\nn.go\no.go -> p.go\nd.go: [deleted]"},
				{Type: EventFileChange, Path: "n.go", Kind: "added"},
				{Type: EventFileChange, Path: "o.go", Kind: "deleted"},
				{Type: EventFileChange, Path: "p.go", Kind: "added"},
				{Type: EventFileChange, Path: "d.go", Kind: "deleted"},
				{Type: EventUsage, InputTokens: 100, OutputTokens: 7},
				// A sub-agent's tokens are only in the aggregate.
				{Type: EventUsage, InputTokens: 50, OutputTokens: 2},
			},
			summary: "Fixed.",
		},
		{
			name: "failures",
			lines: []string{
				`{"type":"agent_event","event":{"type":"content_start","contentType":"tool","toolName":"run_commands","toolCallId":"c4","input":{"commands":["sleep 99","ls"]}}}`,
				`{"type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"run_commands","toolCallId":"c4","output":[{"query":"sleep 99","result":"","error":"Command timed out after 30000ms","success":false},{"query":"ls","result":"a\n","success":true}]}}`,
				`{"type":"agent_event","event":{"type":"content_start","contentType":"tool","toolName":"editor","toolCallId":"c5","input":{"path":"/etc/x","new_text":"x"}}}`,
				`{"type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"editor","toolCallId":"c5","output":{"query":"edit:/etc/x","result":"","error":"Editor operation failed: EACCES","success":false}}}`,
				`{"type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"mcp.search","toolCallId":"c6","error":"tool not found"}}`,
				`{"type":"agent_event","event":{"type":"error","error":{"name":"Error","message":"429 Too Many Requests"},"recoverable":true,"iteration":1}}`,
				`{"type":"run_result","finishReason":"mistake_limit","iterations":3,"usage":{"inputTokens":0,"outputTokens":0},"text":"mistake_limit_reached: tool errors"}`,
				`{"type":"error","message":"mistake_limit_reached: tool errors"}`,
				`{"type":"run_aborted","reason":"local_abort","message":"aborted"}`,
				`{"type":"zen_dispatched","sessionId":"s"}`,
				`[cline] Node 20.20.2 cannot read the OS trust store`,
			},
			want: []Event{
				{Type: EventToolCall, ID: "c4", Name: "run_commands", Input: json.RawMessage(`{"commands":["sleep 99","ls"]}`)},
				{Type: EventToolResult, ID: "c4", Name: "run_commands", Output: "Command timed out after 30000ms\na\n", IsError: true},
				{Type: EventCommand, Argv: []string{"/bin/bash", "-c", "sleep 99"}, ExitCode: intPtr(1), Output: "Command timed out after 30000ms"},
				{Type: EventCommand, Argv: []string{"/bin/bash", "-c", "ls"}, ExitCode: intPtr(0), Output: "a\n"},
				{Type: EventToolCall, ID: "c5", Name: "editor", Input: json.RawMessage(`{"path":"/etc/x","new_text":"x"}`)},
				{Type: EventToolResult, ID: "c5", Name: "editor", Output: "Editor operation failed: EACCES", IsError: true},
				{Type: EventToolResult, ID: "c6", Name: "mcp.search", Output: "tool not found", IsError: true},
				{Type: EventMessage, Role: "error", Text: "429 Too Many Requests"},
				{Type: EventMessage, Role: "error", Text: "mistake_limit_reached: tool errors"},
				{Type: EventMessage, Role: "error", Text: "aborted"},
				{Type: EventRaw, Stream: "stdout", Line: `{"type":"zen_dispatched","sessionId":"s"}`},
				{Type: EventRaw, Stream: "stdout", Line: "[cline] Node 20.20.2 cannot read the OS trust store"},
			},
			summary: "mistake_limit_reached: tool errors",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := harnesses[HarnessCline].NewParser()
			var got []Event
			for _, l := range tt.lines {
				got = append(got, p.Line(l)...)
			}
			if d := cmp.Diff(tt.want, got, jsonValues); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
			if s := p.Summary(); s != tt.summary {
				t.Errorf("summary %q, want %q", s, tt.summary)
			}
		})
	}
}

// The fixtures are the stdout of real runs of cline 3.0.65 (its wrapper
// script, as clineArgv runs it) against e2e/modelmock: cline-json ran
// `echo fixed > answer.txt`, cline-json-fail `echo out; echo err >&2;
// exit 3`, and cline-json-error had no model API to reach (cline retried
// for a minute, then gave up).
func TestClineParserOnCapturedRuns(t *testing.T) {
	const refused = "Cannot connect to API: Unable to connect. Is the computer able to access the url?: Unable to connect. Is the computer able to access the url? (ConnectionRefused)"
	tests := []struct {
		file    string
		want    []Event
		summary string
	}{
		{"cline-json.jsonl", []Event{
			{Type: EventUsage, InputTokens: 5445, OutputTokens: 20},
			{Type: EventToolCall, ID: "call_000000000000000000001324", Name: "run_commands", Input: json.RawMessage(`{"commands":["echo fixed > answer.txt"]}`)},
			{Type: EventToolResult, ID: "call_000000000000000000001324", Name: "run_commands"},
			{Type: EventCommand, Argv: []string{"/bin/bash", "-c", "echo fixed > answer.txt"}, ExitCode: intPtr(0)},
			{Type: EventUsage, InputTokens: 5533, OutputTokens: 5},
			{Type: EventMessage, Role: "assistant", Text: "done"},
		}, "done"},
		{"cline-json-fail.jsonl", []Event{
			{Type: EventUsage, InputTokens: 5445, OutputTokens: 20},
			{Type: EventToolCall, ID: "call_000000000000000000000004", Name: "run_commands", Input: json.RawMessage(`{"commands":["echo out; echo err >&2; exit 3"]}`)},
			{Type: EventToolResult, ID: "call_000000000000000000000004", Name: "run_commands", Output: "[Command exited with code 3]\nout\n\n[stderr]\nerr\n", IsError: true},
			{Type: EventCommand, Argv: []string{"/bin/bash", "-c", "echo out; echo err >&2; exit 3"}, ExitCode: intPtr(3), Output: "out\n\n[stderr]\nerr\n"},
			{Type: EventUsage, InputTokens: 5562, OutputTokens: 5},
			{Type: EventMessage, Role: "assistant", Text: "done"},
		}, "done"},
		{"cline-json-error.jsonl", []Event{
			{Type: EventMessage, Role: "error", Text: refused},
		}, refused},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, p := parseFixture(t, HarnessCline, tt.file)
			if d := cmp.Diff(tt.want, got, jsonValues); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
			if s := p.Summary(); s != tt.summary {
				t.Errorf("summary %q, want %q", s, tt.summary)
			}
		})
	}
}

func TestClineCommandLine(t *testing.T) {
	h := harnesses[HarnessCline]
	req := Request{Prompt: "p", Model: &Model{Name: "m1", BaseURL: "https://model.test/v1"}, Env: map[string]string{"A": "1"}}
	if d := cmp.Diff([]string{"sh", "-c", clineScript, "sh", "-m", "m1"}, h.Argv(req)); d != "" {
		t.Errorf("argv (-want +got):\n%s", d)
	}
	env := h.env(req, "tsk_1")
	want := `{"lastUsedProvider":"openai-compatible","providers":{"openai-compatible":{"settings":{"baseUrl":"https://model.test/v1","provider":"openai-compatible"},"updatedAt":"2000-01-01T00:00:00Z"}},"version":1}`
	if env["AIRLOCK_CLINE_PROVIDERS"] != want || env["A"] != "1" || env["CLINE_SESSION_BACKEND_MODE"] != "local" {
		t.Errorf("env %v", env)
	}
	// No base URL: the vendor's API, whose host the sandbox is allowed.
	env = h.env(Request{}, "tsk_1")
	if !strings.Contains(env["AIRLOCK_CLINE_PROVIDERS"], `"baseUrl":"`+clineAPI+`"`) || !strings.Contains(clineAPI, h.Hosts[0]) {
		t.Errorf("default endpoint %s, hosts %v", env["AIRLOCK_CLINE_PROVIDERS"], h.Hosts)
	}
	if got := h.Argv(Request{}); len(got) != 4 {
		t.Errorf("argv without a model %q", got)
	}
}

// TestClineScript runs the wrapper with a stand-in for cline that prints
// its arguments: the settings must be written where the environment says,
// private to the user, and the prompt must reach cline as one argument
// with whitespace in it, however it looks.
func TestClineScript(t *testing.T) {
	dir := t.TempDir()
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\n"
	if err := os.WriteFile(filepath.Join(dir, "cline"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	h := harnesses[HarnessCline]
	for prompt, last := range map[string]string{
		"fix":              "fix\n",
		"version":          "version\n",
		"--help me\n\n":    "--help me\n",
		"a 'b' \"$c\" `d`": "a 'b' \"$c\" `d`\n",
	} {
		req := Request{Prompt: prompt, Model: &Model{Name: "m1", BaseURL: "https://model.test/v1"}}
		env := h.env(req, "tsk_1")
		env["CLINE_PROVIDER_SETTINGS_PATH"] = filepath.Join(dir, "s", "providers.json")
		env["CLINE_GLOBAL_SETTINGS_PATH"] = filepath.Join(dir, "g", "global-settings.json")
		env["PATH"] = dir + ":/usr/bin:/bin"
		cmd := exec.Command("/bin/sh", h.Argv(req)[1:]...)
		cmd.Stdin = strings.NewReader(prompt)
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("prompt %q: %v", prompt, err)
		}
		want := []string{"--json", "--auto-approve", "true", "-P", "openai-compatible", "-m", "m1", "--", last}
		if d := cmp.Diff(want, strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")); d != "" {
			t.Errorf("prompt %q: cline's arguments (-want +got):\n%s", prompt, d)
		}
		for path, content := range map[string]string{
			env["CLINE_PROVIDER_SETTINGS_PATH"]: env["AIRLOCK_CLINE_PROVIDERS"] + "\n",
			env["CLINE_GLOBAL_SETTINGS_PATH"]:   `{"telemetryOptOut":true,"autoUpdateEnabled":false}` + "\n",
		} {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi, _ := os.Stat(path); string(b) != content || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %q (%v), want %q mode 0600", path, b, fi.Mode(), content)
			}
		}
	}
}
