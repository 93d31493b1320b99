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

// The fixtures are the stdout of real runs of pi 0.73.1 (its command line
// from piArgv and piEnvFor, with a base URL): pi-json against
// e2e/modelmock (one shell command, then "done", on a model id pi does not
// know); pi-json-tools against a scripted Anthropic API whose turns were
// thinking and a write, an edit, a bash command, then text, with cached
// input; pi-json-fail against one whose command exits 3 and whose next
// call answers 529 Overloaded on each of pi's three retries.
func TestPiParserOnCapturedRuns(t *testing.T) {
	const (
		okID       = "toolu_000000000000000000000001"
		overloaded = `529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	)
	fail := Event{Type: EventMessage, Role: "error", Text: overloaded}
	tests := []struct {
		file             string
		want             []Event
		summary, failure string
	}{
		{"pi-json.jsonl", []Event{
			{Type: EventUsage, InputTokens: 1403, OutputTokens: 20},
			{Type: EventToolCall, ID: okID, Name: "bash", Input: json.RawMessage(`{"command":"echo fixed > answer.txt; env > env.txt"}`)},
			{Type: EventToolResult, ID: okID, Name: "bash", Output: "(no output)"},
			{Type: EventCommand, Argv: []string{"bash", "-c", "echo fixed > answer.txt; env > env.txt"}, ExitCode: intPtr(0)},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			{Type: EventUsage, InputTokens: 1479, OutputTokens: 5},
		}, "done", ""},
		{"pi-json-tools.jsonl", []Event{
			{Type: EventMessage, Role: "reasoning", Text: "I should write the notes first."},
			{Type: EventUsage, InputTokens: 100 + 1000 + 50, OutputTokens: 30},
			{Type: EventToolCall, ID: "toolu_00", Name: "write", Input: json.RawMessage(`{"path":"notes.md","content":"one\ntwo\n"}`)},
			{Type: EventToolResult, ID: "toolu_00", Name: "write", Output: "Successfully wrote 8 bytes to notes.md"},
			{Type: EventFileChange, Path: "notes.md", Kind: "modified"},
			{Type: EventUsage, InputTokens: 101 + 1000, OutputTokens: 31},
			{Type: EventToolCall, ID: "toolu_01", Name: "edit", Input: json.RawMessage(`{"path":"notes.md","edits":[{"oldText":"two","newText":"three"}]}`)},
			{Type: EventToolResult, ID: "toolu_01", Name: "edit", Output: "Successfully replaced 1 block(s) in notes.md."},
			{Type: EventFileChange, Path: "notes.md", Kind: "modified"},
			{Type: EventUsage, InputTokens: 102 + 1000, OutputTokens: 32},
			{Type: EventToolCall, ID: "toolu_02", Name: "bash", Input: json.RawMessage(`{"command":"cat notes.md && echo 'it''s done'"}`)},
			{Type: EventToolResult, ID: "toolu_02", Name: "bash", Output: "one\nthree\nits done\n"},
			{Type: EventCommand, Argv: []string{"bash", "-c", "cat notes.md && echo 'it''s done'"}, ExitCode: intPtr(0), Output: "one\nthree\nits done\n"},
			{Type: EventMessage, Role: "assistant", Text: "Wrote notes.md and checked it."},
			{Type: EventUsage, InputTokens: 103 + 1000, OutputTokens: 33},
		}, "Wrote notes.md and checked it.", ""},
		{"pi-json-fail.jsonl", []Event{
			{Type: EventUsage, InputTokens: 100 + 1000 + 50, OutputTokens: 30},
			{Type: EventToolCall, ID: "toolu_00", Name: "bash", Input: json.RawMessage(`{"command":"echo partial; echo oops >&2; exit 3"}`)},
			{Type: EventToolResult, ID: "toolu_00", Name: "bash", Output: "partial\noops\n\n\nCommand exited with code 3", IsError: true},
			{Type: EventCommand, Argv: []string{"bash", "-c", "echo partial; echo oops >&2; exit 3"}, ExitCode: intPtr(3), Output: "partial\noops\n"},
			fail, fail, fail, fail, // the call, then pi's three retries
		}, "", overloaded},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, p := parseFixture(t, HarnessPi, tt.file)
			if d := cmp.Diff(tt.want, got, jsonValues); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
			if s := p.Summary(); s != tt.summary {
				t.Errorf("summary %q, want %q", s, tt.summary)
			}
			if f := p.(*piParser).Failure(); f != tt.failure {
				t.Errorf("failure %q, want %q", f, tt.failure)
			}
		})
	}
}

func TestPiParserLines(t *testing.T) {
	p := harnesses[HarnessPi].NewParser().(*piParser)
	for _, tt := range []struct {
		line    string
		want    []Event
		failure string
	}{
		// Not pi's JSON: kept raw.
		{"Warning: something", []Event{{Type: EventRaw, Stream: "stdout", Line: "Warning: something"}}, ""},
		{`{"type":"something_new","x":1}`, []Event{{Type: EventRaw, Stream: "stdout", Line: `{"type":"something_new","x":1}`}}, ""},
		// An aborted call with no message still fails the run.
		{`{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"aborted"}}`,
			[]Event{{Type: EventMessage, Role: "error", Text: "the model request aborted"}}, "the model request aborted"},
		// A later call that succeeds (a retry) clears the failure.
		{`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop"}}`,
			[]Event{{Type: EventMessage, Role: "assistant", Text: "ok"}}, ""},
		{`{"type":"compaction_end","reason":"overflow","aborted":false,"willRetry":false,"errorMessage":"too big"}`,
			[]Event{{Type: EventMessage, Role: "error", Text: "compaction: too big"}}, ""},
		// A bash call whose args failed validation ran no command.
		{`{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{}}`,
			[]Event{{Type: EventToolCall, ID: "c1", Name: "bash", Input: json.RawMessage(`{}`)}}, ""},
		{`{"type":"tool_execution_end","toolCallId":"c1","toolName":"bash","result":{"content":[{"type":"text","text":"Validation failed"}]},"isError":true}`,
			[]Event{{Type: EventToolResult, ID: "c1", Name: "bash", Output: "Validation failed", IsError: true}}, ""},
		// A failed write changed nothing.
		{`{"type":"tool_execution_start","toolCallId":"c2","toolName":"write","args":{"path":"a"}}`,
			[]Event{{Type: EventToolCall, ID: "c2", Name: "write", Input: json.RawMessage(`{"path":"a"}`)}}, ""},
		{`{"type":"tool_execution_end","toolCallId":"c2","toolName":"write","result":{"content":[{"type":"text","text":"EACCES"}]},"isError":true}`,
			[]Event{{Type: EventToolResult, ID: "c2", Name: "write", Output: "EACCES", IsError: true}}, ""},
	} {
		if d := cmp.Diff(tt.want, p.Line(tt.line)); d != "" {
			t.Errorf("Line(%s) (-want +got):\n%s", tt.line, d)
		}
		if f := p.Failure(); f != tt.failure {
			t.Errorf("after %s: failure %q, want %q", tt.line, f, tt.failure)
		}
	}
	if len(p.args) != 0 {
		t.Errorf("args of finished calls kept: %v", p.args)
	}
}

