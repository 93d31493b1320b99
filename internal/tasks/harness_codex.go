package tasks

import (
	"encoding/json"
	"strconv"
	"strings"
)

// codexAPI is the OpenAI API codex calls when the request names no base
// URL.
const codexAPI = "https://api.openai.com/v1"

// codexArgv is codex's non-interactive command line. Airlock is the
// sandbox: codex's own (landlock/seccomp) one cannot nest in it, and no
// one is there to approve. "-" reads the prompt from stdin.
//
// Codex 0.169's built-in "openai" provider does not fit a sandbox: it
// ignores OPENAI_BASE_URL, sends no key from OPENAI_API_KEY (only from
// CODEX_API_KEY or a login) and first tries a WebSocket to
// wss://api.openai.com/v1/responses, falling back to HTTPS only after five
// failed attempts. So the command line defines a provider of its own:
// plain HTTPS to the base URL, key from OPENAI_API_KEY (the placeholder
// the egress proxy replaces). It also turns off the plugin catalog sync
// (api.github.com, github.com by git, chatgpt.com) and analytics
// (ab.chatgpt.com): traffic the task does not need, carrying data out.
//
// With approval set, every tool call first runs airlock-approve as
// codex's PreToolUse hook (codexHook).
func codexArgv(r Request) []string {
	base := codexAPI
	if r.Model != nil && r.Model.BaseURL != "" {
		base = r.Model.BaseURL
	}
	argv := []string{"codex", "exec"}
	if r.Continue != "" {
		// A follow-up turn: the session the earlier task left in ~/.codex
		// (kept with its workspace).
		argv = append(argv, "resume", "--last")
	}
	argv = append(argv, "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox")
	if r.Approval != nil {
		argv = append(argv, "--dangerously-bypass-hook-trust", "-c", "hooks.PreToolUse="+codexHook(r.Approval))
	}
	for _, kv := range []string{
		"model_provider=" + tomlString("airlock"),
		"model_providers.airlock.name=" + tomlString("Airlock"),
		"model_providers.airlock.base_url=" + tomlString(base),
		"model_providers.airlock.env_key=" + tomlString("OPENAI_API_KEY"),
		"model_providers.airlock.wire_api=" + tomlString("responses"),
		"model_providers.airlock.supports_websockets=false",
		"features.plugins=false",
		"analytics.enabled=false",
	} {
		argv = append(argv, "-c", kv)
	}
	if r.Model != nil && r.Model.Name != "" {
		argv = append(argv, "--model", r.Model.Name)
	}
	return append(argv, "-")
}

// codexHook is the PreToolUse hook, a TOML inline array for -c, that
// asks Airlock about every tool call (the daemon allows at once what the
// task does not gate). Codex's own approval prompts stay off: they wait
// for a person at a terminal. A hook that denies blocks the call before
// it runs, and codex gives the model the reason as the call's result.
//
// Codex 0.169 runs a hook only once a person has trusted its definition
// at its /hooks screen; a headless run has --dangerously-bypass-hook-trust
// instead, meant for automation that vets its hooks: Airlock wrote this
// one. Codex lets the call run when its hook fails (a missing command, an
// exit without a decision, its timeout passed), so airlock-approve gives
// up on the question itself before codex's timeout (a denial), and the
// shell turns its failing to run at all into a denial too.
func codexHook(a *Approval) string {
	wait := a.TimeoutS
	if wait <= 0 {
		wait = DefaultApprovalTimeoutS
	}
	// The approval expires at wait, counted from when it opens; the hook
	// gives up a little later (a daemon restart asks again), codex later
	// still.
	wait += 30
	cmd := approveBin + " --hook codex --wait " + strconv.FormatInt(wait, 10) +
		` || { echo "airlock-approve failed, so Airlock denies the call" >&2; exit 2; }`
	return `[{hooks=[{type="command",command=` + tomlString(cmd) + `,timeout=` + strconv.FormatInt(wait+30, 10) + `}]}]`
}

// tomlString quotes s as a TOML basic string, the value syntax of codex's
// -c key=value: JSON's string escapes are all valid TOML.
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// codexParser reads `codex exec --json`: one JSON object a line, typed
// thread.*, turn.*, item.* and error. Items carry their own "type"
// (agent_message, reasoning, command_execution, file_change,
// mcp_tool_call, web_search, todo_list, error); only completed items
// become events, except a command's start, so a long command shows while
// it runs.
type codexParser struct{ last string }

