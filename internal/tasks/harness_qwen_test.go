package tasks

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestQwenCommandLine(t *testing.T) {
	h := harnesses[HarnessQwen]
	quiet := map[string]string{
		"QWEN_USAGE_STATISTICS_ENABLED": "false", "QWEN_TELEMETRY_ENABLED": "false",
		"QWEN_CODE_DISABLE_PRECONNECT": "1", "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
	}
	for _, tt := range []struct {
		name string
		req  Request
		argv []string
		env  map[string]string
	}{
		{"model and base URL", Request{Prompt: "p", Model: &Model{Name: "m1", BaseURL: "https://model.test/v1"}},
			[]string{"qwen", "--output-format", "stream-json", "--auth-type", "openai", "--yolo", "--model", "m1"},
			map[string]string{"OPENAI_BASE_URL": "https://model.test/v1"}},
		// Qwen Code's own default: DashScope, its default model.
		{"defaults", Request{Prompt: "p"},
			[]string{"qwen", "--output-format", "stream-json", "--auth-type", "openai", "--yolo"},
			map[string]string{}},
		// The request's env may turn usage statistics back on.
		{"request env", Request{Prompt: "p", Env: map[string]string{"QWEN_USAGE_STATISTICS_ENABLED": "true"}},
			[]string{"qwen", "--output-format", "stream-json", "--auth-type", "openai", "--yolo"},
			map[string]string{"QWEN_USAGE_STATISTICS_ENABLED": "true"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.argv, h.Argv(tt.req)); d != "" {
				t.Errorf("argv (-want +got):\n%s", d)
			}
			want := map[string]string{"AIRLOCK_TASK_ID": "tsk_1", "AIRLOCK_TASK_PROMPT": "p"}
			for k, v := range quiet {
				want[k] = v
			}
			for k, v := range tt.env {
				want[k] = v
			}
			if d := cmp.Diff(want, h.env(tt.req, "tsk_1")); d != "" {
				t.Errorf("env (-want +got):\n%s", d)
			}
		})
	}
	if h.KeyEnv != "OPENAI_API_KEY" || len(h.Hosts) != 1 || h.Hosts[0] != "dashscope.aliyuncs.com" {
		t.Errorf("key %s, hosts %q", h.KeyEnv, h.Hosts)
	}
}

// The fixtures are the stdout of Qwen Code 0.24.4 (on Node 20) against
// e2e/modelmock: its script runs `echo fixed > answer.txt` (-fail: `echo
// out; echo err >&2; exit 3`), then answers "done"; -apierror's base URL
// answered 401.
func TestQwenParserOnCapturedRuns(t *testing.T) {
	const id = "call_000000000000000000000001"
	tests := []struct {
		file    string
		want    []Event
		summary string
	}{
		{"qwen-stream.jsonl", []Event{
			{Type: EventToolCall, ID: id, Name: "run_shell_command", Input: json.RawMessage(`{"command":"echo fixed > answer.txt"}`)},
			{Type: EventToolResult, ID: id, Name: "run_shell_command",
				Output: "Command: echo fixed > answer.txt\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: 0\nSignal: (none)\nProcess Group PGID: (none)"},
			{Type: EventCommand, Argv: []string{"bash", "-c", "echo fixed > answer.txt"}, ExitCode: intPtr(0)},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			{Type: EventUsage, InputTokens: 38056, OutputTokens: 25},
		}, "done"},
		{"qwen-stream-fail.jsonl", []Event{
			{Type: EventToolCall, ID: id, Name: "run_shell_command", Input: json.RawMessage(`{"command":"echo out; echo err >&2; exit 3"}`)},
			{Type: EventToolResult, ID: id, Name: "run_shell_command", IsError: true,
				Output: "Command: echo out; echo err >&2; exit 3\nDirectory: (root)\nOutput: out\nerr\nError: (none)\nExit Code: 3\nSignal: (none)\nProcess Group PGID: (none)"},
			{Type: EventCommand, Argv: []string{"bash", "-c", "echo out; echo err >&2; exit 3"}, ExitCode: intPtr(3), Output: "out\nerr"},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			{Type: EventUsage, InputTokens: 38060, OutputTokens: 25},
		}, "done"},
		{"qwen-stream-apierror.jsonl", []Event{
			{Type: EventMessage, Role: "error", Text: "[API Error: 401 Incorrect API key provided]"},
		}, "[API Error: 401 Incorrect API key provided]"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, p := parseFixture(t, HarnessQwen, tt.file)
			if d := cmp.Diff(tt.want, got, jsonValues); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
			if s := p.Summary(); s != tt.summary {
				t.Errorf("summary %q, want %q", s, tt.summary)
			}
		})
	}
}

