package tasks

import (
	"encoding/json"
	"strconv"
	"strings"
)

// piHarness runs pi (@mariozechner/pi-coding-agent). Pi speaks to many
// providers; the harness binds it to Anthropic's (key, host, default),
// unless the request's Model.Provider names another pi provider, whose
// key (OPENAI_API_KEY, say) and host the request then binds and allows.
var piHarness = Harness{
	Bin:       "pi",
	Name:      HarnessPi,
	Template:  "harness-pi",
	Package:   "@mariozechner/pi-coding-agent@0.73.1",
	KeyEnv:    "ANTHROPIC_API_KEY",
	Hosts:     []string{"api.anthropic.com"},
	Env:       piEnv(),
	EnvFor:    piEnvFor,
	Argv:      piArgv,
	NewParser: func() Parser { return &piParser{args: map[string]json.RawMessage{}} },
}

// piDefaultProvider is the pi provider a request naming none gets.
const piDefaultProvider = "anthropic"

// piModelsEnv carries the models.json piArgv's wrapper writes.
const piModelsEnv = "AIRLOCK_PI_MODELS"

// piEnv is the fixed environment pi runs with. PI_OFFLINE turns off
// everything pi does on the network besides the model: the version check
// (pi.dev/api/latest-version), install telemetry (pi.dev/api/report-install),
// package update checks, and the download of fd and ripgrep from GitHub
// the first time its find or grep tool runs (so those two tools work only
// where the template has fd and rg).
func piEnv() map[string]string {
	return map[string]string{"PI_OFFLINE": "1"}
}

// piEnvFor carries a request's base URL in the models.json that points
// the provider at it. Pi reads base URLs only from that file (its
// Anthropic SDK is given the provider's baseUrl, so ANTHROPIC_BASE_URL is
// ignored). The file overrides only the URL: the provider's models stay,
// and its key still comes from the provider's variable.
func piEnvFor(r Request) map[string]string {
	if r.Model == nil || r.Model.BaseURL == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]any{
		"providers": map[string]any{piProvider(r): map[string]string{"baseUrl": r.Model.BaseURL}},
	})
	return map[string]string{piModelsEnv: string(b)}
}

// piWriteModels is the sh script that writes $AIRLOCK_PI_MODELS to pi's
// models.json, then runs pi with the script's arguments.
const piWriteModels = `dir=${PI_CODING_AGENT_DIR:-$HOME/.pi/agent} && mkdir -p "$dir" && ` +
	`printf '%s\n' "$` + piModelsEnv + `" >"$dir/models.json" && exec pi "$@"`

// piArgv is pi's non-interactive command line: -p reads the prompt from
// stdin, --mode json prints every session event as a JSON line. Pi has
// no permission prompts to skip: its tools run whatever the model asks.
// A model name selects the provider's model; a name pi does not know
// runs as a custom model id of that provider (with a warning on stderr).
// With no name, pi takes the default model of the first provider in its
// list that has a key (claude-opus-4-7 for Anthropic). A request with a
// base URL runs pi through sh, which first writes piEnvFor's models.json.
// Whenever stdin is not a terminal, pi writes all but its JSON to stderr,
// --version's answer too.
func piArgv(r Request) []string {
	argv := []string{"pi", "-p", "--mode", "json"}
	if r.Model != nil && r.Model.Name != "" {
		argv = append(argv, "--provider", piProvider(r), "--model", r.Model.Name)
	}
	if r.Model != nil && r.Model.BaseURL != "" {
		return append([]string{"sh", "-c", piWriteModels}, argv...)
	}
	return argv
}

// piProvider is the pi provider the request names (pi's ids are lower
// case), or the default.
func piProvider(r Request) string {
	if r.Model != nil && r.Model.Provider != "" {
		return strings.ToLower(r.Model.Provider)
	}
	return piDefaultProvider
}

// piParser reads `pi -p --mode json`: one JSON object a line, the
// session's header then its events. A message_end carries a whole
// message: an assistant's content blocks (text, thinking, toolCall),
// usage and stopReason. Tools show as tool_execution_start (the call's
// args) and tool_execution_end (the result, isError); args keeps a
// call's args by id, for the command or file change its result makes.
// The other lines (session, agent_*, turn_*, message_start and
// message_update with partial messages, tool_execution_update,
// queue_update, compaction_start, auto_retry_*) repeat or foreshadow
// these.
//
// Pi exits 0 in JSON mode even when its last model call failed: the
// failure is only an assistant message with stopReason "error" or
// "aborted" and an errorMessage. Failure reports it.
type piParser struct {
	args    map[string]json.RawMessage
	last    string
	failure string
}

