package tasks

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The fixtures are the stdout of real runs of opencode-ai 1.18.33 with
// opencodeArgv and opencodeEnv, prompt on stdin. opencode-run and
// opencode-run-fail ran against e2e/modelmock (one shell command, then
// "done"; the -fail command was `echo out; echo err >&2; exit 3`),
// opencode-run-401 against an API refusing the key. opencode-edits and
// opencode-patch ran against a scripted Chat Completions server (one
// tool call a turn, 1000+n prompt tokens of which 256 cached):
// write, edit, a failing bash and a read of a missing file for a model
// OpenCode gives edit and write; reasoning, apply_patch and bash for a
// "gpt-" model, which it gives apply_patch.
func TestOpenCodeCapturedRuns(t *testing.T) {
	const (
		mockCall = "call_000000000000000000000001"
		ws       = "/tmp/oc/ws/"
		patch    = "*** Begin Patch\n*** Add File: added.txt\n+new\n*** Update File: README.md\n@@\n-a project\n+a patched project\n*** End Patch"
	)
	tests := []struct {
		file    string
		want    []Event
		summary string
	}{
		{"opencode-run.jsonl", []Event{
			{Type: EventToolCall, ID: mockCall, Name: "bash", Input: json.RawMessage(`{"command":"echo fixed > answer.txt"}`)},
			{Type: EventToolResult, ID: mockCall, Name: "bash", Output: "(no output)"},
			{Type: EventCommand, Argv: []string{"bash", "-c", "echo fixed > answer.txt"}, ExitCode: intPtr(0)},
			{Type: EventUsage, InputTokens: 7681, OutputTokens: 20},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			{Type: EventUsage, InputTokens: 7750, OutputTokens: 5},
		}, "done"},
		{"opencode-run-fail.jsonl", []Event{
			{Type: EventToolCall, ID: mockCall, Name: "bash", Input: json.RawMessage(`{"command":"echo out; echo err >&2; exit 3"}`)},
			{Type: EventToolResult, ID: mockCall, Name: "bash", Output: "out\nerr\n"},
			{Type: EventCommand, Argv: []string{"bash", "-c", "echo out; echo err >&2; exit 3"}, ExitCode: intPtr(3), Output: "out\nerr\n"},
			{Type: EventUsage, InputTokens: 7681, OutputTokens: 20},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			{Type: EventUsage, InputTokens: 7752, OutputTokens: 5},
		}, "done"},
		{"opencode-run-401.jsonl", []Event{
			{Type: EventMessage, Role: "error", Text: "Incorrect API key provided: sk-plac****"},
		}, ""},
		{"opencode-edits.jsonl", []Event{
			{Type: EventToolCall, ID: "call_0", Name: "write", Input: json.RawMessage(`{"filePath":"` + ws + `notes.md","content":"hello\n"}`)},
			{Type: EventToolResult, ID: "call_0", Name: "write", Output: "Wrote file successfully."},
			{Type: EventFileChange, Path: ws + "notes.md", Kind: "added"},
			{Type: EventUsage, InputTokens: 1000, OutputTokens: 20},
			{Type: EventToolCall, ID: "call_1", Name: "edit", Input: json.RawMessage(`{"filePath":"` + ws + `notes.md","oldString":"hello","newString":"hello world"}`)},
			{Type: EventToolResult, ID: "call_1", Name: "edit", Output: "Edit applied successfully."},
			{Type: EventFileChange, Path: ws + "notes.md", Kind: "modified"},
			{Type: EventUsage, InputTokens: 1001, OutputTokens: 20},
			{Type: EventToolCall, ID: "call_2", Name: "bash", Input: json.RawMessage(`{"command":"echo out; echo err >&2; exit 3","description":"Fails on purpose"}`)},
			{Type: EventToolResult, ID: "call_2", Name: "bash", Output: "out\nerr\n"},
			{Type: EventCommand, Argv: []string{"bash", "-c", "echo out; echo err >&2; exit 3"}, ExitCode: intPtr(3), Output: "out\nerr\n"},
			{Type: EventUsage, InputTokens: 1002, OutputTokens: 20},
			{Type: EventToolCall, ID: "call_3", Name: "read", Input: json.RawMessage(`{"filePath":"` + ws + `missing.txt"}`)},
			{Type: EventToolResult, ID: "call_3", Name: "read", Output: "File not found: " + ws + "missing.txt", IsError: true},
			{Type: EventUsage, InputTokens: 1003, OutputTokens: 20},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			{Type: EventUsage, InputTokens: 1004, OutputTokens: 20},
		}, "done"},
		{"opencode-patch.jsonl", []Event{
			{Type: EventMessage, Role: "reasoning", Text: "The README needs a patch."},
			{Type: EventToolCall, ID: "call_0", Name: "apply_patch", Input: jsonInput("patchText", patch)},
			{Type: EventToolResult, ID: "call_0", Name: "apply_patch", Output: "Success. Updated the following files:\nA tmp/oc/ws/added.txt\nM tmp/oc/ws/README.md"},
			{Type: EventFileChange, Path: ws + "added.txt", Kind: "added"},
			{Type: EventFileChange, Path: ws + "README.md", Kind: "modified"},
			{Type: EventUsage, InputTokens: 1000, OutputTokens: 20},
			{Type: EventToolCall, ID: "call_1", Name: "bash", Input: json.RawMessage(`{"command":"rm added.txt && echo 'quoted \"x\"'","description":"Removes a file"}`)},
			{Type: EventToolResult, ID: "call_1", Name: "bash", Output: "quoted \"x\"\n"},
			{Type: EventCommand, Argv: []string{"bash", "-c", `rm added.txt && echo 'quoted "x"'`}, ExitCode: intPtr(0), Output: "quoted \"x\"\n"},
			{Type: EventUsage, InputTokens: 1001, OutputTokens: 20},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			{Type: EventUsage, InputTokens: 1002, OutputTokens: 20},
		}, "done"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, p := parseFixture(t, HarnessOpenCode, tt.file)
			if d := cmp.Diff(tt.want, got, jsonValues); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
			if s := p.Summary(); s != tt.summary {
				t.Errorf("summary %q, want %q", s, tt.summary)
			}
		})
	}
}