// Lines written from Qwen Code 0.24.4's StreamJsonOutputAdapter and tool
// results (the shapes the captured runs do not reach).
func TestQwenParser(t *testing.T) {
	use := func(id, name, input string) string {
		return `{"type":"assistant","parent_tool_use_id":null,"message":{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}]}}`
	}
	result := func(id string, isError bool, content string) string {
		b, _ := json.Marshal(content)
		e := "false"
		if isError {
			e = "true"
		}
		return `{"type":"user","parent_tool_use_id":null,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","is_error":` + e + `,"content":` + string(b) + `}]}}`
	}
	lines := []string{
		`{"type":"system","subtype":"init","cwd":"/home/user/work","tools":["run_shell_command"]}`,
		`{"type":"assistant","parent_tool_use_id":null,"message":{"role":"assistant","content":[{"type":"thinking","thinking":"Plan: write it","signature":"Plan"}]}}`,
		use("c1", "write_file", `{"file_path":"/home/user/work/new.txt","content":"x"}`),
		result("c1", false, "Successfully created and wrote to new file: /home/user/work/new.txt."),
		use("c2", "edit", `{"file_path":"/home/user/work/a.go","old_string":"a","new_string":"b"}`),
		result("c2", false, "The file: /home/user/work/a.go has been updated."),
		use("c3", "edit", `{"file_path":"/home/user/work/b.go","old_string":"a","new_string":"b"}`),
		result("c3", true, "Failed to edit, 0 occurrences found for old_string in /home/user/work/b.go."),
		use("c4", "run_shell_command", `{"command":"grep nomatch README.md"}`),
		result("c4", false, "Command exited with code: 1"),
		use("c5", "run_shell_command", `{"command":"diff a b"}`),
		result("c5", false, "1d0\n< a"),
		use("c6", "run_shell_command", `{"command":"echo hi; echo there"}`),
		result("c6", false, "hi\nthere"),
		use("c7", "run_shell_command", `{"command":"sleep 100","is_background":true}`),
		result("c7", false, "Background command started."),
		use("c8", "run_shell_command", `{"command":"kill -9 $$"}`),
		result("c8", true, "Command: kill -9 $$\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: (none)\nSignal: 9\nProcess Group PGID: 77"),
		`{"type":"assistant","parent_tool_use_id":"c9","message":{"role":"assistant","content":[{"type":"text","text":"subagent says"}]}}`,
		`{"type":"assistant","parent_tool_use_id":null,"message":{"role":"assistant","content":[{"type":"text","text":"All done."}]}}`,
		`{"type":"stream_event","event":{"type":"goal_state"}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"All done.","usage":{"input_tokens":900,"output_tokens":30,"cache_read_input_tokens":600}}`,
		`Ripgrep not available`,
		`{"type":"something_new"}`,
	}
	want := []Event{
		{Type: EventMessage, Role: "reasoning", Text: "Plan: write it"},
		{Type: EventToolCall, ID: "c1", Name: "write_file", Input: json.RawMessage(`{"file_path":"/home/user/work/new.txt","content":"x"}`)},
		{Type: EventToolResult, ID: "c1", Name: "write_file", Output: "Successfully created and wrote to new file: /home/user/work/new.txt."},
		{Type: EventFileChange, Path: "/home/user/work/new.txt", Kind: "added"},
		{Type: EventToolCall, ID: "c2", Name: "edit", Input: json.RawMessage(`{"file_path":"/home/user/work/a.go","old_string":"a","new_string":"b"}`)},
		{Type: EventToolResult, ID: "c2", Name: "edit", Output: "The file: /home/user/work/a.go has been updated."},
		{Type: EventFileChange, Path: "/home/user/work/a.go", Kind: "modified"},
		{Type: EventToolCall, ID: "c3", Name: "edit", Input: json.RawMessage(`{"file_path":"/home/user/work/b.go","old_string":"a","new_string":"b"}`)},
		{Type: EventToolResult, ID: "c3", Name: "edit", Output: "Failed to edit, 0 occurrences found for old_string in /home/user/work/b.go.", IsError: true},
		{Type: EventToolCall, ID: "c4", Name: "run_shell_command", Input: json.RawMessage(`{"command":"grep nomatch README.md"}`)},
		{Type: EventToolResult, ID: "c4", Name: "run_shell_command", Output: "Command exited with code: 1"},
		{Type: EventCommand, Argv: []string{"bash", "-c", "grep nomatch README.md"}, ExitCode: intPtr(1)},
		{Type: EventToolCall, ID: "c5", Name: "run_shell_command", Input: json.RawMessage(`{"command":"diff a b"}`)},
		{Type: EventToolResult, ID: "c5", Name: "run_shell_command", Output: "1d0\n< a"},
		{Type: EventCommand, Argv: []string{"bash", "-c", "diff a b"}, Output: "1d0\n< a"},
		{Type: EventToolCall, ID: "c6", Name: "run_shell_command", Input: json.RawMessage(`{"command":"echo hi; echo there"}`)},
		{Type: EventToolResult, ID: "c6", Name: "run_shell_command", Output: "hi\nthere"},
		{Type: EventCommand, Argv: []string{"bash", "-c", "echo hi; echo there"}, ExitCode: intPtr(0), Output: "hi\nthere"},
		{Type: EventToolCall, ID: "c7", Name: "run_shell_command", Input: json.RawMessage(`{"command":"sleep 100","is_background":true}`)},
		{Type: EventToolResult, ID: "c7", Name: "run_shell_command", Output: "Background command started."},
		{Type: EventCommand, Argv: []string{"bash", "-c", "sleep 100"}, Output: "Background command started."},
		{Type: EventToolCall, ID: "c8", Name: "run_shell_command", Input: json.RawMessage(`{"command":"kill -9 $$"}`)},
		{Type: EventToolResult, ID: "c8", Name: "run_shell_command", IsError: true,
			Output: "Command: kill -9 $$\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: (none)\nSignal: 9\nProcess Group PGID: 77"},
		{Type: EventCommand, Argv: []string{"bash", "-c", "kill -9 $$"}},
		{Type: EventMessage, Role: "assistant", Text: "subagent says"},
		{Type: EventMessage, Role: "assistant", Text: "All done."},
		{Type: EventUsage, InputTokens: 900, OutputTokens: 30},
		{Type: EventRaw, Stream: "stdout", Line: "Ripgrep not available"},
		{Type: EventRaw, Stream: "stdout", Line: `{"type":"something_new"}`},
	}
	p := harnesses[HarnessQwen].NewParser()
	var got []Event
	for _, l := range lines {
		got = append(got, p.Line(l)...)
	}
	if d := cmp.Diff(want, got, cmp.Transformer("json", func(m json.RawMessage) any {
		var v any
		json.Unmarshal(m, &v)
		return v
	})); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if s := p.Summary(); s != "All done." {
		t.Errorf("summary %q", s)
	}
}

