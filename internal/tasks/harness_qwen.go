package tasks

import (
	"encoding/json"
	"path"
	"strconv"
	"strings"
)

// qwenHarness runs Qwen Code against an OpenAI-compatible API. It reads
// OPENAI_API_KEY and OPENAI_BASE_URL; with no base URL it calls DashScope
// (https://dashscope.aliyuncs.com/compatible-mode/v1, model qwen3.7-max
// unless the request names one), whatever the model. The package says
// Node >=22, but headless it runs on the template's Node 20: the newer
// APIs it calls (Promise.withResolvers, process.getBuiltinModule) are in
// its interactive UI, which a task never starts.
var qwenHarness = Harness{
	Name:       HarnessQwen,
	Template:   "harness-qwen",
	Package:    "@qwen-code/qwen-code@0.24.4",
	KeyEnv:     "OPENAI_API_KEY",
	BaseURLEnv: "OPENAI_BASE_URL",
	Hosts:      []string{"dashscope.aliyuncs.com"},
	Env:        qwenEnv(),
	Argv:       qwenArgv,
	NewParser:  func() Parser { return &qwenParser{calls: map[string]qwenCall{}} },
}

// qwenArgv is Qwen Code's headless command line. It runs headless
// because stdin is not a terminal, reading the prompt from it (-p is
// deprecated, and followed by a flag is an empty prompt anyway).
// --auth-type openai is explicit: from the environment alone Qwen Code
// picks it only when OPENAI_MODEL and OPENAI_BASE_URL are both set, and
// otherwise refuses to start. Airlock is the sandbox and no one is there
// to approve: --yolo.
func qwenArgv(r Request) []string {
	argv := []string{"qwen", "--output-format", "stream-json", "--auth-type", "openai", "--yolo"}
	if r.Model != nil && r.Model.Name != "" {
		argv = append(argv, "--model", r.Model.Name)
	}
	return argv
}

// qwenEnv is the fixed environment Qwen Code runs with. Usage statistics
// are on by default: each run reports to Aliyun's RUM service
// (gb4w8c3ygj-default-sea.rum.aliyuncs.com). With a proxy configured (the
// sandbox's HTTPS_PROXY) it also sends a HEAD to the model's base URL at
// start, without the key, to warm the connection. OpenTelemetry export is
// off unless asked for; the variable keeps a settings file from asking.
// The update check and its self-update run only in the interactive UI.
// The yolo warning says to use a sandbox: Airlock is one.
func qwenEnv() map[string]string {
	return map[string]string{
		"QWEN_USAGE_STATISTICS_ENABLED":   "false",
		"QWEN_TELEMETRY_ENABLED":          "false",
		"QWEN_CODE_DISABLE_PRECONNECT":    "1",
		"QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
	}
}

// qwenParser reads `qwen --output-format stream-json`, a dialect of
// Claude Code's: one JSON object a line, typed system (init and notices),
// stream_event (goal state), assistant (a message of one block kind:
// text, thinking or tool_use), user (tool_result blocks) and result (the
// final answer or the error, and the session's usage). An API error
// comes as assistant text "[API Error: ...]" and then as the result's
// error. calls maps a tool_use id to its call, so a result names its
// tool and a shell call becomes a command event when its result comes.
type qwenParser struct {
	calls   map[string]qwenCall
	last    string
	lastErr string
}

type qwenCall struct {
	name  string
	input json.RawMessage
}

