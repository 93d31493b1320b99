package tasks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The sample lines are written from the harnesses' documented output
// formats (codex exec --json; claude -p --output-format stream-json).
// jsonValues compares inputs as JSON values, not bytes: the CLIs escape
// differently from encoding/json.
var jsonValues = cmp.Transformer("json", func(m json.RawMessage) any {
	var v any
	json.Unmarshal(m, &v)
	return v
})

// parseFixture runs harness's parser over testdata/file, the stdout of a
// real run, a line at a time.
func parseFixture(t *testing.T, harness, file string) ([]Event, Parser) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	p := harnesses[harness].NewParser()
	var got []Event
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		got = append(got, p.Line(l)...)
	}
	return got, p
}

func TestParsers(t *testing.T) {
	tests := []struct {
		name, harness string
		lines         []string
		want          []Event
		summary       string
	}{
		{
			name: "generic plain and normalized", harness: HarnessGeneric,
			lines: []string{
				"hello",
				"",
				`{"type":"tool_call","name":"write","input":{"path":"answer.txt"}}`,
				`{"type":"task.finished","status":"succeeded"}`,
				`{"type":"message","text":"done"}`,
				`{"not":"an event"}`,
			},
			want: []Event{
				{Type: EventMessage, Role: "assistant", Text: "hello"},
				{Type: EventToolCall, Name: "write", Input: json.RawMessage(`{"path":"answer.txt"}`)},
				{Type: EventMessage, Role: "assistant", Text: `{"type":"task.finished","status":"succeeded"}`},
				{Type: EventMessage, Role: "assistant", Text: "done"},
				{Type: EventMessage, Role: "assistant", Text: `{"not":"an event"}`},
			},
			summary: `{"not":"an event"}`,
		},
		{
			name: "codex", harness: HarnessCodex,
			lines: []string{
				`{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}`,
				`{"type":"turn.started"}`,
				`{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Writing the answer**"}}`,
				`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'echo fixed > answer.txt'","aggregated_output":"","exit_code":null,"status":"in_progress"}}`,
				`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'echo fixed > answer.txt'","aggregated_output":"","exit_code":0,"status":"completed"}}`,
				`{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"/home/user/work/a.go","kind":"update"},{"path":"b.go","kind":"add"}],"status":"completed"}}`,
				`{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Wrote answer.txt."}}`,
				`{"type":"turn.completed","usage":{"input_tokens":2400,"cached_input_tokens":1024,"output_tokens":120}}`,
				`Reading prompt from stdin...`,
			},
			want: []Event{
				{Type: EventMessage, Role: "reasoning", Text: "**Writing the answer**"},
				{Type: EventToolCall, ID: "item_1", Name: "shell", Input: json.RawMessage(`{"command":"bash -lc 'echo fixed \u003e answer.txt'"}`)},
				{Type: EventToolResult, ID: "item_1", Name: "shell"},
				{Type: EventCommand, Argv: []string{"bash", "-lc", "echo fixed > answer.txt"}, ExitCode: intPtr(0)},
				{Type: EventFileChange, Path: "/home/user/work/a.go", Kind: "modified"},
				{Type: EventFileChange, Path: "b.go", Kind: "added"},
				{Type: EventMessage, Role: "assistant", Text: "Wrote answer.txt."},
				{Type: EventUsage, InputTokens: 2400, OutputTokens: 120},
				{Type: EventRaw, Stream: "stdout", Line: "Reading prompt from stdin..."},
			},
			summary: "Wrote answer.txt.",
		},
		{
			name: "codex failure", harness: HarnessCodex,
			lines: []string{
				`{"type":"error","message":"stream disconnected before completion"}`,
				`{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}`,
				`{"type":"item.completed","item":{"id":"item_4","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}`,
			},
			want: []Event{
				{Type: EventMessage, Role: "error", Text: "stream disconnected before completion"},
				{Type: EventMessage, Role: "error", Text: "unexpected status 401 Unauthorized"},
				{Type: EventToolResult, ID: "item_4", Name: "shell", IsError: true},
				{Type: EventCommand, Argv: []string{"false"}, ExitCode: intPtr(1)},
			},
		},
		{
			name: "claude", harness: HarnessClaude,
			lines: []string{
				`{"type":"system","subtype":"init","cwd":"/home/user/work","session_id":"s1","tools":["Bash","Write"],"model":"claude-sonnet-4-5"}`,
				`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"I'll write it."},{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"echo fixed > answer.txt"}}]},"session_id":"s1"}`,
				`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"","is_error":false}]},"session_id":"s1"}`,
				`{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_02","name":"Write","input":{"file_path":"/home/user/work/notes.md","content":"x"}}]}}`,
				`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_02","content":[{"type":"text","text":"File created"}]}]}}`,
				`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done."}]}}`,
				`{"type":"result","subtype":"success","is_error":false,"duration_ms":2100,"num_turns":3,"result":"Done.","session_id":"s1","total_cost_usd":0.01,"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":300,"output_tokens":40}}`,
			},
			want: []Event{
				{Type: EventMessage, Role: "assistant", Text: "I'll write it."},
				{Type: EventToolCall, ID: "toolu_01", Name: "Bash", Input: json.RawMessage(`{"command":"echo fixed > answer.txt"}`)},
				{Type: EventToolResult, ID: "toolu_01", Name: "Bash"},
				{Type: EventCommand, Argv: []string{"bash", "-c", "echo fixed > answer.txt"}, ExitCode: intPtr(0)},
				{Type: EventToolCall, ID: "toolu_02", Name: "Write", Input: json.RawMessage(`{"file_path":"/home/user/work/notes.md","content":"x"}`)},
				{Type: EventToolResult, ID: "toolu_02", Name: "Write", Output: "File created"},
				{Type: EventFileChange, Path: "/home/user/work/notes.md", Kind: "modified"},
				{Type: EventMessage, Role: "assistant", Text: "Done."},
				{Type: EventUsage, InputTokens: 510, OutputTokens: 40},
			},
			summary: "Done.",
		},
		{
			name: "claude error result", harness: HarnessClaude,
			lines: []string{
				`{"type":"result","subtype":"error_during_execution","is_error":true,"result":"API Error: 401"}`,
				`not json at all`,
			},
			want: []Event{
				{Type: EventMessage, Role: "error", Text: "API Error: 401"},
				{Type: EventRaw, Stream: "stdout", Line: "not json at all"},
			},
			summary: "API Error: 401",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := harnesses[tt.harness].NewParser()
			var got []Event
			for _, l := range tt.lines {
				got = append(got, p.Line(l)...)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
			if s := p.Summary(); s != tt.summary {
				t.Errorf("summary %q, want %q", s, tt.summary)
			}
		})
	}
}

