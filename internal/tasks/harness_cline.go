package tasks

import (
	"encoding/json"
	"strconv"
	"strings"
)

// clineAPI is the endpoint cline's openai-compatible provider calls when
// the request names no base URL.
const clineAPI = "https://api.openai.com/v1"

// clineHarness runs Cline's CLI (a Bun-compiled binary in the
// @cline/cli-linux-x64 package, started by the cline package's Node
// wrapper) through its OpenAI-compatible (Chat Completions) provider: the
// one whose base URL can be set. Its Anthropic provider ignores
// ANTHROPIC_BASE_URL, and no provider takes a base URL from the command
// line or the environment, only from its providers.json.
var clineHarness = Harness{
	Bin:       "cline",
	Name:      HarnessCline,
	Template:  "harness-cline",
	Package:   "cline@3.0.65",
	KeyEnv:    "OPENAI_API_KEY",
	Hosts:     []string{"api.openai.com"},
	Env:       clineEnv(),
	EnvFor:    clineEnvFor,
	Argv:      clineArgv,
	NewParser: func() Parser { return &clineParser{input: map[string]json.RawMessage{}} },
}

// clineEnv is the fixed environment cline runs with. Without it a run also
// starts a hub daemon (a detached process, the task's environment and key
// placeholder with it, that outlives the CLI), polls PostHog feature flags
// at data.cline.bot, and sends telemetry to otel.cline.bot (turned off in
// the global settings clineArgv writes; E2E_TEST only swaps the feature
// flags for a no-op provider). The settings paths are cline's defaults,
// named so that clineArgv writes where cline reads.
func clineEnv() map[string]string {
	return map[string]string{
		"CLINE_SESSION_BACKEND_MODE":   "local",
		"E2E_TEST":                     "true",
		"CLINE_PROVIDER_SETTINGS_PATH": "/home/user/.cline/data/settings/providers.json",
		"CLINE_GLOBAL_SETTINGS_PATH":   "/home/user/.cline/data/settings/global-settings.json",
	}
}

// clineEnvFor carries the request's endpoint in AIRLOCK_CLINE_PROVIDERS,
// a providers.json for clineArgv to write (the model is on the command
// line). It holds no key: cline reads OPENAI_API_KEY (the placeholder)
// when the settings have none. updatedAt is required by cline's schema; a
// file that fails it is ignored, and cline falls back to its own "cline"
// provider (api.cline.bot).
func clineEnvFor(r Request) map[string]string {
	settings := map[string]string{"provider": "openai-compatible", "baseUrl": clineAPI}
	if r.Model != nil && r.Model.BaseURL != "" {
		settings["baseUrl"] = r.Model.BaseURL
	}
	b, _ := json.Marshal(map[string]any{
		"version":          1,
		"lastUsedProvider": "openai-compatible",
		"providers": map[string]any{"openai-compatible": map[string]any{
			"settings": settings, "updatedAt": "2000-01-01T00:00:00Z",
		}},
	})
	return map[string]string{"AIRLOCK_CLINE_PROVIDERS": string(b)}
}

// clineScript writes cline's settings, then runs it. cline 3.0.65's JSON
// mode takes the prompt only as its one argument (piped stdin is not
// read), and refuses an argument without whitespace as an "unquoted
// prompt"; a subcommand's name would run that subcommand, even after --.
// The newline appended to the prompt settles both. An argument is limited
// to 128 KiB (Linux's MAX_ARG_STRLEN), so a longer prompt fails to start.
const clineScript = `umask 077
mkdir -p "${CLINE_PROVIDER_SETTINGS_PATH%/*}" "${CLINE_GLOBAL_SETTINGS_PATH%/*}" &&
printf '%s\n' "$AIRLOCK_CLINE_PROVIDERS" >"$CLINE_PROVIDER_SETTINGS_PATH" &&
printf '%s\n' '{"telemetryOptOut":true,"autoUpdateEnabled":false}' >"$CLINE_GLOBAL_SETTINGS_PATH" || exit
exec cline --json --auto-approve true -P openai-compatible "$@" -- "$(cat)
"`

// clineArgv is cline's non-interactive command line, behind the script
// that writes its settings. Tools are auto-approved (the sandbox is the
// boundary). Not --yolo: it makes the model end a run by calling
// submit_and_exit, and a model that answers in plain text instead is sent
// round again, without end.
func clineArgv(r Request) []string {
	argv := []string{"sh", "-c", clineScript, "sh"}
	if r.Model != nil && r.Model.Name != "" {
		argv = append(argv, "-m", r.Model.Name)
	}
	return argv
}

