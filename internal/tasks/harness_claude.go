package tasks

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/internal/askchan"
)

// claudeArgv is Claude Code's non-interactive command line: with -p and
// no prompt argument, claude reads the prompt from stdin. It refuses
// --dangerously-skip-permissions as root (unless IS_SANDBOX=1); the
// harness runs as the sandbox's user. It reads ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL, and trusts the egress proxy's CA from either
// SSL_CERT_FILE or NODE_EXTRA_CA_CERTS.
//
// With approval set, claude asks permission as it does by default, and
// asks Airlock's MCP tool instead of a person at a terminal: airlock-approve
// --mcp, which it starts itself from the MCP config (claude names the
// tool mcp__airlock__approve). Calls the task does not gate are allowed
// at once.
func claudeArgv(r Request) []string {
	argv := []string{"claude", "-p", "--output-format", "stream-json", "--verbose"}
	if r.Approval != nil {
		argv = append(argv, "--mcp-config", claudeMCPConfig, "--permission-prompt-tool", "mcp__airlock__"+askchan.MCPTool)
	} else {
		argv = append(argv, "--dangerously-skip-permissions")
	}
	if r.Continue != "" {
		// A follow-up turn: the conversation the earlier task left in
		// ~/.claude for this workspace (kept with it).
		argv = append(argv, "--continue")
	}
	if r.Model != nil && r.Model.Name != "" {
		argv = append(argv, "--model", r.Model.Name)
	}
	return argv
}

// claudeMCPConfig starts airlock-approve as claude's MCP server "airlock".
var claudeMCPConfig = `{"mcpServers":{"airlock":{"type":"stdio","command":"` + approveBin + `","args":["--mcp","--harness","claude"]}}}`

// claudeEnv is the fixed environment Claude Code runs with. Without it,
// a -p run also sends event logs, feature-flag and metrics-setting
// requests to api.anthropic.com (/api/event_logging/v2/batch,
// /api/eval/..., /api/claude_cli/bootstrap, ...): with the tenant's key
// put in by the egress proxy, since it is the model host. What remains is
// the managed-settings pair (/api/claude_code/settings and
// /api/claude_code/policy_limits), which tolerates a 404.
func claudeEnv() map[string]string {
	return map[string]string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
}

// claudeParser reads `claude -p --output-format stream-json --verbose`:
// one JSON object a line, typed system (init), assistant (a message whose
// content blocks are text, thinking or tool_use), user (tool_result
// blocks) and result (the final answer, usage and is_error). tools maps a
// tool_use id to its name, so a result names its tool and a Bash call
// becomes a command event when its result comes.
type claudeParser struct {
	tools map[string]string
	input map[string]json.RawMessage
	last  string
}

type claudeLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Message *struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Result  string       `json:"result"`
	IsError bool         `json:"is_error"`
	Usage   *claudeUsage `json:"usage"`
	// ToolUseResult is the structured result of the line's tool call:
	// for Bash, {"stdout","stderr",...} when it succeeded, an
	// "Error: ..." string when it failed.
	ToolUseResult json.RawMessage `json:"tool_use_result"`
}

type claudeUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (p *claudeParser) Summary() string { return p.last }

func (p *claudeParser) Line(line string) []Event {
	var l claudeLine
	if json.Unmarshal([]byte(line), &l) != nil || l.Type == "" {
		return rawLine(line)
	}
	switch l.Type {
	case "system":
		return nil
	case "assistant", "user":
		if l.Message == nil {
			return nil
		}
		return p.blocks(l.Type, l.Message.Content, l.ToolUseResult)
	case "result":
		var evs []Event
		if l.Result != "" {
			p.last = l.Result
		}
		if l.IsError {
			evs = append(evs, Event{Type: EventMessage, Role: "error", Text: l.Result})
		}
		if l.Usage != nil {
			// Cached input is input the model read all the same.
			in := l.Usage.InputTokens + l.Usage.CacheCreationInputTokens + l.Usage.CacheReadInputTokens
			evs = append(evs, Event{Type: EventUsage, InputTokens: in, OutputTokens: l.Usage.OutputTokens})
		}
		return evs
	}
	return rawLine(line)
}

