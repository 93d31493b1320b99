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

// The sample lines follow Gemini CLI 0.61's stream-json events.
func TestGeminiParser(t *testing.T) {
	tests := []struct {
		name    string
		lines   []string
		want    []Event
		summary string
	}{
		{
			name: "deltas, tools, usage",
			lines: []string{
				`{"type":"init","timestamp":"t","session_id":"s1","model":"gemini-2.5-pro"}`,
				`{"type":"message","role":"user","content":"fix it"}`,
				`{"type":"message","role":"assistant","content":"I'll ","delta":true}`,
				`{"type":"message","role":"assistant","content":"look.","delta":true}`,
				`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"c1","parameters":{"command":"ls -a"}}`,
				`{"type":"tool_result","tool_id":"c1","status":"success","output":".\n..\nREADME.md"}`,
				`{"type":"tool_use","tool_name":"write_file","tool_id":"c2","parameters":{"file_path":"/home/user/work/a.go","content":"x"}}`,
				`{"type":"tool_result","tool_id":"c2","status":"success","output":"diff"}`,
				`{"type":"tool_use","tool_name":"replace","tool_id":"c3","parameters":{"file_path":"b.go","old_string":"a","new_string":"b"}}`,
				`{"type":"tool_result","tool_id":"c3","status":"error","error":{"type":"edit_no_occurrence_found","message":"0 occurrences"}}`,
				`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"c4","parameters":{"command":"false"}}`,
				`{"type":"tool_result","tool_id":"c4","status":"success","output":"Command exited with code: 1"}`,
				`{"type":"error","severity":"warning","message":"Loop detected"}`,
				`{"type":"message","role":"assistant","content":"Done.","delta":true}`,
				`{"type":"result","status":"success","stats":{"total_tokens":190,"input_tokens":100,"output_tokens":60,"cached":40,"input":60,"duration_ms":5,"tool_calls":4}}`,
				`Loaded cached credentials.`,
			},
			want: []Event{
				{Type: EventMessage, Role: "assistant", Text: "I'll look."},
				{Type: EventToolCall, ID: "c1", Name: "run_shell_command", Input: json.RawMessage(`{"command":"ls -a"}`)},
				{Type: EventToolResult, ID: "c1", Name: "run_shell_command", Output: ".\n..\nREADME.md"},
				{Type: EventCommand, Argv: []string{"bash", "-c", "ls -a"}, Output: ".\n..\nREADME.md"},
				{Type: EventToolCall, ID: "c2", Name: "write_file", Input: json.RawMessage(`{"file_path":"/home/user/work/a.go","content":"x"}`)},
				{Type: EventToolResult, ID: "c2", Name: "write_file", Output: "diff"},
				{Type: EventFileChange, Path: "/home/user/work/a.go", Kind: "modified"},
				{Type: EventToolCall, ID: "c3", Name: "replace", Input: json.RawMessage(`{"file_path":"b.go","old_string":"a","new_string":"b"}`)},
				{Type: EventToolResult, ID: "c3", Name: "replace", Output: "0 occurrences", IsError: true},
				{Type: EventToolCall, ID: "c4", Name: "run_shell_command", Input: json.RawMessage(`{"command":"false"}`)},
				{Type: EventToolResult, ID: "c4", Name: "run_shell_command", Output: "Command exited with code: 1"},
				{Type: EventCommand, Argv: []string{"bash", "-c", "false"}, ExitCode: intPtr(1)},
				{Type: EventMessage, Role: "error", Text: "Loop detected"},
				{Type: EventMessage, Role: "assistant", Text: "Done."},
				// 90 output tokens: 60 of the answers, 30 of thinking.
				{Type: EventUsage, InputTokens: 100, OutputTokens: 90},
				{Type: EventRaw, Stream: "stdout", Line: "Loaded cached credentials."},
			},
			summary: "Done.",
		},
		{
			name: "error result, no tokens",
			lines: []string{
				`{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session turns"},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0}}`,
			},
			want: []Event{{Type: EventMessage, Role: "error", Text: "Reached max session turns"}},
		},
		{
			// A run cut short: the text streamed so far is its answer.
			name:    "no result",
			lines:   []string{`{"type":"message","role":"assistant","content":"half","delta":true}`},
			summary: "half",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := harnesses[HarnessGemini].NewParser()
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

// The fixtures are the stdout of real runs of Gemini CLI 0.61.0, with
// this harness's command line, against e2e/modelmock with a fixed usage
// (1000 input tokens of which 400 cached, 30 output of which 10 thinking,
// each call): gemini-stream's command was the mock's default, the -fail
// run's `echo out; echo err >&2; exit 3` (its exit code reaches only the
// model), and -apierror's model API answered 401.
func TestGeminiParserOnCapturedRuns(t *testing.T) {
	const id = "run_shell_command__run_shell_command_"
	call := func(n, cmd string) Event {
		return Event{Type: EventToolCall, ID: id + n, Name: "run_shell_command", Input: jsonInput("command", cmd)}
	}
	usage := Event{Type: EventUsage, InputTokens: 2000, OutputTokens: 60}
	tests := []struct {
		file    string
		want    []Event
		summary string
	}{
		{"gemini-stream.jsonl", []Event{
			call("1796579914430_0", "echo fixed > answer.txt"),
			{Type: EventToolResult, ID: id + "1796579914430_0", Name: "run_shell_command"},
			{Type: EventCommand, Argv: []string{"bash", "-c", "echo fixed > answer.txt"}, ExitCode: intPtr(0)},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			usage,
		}, "done"},
		{"gemini-stream-fail.jsonl", []Event{
			call("1796579925984_0", "echo out; echo err >&2; exit 3"),
			{Type: EventToolResult, ID: id + "1796579925984_0", Name: "run_shell_command", Output: "out\nerr"},
			{Type: EventCommand, Argv: []string{"bash", "-c", "echo out; echo err >&2; exit 3"}, Output: "out\nerr"},
			{Type: EventMessage, Role: "assistant", Text: "done"},
			usage,
		}, "done"},
		{"gemini-stream-apierror.jsonl", []Event{
			{Type: EventMessage, Role: "error", Text: `[API Error: {"error":{"code":401,"message":"API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED"}}]`},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, p := parseFixture(t, HarnessGemini, tt.file)
			if d := cmp.Diff(tt.want, got, jsonValues); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
			if s := p.Summary(); s != tt.summary {
				t.Errorf("summary %q, want %q", s, tt.summary)
			}
		})
	}
}

func TestGeminiCommandLine(t *testing.T) {
	h := harnesses[HarnessGemini]
	req := Request{Prompt: "p", Model: &Model{Name: "gemini-2.5-pro", BaseURL: "https://model.test/gemini"}, Env: map[string]string{"A": "1"}}
	argv := h.Argv(req)
	want := []string{"gemini", "--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust", "--model", "gemini-2.5-pro"}
	if len(argv) < 3 || argv[0] != "sh" || argv[1] != "-c" {
		t.Fatalf("argv %q: not sh -c SCRIPT", argv)
	}
	if d := cmp.Diff(want, argv[3:]); d != "" {
		t.Errorf("argv after the script (-want +got):\n%s", d)
	}
	if got := h.Argv(Request{}); len(got) != len(argv)-2 {
		t.Errorf("argv with no model %q", got)
	}
	env := map[string]string{"A": "1", "GOOGLE_GEMINI_BASE_URL": "https://model.test/gemini", "GEMINI_CLI_NO_RELAUNCH": "true",
		"AIRLOCK_TASK_ID": "tsk_1", "AIRLOCK_TASK_PROMPT": "p"}
	if d := cmp.Diff(env, h.env(req, "tsk_1")); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
	var settings struct {
		Security struct {
			Auth struct{ SelectedType string }
		}
		Privacy   struct{ UsageStatisticsEnabled *bool }
		Telemetry struct{ Enabled *bool }
	}
	if err := json.Unmarshal([]byte(geminiSettings), &settings); err != nil {
		t.Fatal(err)
	}
	if settings.Security.Auth.SelectedType != "gemini-api-key" || settings.Privacy.UsageStatisticsEnabled == nil ||
		*settings.Privacy.UsageStatisticsEnabled || settings.Telemetry.Enabled == nil || *settings.Telemetry.Enabled {
		t.Errorf("settings %s", geminiSettings)
	}

	// The shell writes the settings, then runs the CLI with the rest of
	// the command line: here a "gemini" that shows what it got.
	dir := t.TempDir()
	fake := "#!/bin/sh\nprintf '%s\\n' \"$@\"\ncat \"$HOME/.gemini/settings.json\"\n"
	if err := os.WriteFile(filepath.Join(dir, "gemini"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "HOME=" + filepath.Join(dir, "home")}
	out, err := cmd.CombinedOutput()
	if wantOut := strings.Join(want[1:], "\n") + "\n" + geminiSettings + "\n"; err != nil || string(out) != wantOut {
		t.Errorf("the command line ran: %v\n%s\nwant:\n%s", err, out, wantOut)
	}
}

func TestGeminiShellOutcome(t *testing.T) {
	for _, tt := range []struct {
		out   string
		isErr bool
		code  *int
		text  string
	}{
		{"", false, intPtr(0), ""},
		{"Command exited with code: 127", false, intPtr(127), ""},
		{"hello", false, nil, "hello"},
		{"Command terminated by signal: SIGKILL", false, nil, "Command terminated by signal: SIGKILL"},
		{"spawn bash ENOENT", true, nil, "spawn bash ENOENT"},
	} {
		code, text := geminiShellOutcome(tt.out, tt.isErr)
		if d := cmp.Diff(tt.code, code); d != "" || text != tt.text {
			t.Errorf("geminiShellOutcome(%q, %v) = %v, %q; want %v, %q", tt.out, tt.isErr, code, text, tt.code, tt.text)
		}
	}
}