type codexLine struct {
	Type  string `json:"type"`
	Usage *struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
	Error   *struct{ Message string } `json:"error"`
	Message string                    `json:"message"`
	Item    *codexItem                `json:"item"`
}

type codexItem struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	Text             string `json:"text"`
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`
	Status           string `json:"status"`
	Changes          []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error"`
	Query   string `json:"query"`
	Message string `json:"message"`
}

func (p *codexParser) Summary() string { return p.last }

func (p *codexParser) Line(line string) []Event {
	var l codexLine
	if json.Unmarshal([]byte(line), &l) != nil || l.Type == "" {
		return rawLine(line)
	}
	switch l.Type {
	case "thread.started", "turn.started":
		return nil
	case "turn.completed":
		if l.Usage == nil {
			return nil
		}
		return []Event{{Type: EventUsage, InputTokens: l.Usage.InputTokens, OutputTokens: l.Usage.OutputTokens}}
	case "turn.failed":
		msg := ""
		if l.Error != nil {
			msg = l.Error.Message
		}
		return []Event{{Type: EventMessage, Role: "error", Text: msg}}
	case "error":
		return []Event{{Type: EventMessage, Role: "error", Text: l.Message}}
	case "item.started":
		if l.Item != nil && l.Item.Type == "command_execution" {
			return []Event{{Type: EventToolCall, ID: l.Item.ID, Name: "shell", Input: jsonInput("command", l.Item.Command)}}
		}
		return nil
	case "item.completed":
		if l.Item != nil {
			return p.item(*l.Item)
		}
	case "item.updated":
		return nil
	}
	return rawLine(line)
}

func (p *codexParser) item(it codexItem) []Event {
	switch it.Type {
	case "agent_message":
		p.last = it.Text
		return []Event{{Type: EventMessage, Role: "assistant", Text: it.Text}}
	case "reasoning":
		return []Event{{Type: EventMessage, Role: "reasoning", Text: it.Text}}
	case "command_execution":
		return []Event{
			{Type: EventToolResult, ID: it.ID, Name: "shell", Output: it.AggregatedOutput, IsError: it.Status == "failed" || it.Status == "declined"},
			{Type: EventCommand, Argv: shellWords(it.Command), ExitCode: it.ExitCode, Output: it.AggregatedOutput},
		}
	case "file_change":
		var evs []Event
		for _, c := range it.Changes {
			evs = append(evs, Event{Type: EventFileChange, Path: c.Path, Kind: changeKind(c.Kind)})
		}
		return evs
	case "mcp_tool_call":
		name := it.Tool
		if it.Server != "" {
			name = it.Server + "." + it.Tool
		}
		res := Event{Type: EventToolResult, ID: it.ID, Name: name, Output: string(it.Result)}
		if it.Error != nil {
			res.Output, res.IsError = it.Error.Message, true
		}
		return []Event{{Type: EventToolCall, ID: it.ID, Name: name, Input: it.Arguments}, res}
	case "web_search":
		return []Event{{Type: EventToolCall, ID: it.ID, Name: "web_search", Input: jsonInput("query", it.Query)}}
	case "error":
		if strings.HasPrefix(it.Message, codexHookTrustWarning) {
			return nil
		}
		return []Event{{Type: EventMessage, Role: "error", Text: it.Message}}
	}
	return nil
}

// codexHookTrustWarning starts the error item codex reports (twice) when
// it runs with --dangerously-bypass-hook-trust: Airlock's own choice
// (codexHook), not the task's error.
const codexHookTrustWarning = "`--dangerously-bypass-hook-trust` is enabled."

// changeKind maps a harness's name of a file change onto added, modified
// or deleted.
func changeKind(k string) string {
	switch k {
	case "add", "added", "create", "created":
		return "added"
	case "delete", "deleted", "remove", "removed":
		return "deleted"
	}
	return "modified"
}

func jsonInput(key, value string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{key: value})
	return b
}

func rawLine(line string) []Event {
	if strings.TrimSpace(line) == "" {
		return nil
	}
	return []Event{{Type: EventRaw, Stream: "stdout", Line: line}}
}

// shellWords splits a POSIX shell command line into words (quotes and
// backslashes; no expansion), for a command event's argv. A line it
// cannot split (an open quote) is one word.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return []string{s}
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return []string{s}
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