// clineParser reads `cline --json`: one JSON object a line, typed
// hook_event (hooks firing), agent_event (the agent's own event, in
// "event"), team_event (sub-agent teams), run_result (the final text,
// finishReason and usage), run_aborted and error. Agent events are typed
// iteration_*, content_start (a text or reasoning delta, or a tool call
// with its input), content_update (a running tool's output),
// content_end (the whole text or reasoning, or a tool's output), usage
// (one model call's tokens), done, notice and error. Only whole texts
// become messages; input maps a tool call's id to its input until its
// output comes.
type clineParser struct {
	input   map[string]json.RawMessage
	last    string
	lastErr string
	// in and out are the tokens reported so far, so that run_result adds
	// only what the usage events left out (sub-agents').
	in, out int64
}

type clineLine struct {
	Type           string          `json:"type"`
	Event          json.RawMessage `json:"event"`
	Message        string          `json:"message"`
	FinishReason   string          `json:"finishReason"`
	Text           string          `json:"text"`
	Usage          *clineUsage     `json:"usage"`
	AggregateUsage *clineUsage     `json:"aggregateUsage"`
}

// clineUsage counts tokens as the AI SDK does: input includes the cached
// input (cacheReadTokens and cacheWriteTokens are parts of it).
type clineUsage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
}

type clineEvent struct {
	Type        string          `json:"type"`
	ContentType string          `json:"contentType"`
	Text        string          `json:"text"`
	Reasoning   string          `json:"reasoning"`
	ToolName    string          `json:"toolName"`
	ToolCallID  string          `json:"toolCallId"`
	Input       json.RawMessage `json:"input"`
	Output      json.RawMessage `json:"output"`
	// Error is a string on a tool's content_end, an Error ({name,
	// message, stack}) on an error event.
	Error json.RawMessage `json:"error"`
	clineUsage
}