// Lines the captured runs lack: an error with no message, reasoning
// tokens and cache writes, an empty text part after the answer, a bash
// call OpenCode refused, a killed command, stderr-ish lines.
func TestOpenCodeParserEdges(t *testing.T) {
	lines := []string{
		`{"type":"text","part":{"type":"text","text":"first answer"}}`,
		`{"type":"text","part":{"type":"text","text":"  \n"}}`,
		`{"type":"step_finish","part":{"type":"step-finish","reason":"stop","tokens":{"input":10,"output":5,"reasoning":7,"cache":{"write":3,"read":2}}}}`,
		`{"type":"tool_use","part":{"tool":"bash","callID":"c1","state":{"status":"error","input":{"command":"rm -rf /"},"error":"The user rejected permission to use this specific tool call."}}}`,
		`{"type":"tool_use","part":{"tool":"bash","callID":"c2","state":{"status":"completed","input":{"command":"sleep 999"},"output":"\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 120000 ms.\n</shell_metadata>","metadata":{"output":"","exit":null}}}}`,
		`{"type":"error","error":{"name":"ProviderAuthError"}}`,
		`{"type":"session.idle"}`,
		`! permission requested: bash (rm *); auto-rejecting`,
		``,
	}
	want := []Event{
		{Type: EventMessage, Role: "assistant", Text: "first answer"},
		{Type: EventUsage, InputTokens: 15, OutputTokens: 12},
		{Type: EventToolCall, ID: "c1", Name: "bash", Input: json.RawMessage(`{"command":"rm -rf /"}`)},
		{Type: EventToolResult, ID: "c1", Name: "bash", Output: "The user rejected permission to use this specific tool call.", IsError: true},
		{Type: EventToolCall, ID: "c2", Name: "bash", Input: json.RawMessage(`{"command":"sleep 999"}`)},
		{Type: EventToolResult, ID: "c2", Name: "bash", Output: "\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 120000 ms.\n</shell_metadata>"},
		{Type: EventCommand, Argv: []string{"bash", "-c", "sleep 999"}},
		{Type: EventMessage, Role: "error", Text: "ProviderAuthError"},
		{Type: EventRaw, Stream: "stdout", Line: `{"type":"session.idle"}`},
		{Type: EventRaw, Stream: "stdout", Line: "! permission requested: bash (rm *); auto-rejecting"},
	}
	p := harnesses[HarnessOpenCode].NewParser()
	var got []Event
	for _, l := range lines {
		got = append(got, p.Line(l)...)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if s := p.Summary(); s != "first answer" {
		t.Errorf("summary %q, want the last non-empty answer", s)
	}
}

// The request's endpoint and model reach OpenCode only through its
// config; without them it goes to OpenAI. Its heap is sized for half the
// sandbox's memory (512 MiB when the request sets none). The key stays a reference to
// KeyEnv, so the config never holds the placeholder, let alone a key.
func TestOpenCodeCommandLine(t *testing.T) {
	h := harnesses[HarnessOpenCode]
	wantArgv := []string{"opencode", "run", "--format", "json", "--auto", "--thinking", "--title", "airlock task"}
	for _, tt := range []struct {
		model      *Model
		memoryMB   int64
		base, name string
		ramSize    string
	}{
		{&Model{Name: `m"1`, BaseURL: "https://model.test/v1"}, 2048, "https://model.test/v1", `m"1`, "1073741824"},
		{nil, 0, opencodeAPI, opencodeModel, "536870912"},
		{&Model{BaseURL: "https://model.test/x"}, 0, "https://model.test/x", opencodeModel, "536870912"},
	} {
		req := Request{Prompt: "p", Model: tt.model, Limits: Limits{MemoryMB: tt.memoryMB},
			Env: map[string]string{"OPENCODE_DISABLE_SHARE": "0"}}
		if d := cmp.Diff(wantArgv, h.Argv(req)); d != "" {
			t.Errorf("argv (-want +got):\n%s", d)
		}
		env := h.env(req, "tsk_1")
		var cfg map[string]any
		if err := json.Unmarshal([]byte(env["OPENCODE_CONFIG_CONTENT"]), &cfg); err != nil {
			t.Fatalf("OPENCODE_CONFIG_CONTENT %q: %v", env["OPENCODE_CONFIG_CONTENT"], err)
		}
		want := map[string]any{
			"provider": map[string]any{"airlock": map[string]any{
				"npm": "@ai-sdk/openai-compatible", "name": "Airlock",
				"options": map[string]any{"baseURL": tt.base, "apiKey": "{env:" + h.KeyEnv + "}"},
				"models":  map[string]any{tt.name: map[string]any{"name": tt.name}},
			}},
			"enabled_providers": []any{"airlock"},
			"model":             "airlock/" + tt.name, "small_model": "airlock/" + tt.name,
			"permission": "allow", "autoupdate": false, "share": "disabled", "snapshot": false,
		}
		if d := cmp.Diff(want, cfg); d != "" {
			t.Errorf("config for %+v (-want +got):\n%s", tt.model, d)
		}
		delete(env, "OPENCODE_CONFIG_CONTENT")
		wantEnv := map[string]string{
			"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_SHARE": "0",
			"BUN_JSC_forceRAMSize": tt.ramSize,
			"AIRLOCK_TASK_ID":      "tsk_1", "AIRLOCK_TASK_PROMPT": "p",
		}
		if d := cmp.Diff(wantEnv, env); d != "" {
			t.Errorf("env (-want +got):\n%s", d)
		}
	}
}