func TestShellWords(t *testing.T) {
	for in, want := range map[string][]string{
		`bash -lc 'echo fixed > answer.txt'`: {"bash", "-lc", "echo fixed > answer.txt"},
		`echo "a \"b\" $x" c\ d`:             {"echo", `a "b" $x`, "c d"},
		`  ls   -la `:                        {"ls", "-la"},
		`echo 'open`:                         {`echo 'open`},
		``:                                   nil,
	} {
		if d := cmp.Diff(want, shellWords(in)); d != "" {
			t.Errorf("shellWords(%q) (-want +got):\n%s", in, d)
		}
	}
}

func TestCommandLines(t *testing.T) {
	req := Request{Prompt: "p", Model: &Model{Name: "m1", BaseURL: "https://model.test/v1"}, Env: map[string]string{"A": "1"}}
	for _, tt := range []struct {
		harness string
		argv    []string
		env     map[string]string
	}{
		{HarnessCodex, []string{"codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
			"-c", `model_provider="airlock"`,
			"-c", `model_providers.airlock.name="Airlock"`,
			"-c", `model_providers.airlock.base_url="https://model.test/v1"`,
			"-c", `model_providers.airlock.env_key="OPENAI_API_KEY"`,
			"-c", `model_providers.airlock.wire_api="responses"`,
			"-c", "model_providers.airlock.supports_websockets=false",
			"-c", "features.plugins=false",
			"-c", "analytics.enabled=false",
			"--model", "m1", "-"},
			// Codex ignores OPENAI_BASE_URL: the base URL is on the command line.
			map[string]string{"A": "1", "AIRLOCK_TASK_ID": "tsk_1", "AIRLOCK_TASK_PROMPT": "p"}},
		{HarnessClaude, []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--model", "m1"},
			map[string]string{"A": "1", "ANTHROPIC_BASE_URL": "https://model.test/v1", "AIRLOCK_TASK_ID": "tsk_1", "AIRLOCK_TASK_PROMPT": "p",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}},
	} {
		h := harnesses[tt.harness]
		if d := cmp.Diff(tt.argv, h.Argv(req)); d != "" {
			t.Errorf("%s argv (-want +got):\n%s", tt.harness, d)
		}
		if d := cmp.Diff(tt.env, h.env(req, "tsk_1")); d != "" {
			t.Errorf("%s env (-want +got):\n%s", tt.harness, d)
		}
	}
}

// Codex must read its key from the variable the tenant's secret is bound
// to, or the egress proxy's key never reaches the model.
func TestCodexKeyEnv(t *testing.T) {
	h := harnesses[HarnessCodex]
	want := `model_providers.airlock.env_key="` + h.KeyEnv + `"`
	argv := codexArgv(Request{})
	if !slices.Contains(argv, want) {
		t.Errorf("codex argv %q lacks %s", argv, want)
	}
	if !slices.Contains(argv, `model_providers.airlock.base_url="https://api.openai.com/v1"`) {
		t.Errorf("codex argv %q: no default base URL", argv)
	}
}

func TestTOMLString(t *testing.T) {
	for in, want := range map[string]string{
		"https://model.test/v1":       `"https://model.test/v1"`,
		`https://x.test/"a"\b`:        `"https://x.test/\"a\"\\b"`,
		"https://x.test/?a=1&b=<2>\n": `"https://x.test/?a=1\u0026b=\u003c2\u003e\n"`,
	} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
}