func TestPiBashOutcome(t *testing.T) {
	for _, tt := range []struct {
		text    string
		isError bool
		code    *int
		out     string
	}{
		{"(no output)", false, intPtr(0), ""},
		{"a\n", false, intPtr(0), "a\n"},
		{"Command exited with code 2", true, intPtr(2), ""},
		{"a\n\nb\n\n\nCommand exited with code 127", true, intPtr(127), "a\n\nb\n"},
		{"partial\n\nCommand timed out after 5 seconds", true, nil, "partial\n\nCommand timed out after 5 seconds"},
		{"Command aborted", true, nil, "Command aborted"},
	} {
		code, out := piBashOutcome(tt.text, tt.isError)
		if !cmp.Equal(code, tt.code) || out != tt.out {
			t.Errorf("piBashOutcome(%q, %v) = %v, %q; want %v, %q", tt.text, tt.isError, code, out, tt.code, tt.out)
		}
	}
}

func TestPiCommandLine(t *testing.T) {
	h := harnesses[HarnessPi]
	base := map[string]string{"PI_OFFLINE": "1", "AIRLOCK_TASK_ID": "tsk_1", "AIRLOCK_TASK_PROMPT": "p"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tt := range []struct {
		name  string
		model *Model
		argv  []string
		env   map[string]string
	}{
		{"no model", nil, []string{"pi", "-p", "--mode", "json"}, base},
		{"name", &Model{Name: "claude-sonnet-4-5"},
			[]string{"pi", "-p", "--mode", "json", "--provider", "anthropic", "--model", "claude-sonnet-4-5"}, base},
		{"provider", &Model{Provider: "OpenAI", Name: "gpt-5.4"},
			[]string{"pi", "-p", "--mode", "json", "--provider", "openai", "--model", "gpt-5.4"}, base},
		{"base URL", &Model{BaseURL: "https://model.test/x", Name: "m1"},
			[]string{"sh", "-c", piWriteModels, "pi", "-p", "--mode", "json", "--provider", "anthropic", "--model", "m1"},
			with(piModelsEnv, `{"providers":{"anthropic":{"baseUrl":"https://model.test/x"}}}`)},
		{"base URL, provider, no name", &Model{BaseURL: "https://model.test/x", Provider: "openai"},
			[]string{"sh", "-c", piWriteModels, "pi", "-p", "--mode", "json"},
			with(piModelsEnv, `{"providers":{"openai":{"baseUrl":"https://model.test/x"}}}`)},
	} {
		req := Request{Prompt: "p", Model: tt.model}
		if d := cmp.Diff(tt.argv, h.Argv(req)); d != "" {
			t.Errorf("%s: argv (-want +got):\n%s", tt.name, d)
		}
		if d := cmp.Diff(tt.env, h.env(req, "tsk_1")); d != "" {
			t.Errorf("%s: env (-want +got):\n%s", tt.name, d)
		}
	}
}

// The wrapper must leave pi's models.json holding the request's config
// and run pi with its arguments intact, in a home that has no .pi yet.
func TestPiWriteModels(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	bin, home := t.TempDir(), t.TempDir()
	// A stand-in pi prints its arguments, one a line.
	os.WriteFile(filepath.Join(bin, "pi"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755)
	req := Request{Model: &Model{BaseURL: "https://model.test/a b'c", Name: "it's a model"}}
	argv := harnesses[HarnessPi].Argv(req)
	cmd := exec.Command(sh, argv[1:]...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home, piModelsEnv + "=" + piEnvFor(req)[piModelsEnv]}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
	if want := strings.Join(argv[4:], "\n") + "\n"; string(out) != want {
		t.Errorf("pi got args %q, want %q", out, want)
	}
	b, err := os.ReadFile(filepath.Join(home, ".pi", "agent", "models.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Providers map[string]struct {
			BaseURL string `json:"baseUrl"`
		} `json:"providers"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.Providers["anthropic"].BaseURL != req.Model.BaseURL {
		t.Errorf("models.json %s (%v)", b, err)
	}
}