// blocks turns a message's content (a string or a list of blocks) into
// events; toolResult is the line's tool_use_result, if any.
func (p *claudeParser) blocks(role string, content, toolResult json.RawMessage) []Event {
	var text string
	if json.Unmarshal(content, &text) == nil {
		if role == "user" {
			return nil // the prompt, echoed
		}
		p.last = text
		return []Event{{Type: EventMessage, Role: role, Text: text}}
	}
	var blocks []claudeBlock
	if json.Unmarshal(content, &blocks) != nil {
		return nil
	}
	// tool_use_result belongs to a line's one tool result; a line with
	// several results cannot say whose it is.
	results := 0
	for _, b := range blocks {
		if b.Type == "tool_result" {
			results++
		}
	}
	if results != 1 {
		toolResult = nil
	}
	var evs []Event
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if role == "assistant" {
				p.last = b.Text
				evs = append(evs, Event{Type: EventMessage, Role: "assistant", Text: b.Text})
			}
		case "thinking":
			evs = append(evs, Event{Type: EventMessage, Role: "reasoning", Text: b.Thinking})
		case "tool_use":
			p.tools[b.ID] = b.Name
			if p.input == nil {
				p.input = map[string]json.RawMessage{}
			}
			p.input[b.ID] = b.Input
			evs = append(evs, Event{Type: EventToolCall, ID: b.ID, Name: b.Name, Input: b.Input})
		case "tool_result":
			name := p.tools[b.ToolUseID]
			out := toolResultText(b.Content)
			evs = append(evs, Event{Type: EventToolResult, ID: b.ToolUseID, Name: name, Output: out, IsError: b.IsError})
			if name == "Bash" {
				var in struct {
					Command string `json:"command"`
				}
				json.Unmarshal(p.input[b.ToolUseID], &in)
				code, cmdOut := bashOutcome(out, b.IsError, toolResult)
				evs = append(evs, Event{Type: EventCommand, Argv: []string{"bash", "-c", in.Command}, ExitCode: intPtr(code), Output: cmdOut})
			}
			if edit := claudeFileTools[name]; edit != "" {
				var in struct {
					Path string `json:"file_path"`
				}
				if json.Unmarshal(p.input[b.ToolUseID], &in) == nil && in.Path != "" && !b.IsError {
					evs = append(evs, Event{Type: EventFileChange, Path: in.Path, Kind: edit})
				}
			}
			delete(p.tools, b.ToolUseID)
			delete(p.input, b.ToolUseID)
		}
	}
	return evs
}

// bashOutcome is a Bash call's exit code and output. Claude Code reports
// a failed command as an is_error result whose text starts "Exit code N"
// (other failures, a timeout or an interruption, are exit code 1); a
// command that succeeded has exit code 0, and its stdout and stderr are
// in the line's tool_use_result, where the result text would say
// "(Bash completed with no output)".
func bashOutcome(text string, isError bool, toolResult json.RawMessage) (int, string) {
	if isError {
		first, rest, _ := strings.Cut(text, "\n")
		if n, ok := strings.CutPrefix(first, "Exit code "); ok {
			if code, err := strconv.Atoi(n); err == nil {
				return code, rest
			}
		}
		return 1, text
	}
	var r struct {
		Stdout *string `json:"stdout"`
		Stderr string  `json:"stderr"`
	}
	if json.Unmarshal(toolResult, &r) != nil || r.Stdout == nil {
		return 0, text
	}
	out := *r.Stdout
	if r.Stderr != "" {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += r.Stderr
	}
	return 0, out
}

// claudeFileTools are Claude Code's tools that change a file, by the kind
// of change (Write may also create one; the workspace diff tells).
var claudeFileTools = map[string]string{"Write": "modified", "Edit": "modified", "MultiEdit": "modified"}

// toolResultText is a tool_result's content: a string, or text blocks.
func toolResultText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(c, &blocks) != nil {
		return string(c)
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