// The fixtures are the stdout of real runs (codex 0.169.0, Claude Code
// 2.1.328) against e2e/modelmock, whose script runs one shell command and
// then answers "done"; the -fail runs' command was
// `echo out; echo err >&2; exit 3`. codex-exec ran codex's default model
// (code mode: the shell through a JavaScript exec tool), codex-exec-fail
// a model codex has no metadata for (a warning, then plain tools).
func TestParsersOnCapturedRuns(t *testing.T) {
	const (
		codexOK   = `/bin/bash -lc 'echo fixed > answer.txt'`
		codexFail = `/bin/bash -lc 'echo out; echo err >&2; exit 3'`
		claudeID  = "toolu_000000000000000000000001"
		metaWarn  = "Model metadata for `gpt-5` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."
	)
	tests := []struct {
		file, harness string
		want          []Event
	}{
		{"codex-exec.jsonl", HarnessCodex, []Event{
			{Type: EventToolCall, ID: "item_0", Name: "shell", Input: jsonInput("command", codexOK)},
			{Type: EventToolResult, ID: "item_0", Name: "shell"},
			{Type: EventCommand, Argv: []string{"/bin/bash", "-lc", "echo fixed > answer.txt"}, ExitCode: intPtr(0)},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			{Type: EventUsage, InputTokens: 27806, OutputTokens: 25},
		}},
		{"codex-exec-fail.jsonl", HarnessCodex, []Event{
			{Type: EventMessage, Role: "error", Text: metaWarn},
			{Type: EventToolCall, ID: "item_1", Name: "shell", Input: jsonInput("command", codexFail)},
			{Type: EventToolResult, ID: "item_1", Name: "shell", Output: "out\nerr\n", IsError: true},
			{Type: EventCommand, Argv: []string{"/bin/bash", "-lc", "echo out; echo err >&2; exit 3"}, ExitCode: intPtr(3), Output: "out\nerr\n"},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			{Type: EventUsage, InputTokens: 19889, OutputTokens: 25},
		}},
		{"claude-stream.jsonl", HarnessClaude, []Event{
			{Type: EventToolCall, ID: claudeID, Name: "Bash", Input: json.RawMessage(`{"command":"echo fixed > answer.txt"}`)},
			{Type: EventToolResult, ID: claudeID, Name: "Bash", Output: "(Bash completed with no output)"},
			{Type: EventCommand, Argv: []string{"bash", "-c", "echo fixed > answer.txt"}, ExitCode: intPtr(0)},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			{Type: EventUsage, InputTokens: 43931, OutputTokens: 25},
		}},
		{"claude-stream-fail.jsonl", HarnessClaude, []Event{
			{Type: EventToolCall, ID: claudeID, Name: "Bash", Input: json.RawMessage(`{"command":"echo out; echo err >&2; exit 3"}`)},
			{Type: EventToolResult, ID: claudeID, Name: "Bash", Output: "Exit code 3\nout\nerr", IsError: true},
			{Type: EventCommand, Argv: []string{"bash", "-c", "echo out; echo err >&2; exit 3"}, ExitCode: intPtr(3), Output: "out\nerr"},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			{Type: EventUsage, InputTokens: 43930, OutputTokens: 25},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, p := parseFixture(t, tt.harness, tt.file)
			if d := cmp.Diff(tt.want, got, jsonValues); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
			if s := p.Summary(); s != "done" {
				t.Errorf("summary %q, want done", s)
			}
		})
	}
}

func TestBashOutcome(t *testing.T) {
	for _, tt := range []struct {
		text       string
		isError    bool
		toolResult string
		code       int
		out        string
	}{
		{"(Bash completed with no output)", false, `{"stdout":"","stderr":"","interrupted":false}`, 0, ""},
		{"a\nb", false, `{"stdout":"a","stderr":"b"}`, 0, "a\nb"},
		{"a", false, ``, 0, "a"},
		{"Exit code 2\nno such file", true, `"Error: Exit code 2\nno such file"`, 2, "no such file"},
		{"Command timed out", true, ``, 1, "Command timed out"},
	} {
		code, out := bashOutcome(tt.text, tt.isError, json.RawMessage(tt.toolResult))
		if code != tt.code || out != tt.out {
			t.Errorf("bashOutcome(%q, %v, %s) = %d, %q; want %d, %q", tt.text, tt.isError, tt.toolResult, code, out, tt.code, tt.out)
		}
	}
}

func FuzzParsers(f *testing.F) {
	f.Add(`{"type":"item.completed","item":{"type":"command_execution","command":"a 'b"}}`)
	f.Add(`{"type":"assistant","message":{"content":[{"type":"tool_result","content":[1]}]}}`)
	f.Add(`{"type":"message","input":{}}`)
	f.Fuzz(func(t *testing.T, line string) {
		for _, name := range HarnessNames() {
			p := harnesses[name].NewParser()
			for _, e := range p.Line(line) {
				if e.Type == EventStarted || e.Type == EventFinished {
					t.Fatalf("%s parser produced %s from %q", name, e.Type, line)
				}
				e.clip()
				if _, err := json.Marshal(e); err != nil {
					t.Fatalf("%s event does not encode: %v", name, err)
				}
			}
		}
	})
}