// clineResult is one entry of a tool's output: run_commands gives one a
// command, editor and apply_patch one in all.
type clineResult struct {
	Query   string          `json:"query"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Success *bool           `json:"success"`
}

func (p *clineParser) Summary() string { return p.last }

func (p *clineParser) Line(line string) []Event {
	var l clineLine
	if json.Unmarshal([]byte(line), &l) != nil || l.Type == "" {
		return rawLine(line)
	}
	switch l.Type {
	case "hook_event", "team_event", "run_start", "team_restored", "run_abort_requested":
		return nil
	case "agent_event":
		var e clineEvent
		if json.Unmarshal(l.Event, &e) != nil {
			return rawLine(line)
		}
		return p.event(e)
	case "run_result":
		return p.result(l)
	case "run_aborted", "error":
		return p.fail(l.Message)
	}
	return rawLine(line)
}

func (p *clineParser) event(e clineEvent) []Event {
	switch e.Type {
	case "content_start":
		if e.ContentType != "tool" {
			return nil // a text or reasoning delta: content_end has it whole
		}
		p.input[e.ToolCallID] = e.Input
		return []Event{{Type: EventToolCall, ID: e.ToolCallID, Name: e.ToolName, Input: e.Input}}
	case "content_end":
		switch e.ContentType {
		case "text":
			if e.Text == "" {
				return nil
			}
			p.last = e.Text
			return []Event{{Type: EventMessage, Role: "assistant", Text: e.Text}}
		case "reasoning":
			if e.Reasoning == "" {
				return nil
			}
			return []Event{{Type: EventMessage, Role: "reasoning", Text: e.Reasoning}}
		case "tool":
			in := p.input[e.ToolCallID]
			delete(p.input, e.ToolCallID)
			return clineToolEnd(e, in)
		}
	case "usage":
		p.in += e.InputTokens
		p.out += e.OutputTokens
		return []Event{{Type: EventUsage, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens}}
	case "error":
		var err struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &err) != nil || err.Message == "" {
			err.Message = string(e.Error)
		}
		return p.fail(err.Message)
	}
	return nil
}

// fail is an error message; the same text twice in a row (an error event,
// then the run's result or its error line) is one.
func (p *clineParser) fail(msg string) []Event {
	if msg == "" || msg == p.lastErr {
		return nil
	}
	p.lastErr = msg
	return []Event{{Type: EventMessage, Role: "error", Text: msg}}
}

// result ends the run: its text is the final answer, or why it failed;
// its usage counts sub-agents too, so what the usage events missed is
// added.
func (p *clineParser) result(l clineLine) []Event {
	var evs []Event
	if l.Text != "" {
		p.last = l.Text
	}
	if l.FinishReason != "completed" {
		evs = p.fail(l.Text)
	}
	u := l.AggregateUsage
	if u == nil {
		u = l.Usage
	}
	if u != nil && (u.InputTokens > p.in || u.OutputTokens > p.out) {
		e := Event{Type: EventUsage, InputTokens: max(u.InputTokens-p.in, 0), OutputTokens: max(u.OutputTokens-p.out, 0)}
		p.in, p.out = max(p.in, u.InputTokens), max(p.out, u.OutputTokens)
		evs = append(evs, e)
	}
	return evs
}

// clineToolEnd is a tool's result, and what it did: run_commands runs
// each command with /bin/bash -c (cline's shell on Linux), editor and
// apply_patch change files.
func clineToolEnd(e clineEvent, input json.RawMessage) []Event {
	var toolErr string
	if json.Unmarshal(e.Error, &toolErr) != nil && len(e.Error) > 0 && string(e.Error) != "null" {
		toolErr = string(e.Error)
	}
	results := clineResults(e.Output)
	res := Event{Type: EventToolResult, ID: e.ToolCallID, Name: e.ToolName, IsError: toolErr != ""}
	var texts []string
	for _, r := range results {
		if r.Success != nil && !*r.Success {
			res.IsError = true
		}
		texts = append(texts, clineText(r.Result, r.Error))
	}
	switch {
	case results != nil:
		res.Output = strings.Join(texts, "\n")
	case toolErr != "":
		res.Output = toolErr
	default:
		res.Output = clineText(e.Output, "")
	}
	evs := []Event{res}
	switch e.ToolName {
	case "run_commands":
		for _, r := range results {
			code, out := clineCommandOutcome(r)
			evs = append(evs, Event{Type: EventCommand, Argv: []string{"/bin/bash", "-c", r.Query}, ExitCode: intPtr(code), Output: out})
		}
	case "editor":
		var in struct {
			Path string `json:"path"`
		}
		if !res.IsError && json.Unmarshal(input, &in) == nil && in.Path != "" {
			kind := "modified"
			if strings.HasPrefix(res.Output, "File created successfully") {
				kind = "added"
			}
			evs = append(evs, Event{Type: EventFileChange, Path: in.Path, Kind: kind})
		}
	case "apply_patch":
		if !res.IsError {
			evs = append(evs, patchChanges(input)...)
		}
	}
	return evs
}

// clineResults reads a tool's output as its entries: a list of them, or
// one; nil for any other output.
func clineResults(out json.RawMessage) []clineResult {
	var list []clineResult
	if json.Unmarshal(out, &list) == nil {
		for _, r := range list {
			if r.Query == "" && r.Success == nil {
				return nil
			}
		}
		return list
	}
	var one clineResult
	if json.Unmarshal(out, &one) == nil && (one.Query != "" || one.Success != nil) {
		return []clineResult{one}
	}
	return nil
}

// clineText is a result as text: a string, or its JSON; the error if
// there is no result.
func clineText(v json.RawMessage, errText string) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s == "" {
			return errText
		}
		return s
	}
	if len(v) == 0 || string(v) == "null" {
		return errText
	}
	return string(v)
}

// clineCommandOutcome is a command's exit code and output. A command that
// exited non-zero fails with "Command exited with code N", its result
// that line in brackets and then the output; other failures (a timeout,
// an abort, a shell that did not start) are exit code 1.
func clineCommandOutcome(r clineResult) (int, string) {
	out := clineText(r.Result, "")
	if r.Success == nil || *r.Success {
		return 0, out
	}
	if n, ok := strings.CutPrefix(r.Error, "Command exited with code "); ok {
		if code, err := strconv.Atoi(n); err == nil {
			first, rest, _ := strings.Cut(out, "\n")
			if first == "[Command exited with code "+n+"]" {
				out = rest
			}
			return code, out
		}
	}
	if out == "" {
		out = r.Error
	}
	return 1, out
}

// patchChanges are the files an apply_patch input (codex's patch format,
// as a string or {"input": ...}) adds, deletes, updates or moves.
func patchChanges(input json.RawMessage) []Event {
	var patch string
	if json.Unmarshal(input, &patch) != nil {
		var in struct {
			Input string `json:"input"`
		}
		json.Unmarshal(input, &in)
		patch = in.Input
	}
	var evs []Event
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimSpace(line)
		for prefix, kind := range map[string]string{"*** Add File: ": "added", "*** Delete File: ": "deleted", "*** Update File: ": "modified"} {
			if p, ok := strings.CutPrefix(line, prefix); ok {
				evs = append(evs, Event{Type: EventFileChange, Path: p, Kind: kind})
			}
		}
		if p, ok := strings.CutPrefix(line, "*** Move to: "); ok && len(evs) > 0 {
			// The update moved the file: its old path is gone.
			evs[len(evs)-1].Kind = "deleted"
			evs = append(evs, Event{Type: EventFileChange, Path: p, Kind: "added"})
		}
	}
	return evs
}