// A run that failed before any model call: the result's error is the
// summary and an error message.
func TestQwenParserAuthError(t *testing.T) {
	p := harnesses[HarnessQwen].NewParser()
	got := p.Line(`{"type":"result","subtype":"error_during_execution","is_error":true,"duration_ms":0,"num_turns":0,"usage":{"input_tokens":0,"output_tokens":0},"error":{"message":"No auth type is selected."}}`)
	want := []Event{{Type: EventMessage, Role: "error", Text: "No auth type is selected."}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if s := p.Summary(); s != "No auth type is selected." {
		t.Errorf("summary %q", s)
	}
}

// The output a command event reports is always the tool result's own
// text, or part of it, and a failed call or a background one has an exit
// code only where the result names it: the parser never makes one up.
func FuzzQwenShellOutcome(f *testing.F) {
	f.Add("echo x", "Command: echo x\nDirectory: (root)\nOutput: x\nError: (none)\nExit Code: 0\nSignal: (none)\nProcess Group PGID: 1", false, false)
	f.Add("grep a b", "Command exited with code: 1", false, false)
	f.Add("a", "Directory: \nOutput: \nError: \nExit Code: -1", true, false)
	f.Fuzz(func(t *testing.T, cmd, text string, isError, background bool) {
		code, out := qwenShellOutcome(cmd, text, isError, background)
		if !strings.Contains(text, out) {
			t.Errorf("output %q is not in the result %q", out, text)
		}
		named := strings.Contains(text, "Exit Code: ") || strings.Contains(text, "Command exited with code: ")
		if (isError || background) && code != nil && !named {
			t.Errorf("exit code %d from a result that names none: %q", *code, text)
		}
	})
}