type qwenLine struct {
	Type string `json:"type"`
	// ParentToolUseID is set on a subagent's messages.
	ParentToolUseID *string `json:"parent_tool_use_id"`
	Message         *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	IsError bool   `json:"is_error"`
	Result  string `json:"result"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
	// Usage of a result is the session's, every model call counted (a
	// subagent's and side calls' too). Its input_tokens include the
	// cache_read_input_tokens: Qwen Code counts input as OpenAI does.
	Usage *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
}

func (p *qwenParser) Summary() string { return p.last }

func (p *qwenParser) Line(line string) []Event {
	var l qwenLine
	if json.Unmarshal([]byte(line), &l) != nil || l.Type == "" {
		return rawLine(line)
	}
	switch l.Type {
	case "system", "stream_event", "control_request", "control_response":
		return nil
	case "assistant", "user":
		if l.Message == nil {
			return nil
		}
		return p.blocks(l.Type, l.ParentToolUseID == nil, l.Message.Content)
	case "result":
		return p.result(l)
	}
	return rawLine(line)
}

func (p *qwenParser) result(l qwenLine) []Event {
	var evs []Event
	switch {
	case l.IsError:
		msg := "unknown error"
		if l.Error != nil && l.Error.Message != "" {
			msg = l.Error.Message
		}
		// The API error was already reported as the assistant's text.
		if msg != p.lastErr {
			evs = append(evs, Event{Type: EventMessage, Role: "error", Text: msg})
		}
		p.last = msg
	case l.Result != "":
		p.last = l.Result
	}
	if u := l.Usage; u != nil && (u.InputTokens > 0 || u.OutputTokens > 0) {
		evs = append(evs, Event{Type: EventUsage, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens})
	}
	return evs
}

// blocks turns a message's content blocks into events; main is false for
// a subagent's messages, whose text is not the final answer.
func (p *qwenParser) blocks(role string, main bool, content json.RawMessage) []Event {
	var blocks []claudeBlock
	if json.Unmarshal(content, &blocks) != nil {
		return nil
	}
	var evs []Event
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if role != "assistant" {
				continue // the prompt, or a subagent's
			}
			if strings.HasPrefix(b.Text, "[API Error: ") {
				p.lastErr = b.Text
				evs = append(evs, Event{Type: EventMessage, Role: "error", Text: b.Text})
				continue
			}
			if main {
				p.last = b.Text
			}
			evs = append(evs, Event{Type: EventMessage, Role: "assistant", Text: b.Text})
		case "thinking":
			evs = append(evs, Event{Type: EventMessage, Role: "reasoning", Text: b.Thinking})
		case "tool_use":
			p.calls[b.ID] = qwenCall{name: b.Name, input: b.Input}
			evs = append(evs, Event{Type: EventToolCall, ID: b.ID, Name: b.Name, Input: b.Input})
		case "tool_result":
			evs = append(evs, p.toolResult(b)...)
		}
	}
	return evs
}

func (p *qwenParser) toolResult(b claudeBlock) []Event {
	call := p.calls[b.ToolUseID]
	delete(p.calls, b.ToolUseID)
	out := toolResultText(b.Content)
	evs := []Event{{Type: EventToolResult, ID: b.ToolUseID, Name: call.name, Output: out, IsError: b.IsError}}
	if call.name == "run_shell_command" {
		var in struct {
			Command    string `json:"command"`
			Background bool   `json:"is_background"`
		}
		json.Unmarshal(call.input, &in)
		code, cmdOut := qwenShellOutcome(in.Command, out, b.IsError, in.Background)
		evs = append(evs, Event{Type: EventCommand, Argv: []string{"bash", "-c", in.Command}, ExitCode: code, Output: cmdOut})
	}
	if key := qwenFileTools[call.name]; key != "" && !b.IsError {
		var in map[string]any
		json.Unmarshal(call.input, &in)
		if file, _ := in[key].(string); file != "" {
			kind := "modified"
			if strings.HasPrefix(out, "Successfully created and wrote to new file: ") || strings.HasPrefix(out, "Created new file: ") {
				kind = "added"
			}
			evs = append(evs, Event{Type: EventFileChange, Path: file, Kind: kind})
		}
	}
	return evs
}

// qwenFileTools are Qwen Code's tools that change a file, by the input
// field naming it.
var qwenFileTools = map[string]string{"write_file": "file_path", "edit": "file_path", "notebook_edit": "notebook_path"}

// qwenShellOutcome is a run_shell_command's exit code (nil when the
// result does not tell) and output. Qwen Code's result is the summary it
// gives the model (qwenShellSummary) when the command failed or printed
// nothing, "Command exited with code: N" when it printed nothing and
// exited 1 in a way Qwen Code does not count as failing (grep finding
// nothing), and the output alone otherwise: then the command exited 0,
// or 1 if it was one of those (diff finding a difference).
func qwenShellOutcome(cmd, text string, isError, background bool) (*int, string) {
	if background {
		return nil, text // started; it ends later, out of sight
	}
	if code, out, ok := qwenShellSummary(cmd, text); ok {
		return code, out
	}
	if n, ok := strings.CutPrefix(text, "Command exited with code: "); ok {
		if code, err := strconv.Atoi(n); err == nil {
			return &code, ""
		}
	}
	if isError || text == "Command cancelled by user." || qwenExitOneIsSuccess(cmd) {
		return nil, text
	}
	return intPtr(0), text
}

// qwenShellSummary reads the summary of a shell call Qwen Code gives the
// model: "Command: C\nDirectory: D\nOutput: O\nError: E\nExit Code: N\n
// Signal: S\nProcess Group PGID: P" (no Command line in its code mode),
// notes appended after. Exit Code is "(none)" for a command a signal
// ended.
func qwenShellSummary(cmd, text string) (*int, string, bool) {
	rest := strings.TrimPrefix(text, "Command: "+cmd+"\n")
	if !strings.HasPrefix(rest, "Directory: ") {
		return nil, "", false
	}
	_, rest, ok := strings.Cut(rest, "\nOutput: ")
	i := strings.LastIndex(rest, "\nExit Code: ")
	if !ok || i < 0 {
		return nil, "", false
	}
	out, tail := rest[:i], rest[i+len("\nExit Code: "):]
	j := strings.LastIndex(out, "\nError: ")
	if j < 0 {
		return nil, "", false
	}
	if out = out[:j]; out == "(empty)" {
		out = ""
	}
	n, _, _ := strings.Cut(tail, "\n")
	code, err := strconv.Atoi(n)
	if err != nil {
		return nil, out, true
	}
	return &code, out, true
}

// qwenExitOneIsSuccess says cmd may be one whose exit 1 Qwen Code does
// not count as failing: grep, rg, diff, test, [ or [[ as the command's
// last stage. Any word naming one will do: it only makes an exit code
// unknown, never wrong.
func qwenExitOneIsSuccess(cmd string) bool {
	for _, w := range shellWords(cmd) {
		switch path.Base(w) {
		case "grep", "rg", "diff", "test", "[", "[[":
			return true
		}
	}
	return false
}
