package tasks

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// geminiHarness runs Gemini CLI. It reads its key from GEMINI_API_KEY
// and sends it in x-goog-api-key; GOOGLE_GEMINI_BASE_URL replaces
// https://generativelanguage.googleapis.com (the CLI appends
// /v1beta/models/{model}:streamGenerateContent).
var geminiHarness = Harness{
	Bin:        "gemini",
	Name:       HarnessGemini,
	Template:   "harness-gemini",
	Package:    "@google/gemini-cli@0.61.0",
	KeyEnv:     "GEMINI_API_KEY",
	BaseURLEnv: "GOOGLE_GEMINI_BASE_URL",
	Hosts:      []string{"generativelanguage.googleapis.com"},
	// The CLI starts itself again as a child node process to raise its
	// heap to half of os.totalmem(), which in a sandbox is the host's
	// memory, not the sandbox's limit: once is enough.
	Env:       map[string]string{"GEMINI_CLI_NO_RELAUNCH": "true"},
	Argv:      geminiArgv,
	NewParser: func() Parser { return &geminiParser{tools: map[string]geminiCall{}} },
}

// geminiSettings is the user settings file the command line writes
// before it starts the CLI; some of it exists nowhere but in settings:
//   - privacy.usageStatisticsEnabled: on by default, it sends usage
//     logs to play.googleapis.com and an installation id to the model
//     API (x-gemini-api-privileged-user-id);
//   - security.auth.selectedType: with GOOGLE_GEMINI_BASE_URL set and no
//     auth type chosen, 0.61 picks "gateway", which its non-interactive
//     mode then refuses ("Invalid auth method selected."); the API key
//     type takes the base URL all the same;
//   - telemetry (OpenTelemetry) and the update checks, off.
//
// A system settings file (GEMINI_CLI_SYSTEM_SETTINGS_PATH) would win over
// a workspace's .gemini/settings.json, but the CLI ignores one that root
// does not own, and the harness does not run as root: a repository's own
// .gemini/settings.json (the workspace is trusted) can turn these back on.
const geminiSettings = `{"security":{"auth":{"selectedType":"gemini-api-key"}},` +
	`"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},` +
	`"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false}}`

// geminiArgv is Gemini CLI's non-interactive command line, behind a shell
// that writes ~/.gemini/settings.json first (over any the template has). With stdin not a terminal
// the CLI runs headless and takes the prompt from it. --skip-trust
// trusts the workspace (headless, an untrusted one is refused);
// --approval-mode yolo runs every tool with no one to approve.
func geminiArgv(r Request) []string {
	script := `mkdir -p "$HOME/.gemini" && printf '%s\n' '` + geminiSettings + `' > "$HOME/.gemini/settings.json" && exec "$0" "$@"`
	argv := []string{"sh", "-c", script, "gemini", "--output-format", "stream-json",
		"--approval-mode", "yolo", "--skip-trust"}
	if r.Model != nil && r.Model.Name != "" {
		argv = append(argv, "--model", r.Model.Name)
	}
	return argv
}

// geminiParser reads `gemini --output-format stream-json`: one JSON object
// a line, typed init, message (the user's prompt echoed; the assistant's
// text in deltas), tool_use, tool_result, error (a warning or an error
// the run goes on after) and result (status, stats with token counts, the
// error that ended the run). The assistant's deltas become one message
// when something else comes. tools maps a tool_use id to its call, so a
// result names its tool, and a shell call becomes a command event.
type geminiParser struct {
	tools   map[string]geminiCall
	pending strings.Builder // the assistant's text since its last message
	last    string
}

type geminiCall struct {
	name  string
	input json.RawMessage
}