type piLine struct {
	Type       string          `json:"type"`
	Message    *piMessage      `json:"message"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Args       json.RawMessage `json:"args"`
	Result     *struct {
		Content json.RawMessage `json:"content"`
	} `json:"result"`
	IsError bool `json:"isError"`
	// ErrorMessage is a compaction_end's.
	ErrorMessage string `json:"errorMessage"`
}

type piMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Usage   *struct {
		Input      int64 `json:"input"`
		Output     int64 `json:"output"`
		CacheRead  int64 `json:"cacheRead"`
		CacheWrite int64 `json:"cacheWrite"`
	} `json:"usage"`
	StopReason   string `json:"stopReason"`
	ErrorMessage string `json:"errorMessage"`
}

type piBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Thinking string `json:"thinking"`
}

func (p *piParser) Summary() string { return p.last }

// Failure is why pi's run failed although it exited 0: the error of its
// last model call, "" if that call succeeded.
func (p *piParser) Failure() string { return p.failure }

func (p *piParser) Line(line string) []Event {
	var l piLine
	if json.Unmarshal([]byte(line), &l) != nil || l.Type == "" {
		return rawLine(line)
	}
	switch l.Type {
	case "session", "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update",
		"tool_execution_update", "queue_update", "compaction_start", "auto_retry_start", "auto_retry_end":
		return nil
	case "message_end":
		if l.Message == nil || l.Message.Role != "assistant" {
			return nil // the prompt, tool results (from tool_execution_end) and the like
		}
		return p.assistant(*l.Message)
	case "tool_execution_start":
		p.args[l.ToolCallID] = l.Args
		return []Event{{Type: EventToolCall, ID: l.ToolCallID, Name: l.ToolName, Input: l.Args}}
	case "tool_execution_end":
		return p.toolEnd(l)
	case "compaction_end":
		if l.ErrorMessage == "" {
			return nil
		}
		return []Event{{Type: EventMessage, Role: "error", Text: "compaction: " + l.ErrorMessage}}
	}
	return rawLine(line)
}

// assistant turns an assistant's whole message into events. Its tool
// calls are left to tool_execution_start, which every call gets.
func (p *piParser) assistant(m piMessage) []Event {
	var evs []Event
	var blocks []piBlock
	json.Unmarshal(m.Content, &blocks)
	for _, b := range blocks {
		switch {
		case b.Type == "text" && b.Text != "":
			p.last = b.Text
			evs = append(evs, Event{Type: EventMessage, Role: "assistant", Text: b.Text})
		case b.Type == "thinking" && b.Thinking != "":
			evs = append(evs, Event{Type: EventMessage, Role: "reasoning", Text: b.Thinking})
		}
	}
	if u := m.Usage; u != nil && u.Input+u.Output+u.CacheRead+u.CacheWrite > 0 {
		// Cached input is input the model read all the same.
		evs = append(evs, Event{Type: EventUsage, InputTokens: u.Input + u.CacheRead + u.CacheWrite, OutputTokens: u.Output})
	}
	p.failure = ""
	if m.StopReason == "error" || m.StopReason == "aborted" {
		p.failure = m.ErrorMessage
		if p.failure == "" {
			p.failure = "the model request " + m.StopReason
		}
		evs = append(evs, Event{Type: EventMessage, Role: "error", Text: p.failure})
	}
	return evs
}

func (p *piParser) toolEnd(l piLine) []Event {
	args := p.args[l.ToolCallID]
	delete(p.args, l.ToolCallID)
	out := ""
	if l.Result != nil {
		out = toolResultText(l.Result.Content)
	}
	evs := []Event{{Type: EventToolResult, ID: l.ToolCallID, Name: l.ToolName, Output: out, IsError: l.IsError}}
	var in struct {
		Command string `json:"command"`
		Path    string `json:"path"`
	}
	json.Unmarshal(args, &in)
	switch {
	case l.ToolName == "bash" && in.Command != "":
		code, cmdOut := piBashOutcome(out, l.IsError)
		evs = append(evs, Event{Type: EventCommand, Argv: []string{"bash", "-c", in.Command}, ExitCode: code, Output: cmdOut})
	case (l.ToolName == "edit" || l.ToolName == "write") && in.Path != "" && !l.IsError:
		// write may also create the file; the workspace diff tells.
		evs = append(evs, Event{Type: EventFileChange, Path: in.Path, Kind: "modified"})
	}
	return evs
}

// piBashOutcome is a bash call's exit code and output. Pi's bash tool
// runs the command with bash -c; it reports a failed command as an error
// result whose last paragraph is "Command exited with code N", and a
// timeout or abort as one ending "Command timed out after N seconds" or
// "Command aborted", with no exit code. A command that printed nothing
// succeeded with the text "(no output)".
func piBashOutcome(text string, isError bool) (*int, string) {
	if !isError {
		if text == "(no output)" {
			text = ""
		}
		return intPtr(0), text
	}
	out, status := "", text
	if i := strings.LastIndex(text, "\n\n"); i >= 0 {
		out, status = text[:i], text[i+2:]
	}
	if n, ok := strings.CutPrefix(status, "Command exited with code "); ok {
		if code, err := strconv.Atoi(n); err == nil {
			return &code, out
		}
	}
	return nil, text
}