type geminiLine struct {
	Type       string          `json:"type"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Output     string          `json:"output"`
	Message    string          `json:"message"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats *struct {
		TotalTokens  int64 `json:"total_tokens"`
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"stats"`
}

func (p *geminiParser) Summary() string {
	if p.pending.Len() > 0 {
		return p.pending.String()
	}
	return p.last
}

func (p *geminiParser) Line(line string) []Event {
	var l geminiLine
	if json.Unmarshal([]byte(line), &l) != nil || l.Type == "" {
		return rawLine(line)
	}
	if l.Type == "message" && l.Role == "assistant" {
		p.pending.WriteString(l.Content)
		return nil
	}
	evs := p.flush()
	switch l.Type {
	case "init":
	case "message":
		// The user's prompt, echoed.
	case "tool_use":
		p.tools[l.ToolID] = geminiCall{name: l.ToolName, input: l.Parameters}
		evs = append(evs, Event{Type: EventToolCall, ID: l.ToolID, Name: l.ToolName, Input: l.Parameters})
	case "tool_result":
		evs = append(evs, p.toolResult(l)...)
	case "error":
		evs = append(evs, Event{Type: EventMessage, Role: "error", Text: l.Message})
	case "result":
		if l.Error != nil {
			evs = append(evs, Event{Type: EventMessage, Role: "error", Text: l.Error.Message})
		}
		if s := l.Stats; s != nil && (s.InputTokens != 0 || s.OutputTokens != 0) {
			// input_tokens counts cached input too. output_tokens leaves
			// out the thinking tokens, billed as output: what the total
			// holds beyond input and output is those.
			out := max(s.OutputTokens, s.TotalTokens-s.InputTokens)
			evs = append(evs, Event{Type: EventUsage, InputTokens: s.InputTokens, OutputTokens: out})
		}
	default:
		evs = append(evs, rawLine(line)...)
	}
	return evs
}

// flush ends the assistant's message being streamed, if any.
func (p *geminiParser) flush() []Event {
	if p.pending.Len() == 0 {
		return nil
	}
	p.last = p.pending.String()
	p.pending.Reset()
	return []Event{{Type: EventMessage, Role: "assistant", Text: p.last}}
}

func (p *geminiParser) toolResult(l geminiLine) []Event {
	call := p.tools[l.ToolID]
	delete(p.tools, l.ToolID)
	isErr := l.Status == "error"
	out := l.Output
	if isErr && out == "" && l.Error != nil {
		out = l.Error.Message
	}
	evs := []Event{{Type: EventToolResult, ID: l.ToolID, Name: call.name, Output: out, IsError: isErr}}
	var in struct {
		Command  string `json:"command"`
		FilePath string `json:"file_path"`
	}
	json.Unmarshal(call.input, &in)
	switch {
	case call.name == "run_shell_command":
		code, cmdOut := geminiShellOutcome(l.Output, isErr)
		evs = append(evs, Event{Type: EventCommand, Argv: []string{"bash", "-c", in.Command}, ExitCode: code, Output: cmdOut})
	case geminiFileTools[call.name] && !isErr && in.FilePath != "":
		evs = append(evs, Event{Type: EventFileChange, Path: in.FilePath, Kind: "modified"})
	}
	return evs
}

// geminiFileTools are Gemini CLI's tools that change a file (write_file
// may also create one; the workspace diff tells).
var geminiFileTools = map[string]bool{"write_file": true, "replace": true}

var geminiExited = regexp.MustCompile(`^Command exited with code: (\d+)$`)

// geminiShellOutcome is a run_shell_command call's exit code and output,
// from what stream-json shows of it: the command's output (stdout and
// stderr together), or, for a command with none, "" when it exited 0 and
// "Command exited with code: N" when it did not. A command that printed
// something has no exit code there at all (the model alone is told it),
// so its exit code is nil, unknown; so is a killed or failed one's.
func geminiShellOutcome(out string, isErr bool) (*int, string) {
	if isErr {
		return nil, out
	}
	if out == "" {
		return intPtr(0), ""
	}
	if m := geminiExited.FindStringSubmatch(out); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return intPtr(n), ""
		}
	}
	return nil, out
}
