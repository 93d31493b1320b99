package tasks

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/internal/runtime"
)

// opencodeHarness runs OpenCode: opencode-ai is a wrapper whose
// postinstall script (allowed by Install) links the Bun-compiled binary
// of opencode-linux-x64 as its bin, or of opencode-linux-x64-baseline on
// a CPU without AVX2; npm installs both (185 MB each).
var opencodeHarness = Harness{
	Name:      HarnessOpenCode,
	Template:  "harness-opencode",
	Package:   "opencode-ai@1.18.33",
	KeyEnv:    "OPENAI_API_KEY",
	Hosts:     []string{"api.openai.com"},
	MemoryMB:  opencodeMemoryMB,
	Env:       opencodeEnv(),
	EnvFor:    opencodeConfig,
	Argv:      opencodeArgv,
	NewParser: func() Parser { return &opencodeParser{} },
}

// opencodeMemoryMB is an OpenCode task's memory unless the request sets
// one: about 500 MiB by its first model call leaves the 512 MiB default
// no room.
const opencodeMemoryMB = 1024

// Where OpenCode goes when the request names no model endpoint. The
// model is the one OpenCode 1.18's bundled catalog calls OpenAI's
// default.
const (
	opencodeAPI   = "https://api.openai.com/v1"
	opencodeModel = "gpt-5.5"
)

// opencodeArgv is OpenCode's non-interactive command line. `run` reads
// the prompt from stdin when stdin is not a terminal. --auto approves
// whatever a project's own config still asks about (no one is there to
// answer; the sandbox is the boundary). A title saves the model call
// that would otherwise name the session. --thinking puts reasoning in
// the output. On an API error worth retrying (429, 5xx, a lost
// connection) OpenCode tries 5 more times over about two minutes,
// printing nothing, then prints an error line and exits 1.
func opencodeArgv(r Request) []string {
	return []string{"opencode", "run", "--format", "json", "--auto", "--thinking", "--title", "airlock task"}
}

// opencodeEnv turns off what OpenCode fetches unasked: the model catalog
// from models.opencode.ai at every start, update checks, LSP server
// downloads a project's config could enable, and session sharing.
//
// One fetch has no switch: at start OpenCode installs @opencode-ai/plugin
// with npm into its global config directory (~/.config/opencode) from
// the npm registry unless that directory is read-only or already has it.
// Without the registry allowed the install fails with a warning on
// stderr and the run goes on.
func opencodeEnv() map[string]string {
	return map[string]string{
		"OPENCODE_DISABLE_MODELS_FETCH": "1",
		"OPENCODE_DISABLE_AUTOUPDATE":   "1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
		"OPENCODE_DISABLE_SHARE":        "1",
	}
}

// opencodeConfig is OpenCode's environment for the request. Its config,
// in OPENCODE_CONFIG_CONTENT (which overrides the global and the
// project's configs), has one OpenAI-compatible provider (Chat
// Completions) at the request's base URL, its key read from
// OPENAI_API_KEY (the placeholder the egress proxy replaces), the only
// provider enabled, so another key in the environment cannot pull the
// task (or its small-model side calls) elsewhere. Every permission is
// allowed. Snapshots are off: Airlock keeps the workspace's own, and
// OpenCode's (a git store of every file of a repository, under
// ~/.local/share/opencode) would only cost disk, memory and time.
//
// OpenCode picks tools by model name: a "gpt-" model (not gpt-4 or
// -oss) edits through apply_patch, others through edit and write.
//
// OpenCode takes about 500 MiB of anonymous memory by its first model
// call when its JavaScript engine sizes the heap for the host's RAM: a
// default sandbox (512 MiB) can kill it. BUN_JSC_forceRAMSize makes the
// engine size the heap for half the sandbox's memory instead (the
// other half for the binary, the shell and its commands), which brings
// it to about 400 MiB.
func opencodeConfig(r Request) map[string]string {
	base, name := opencodeAPI, opencodeModel
	if r.Model != nil && r.Model.BaseURL != "" {
		base = r.Model.BaseURL
	}
	if r.Model != nil && r.Model.Name != "" {
		name = r.Model.Name
	}
	cfg := map[string]any{
		"provider": map[string]any{
			"airlock": map[string]any{
				"npm":  "@ai-sdk/openai-compatible",
				"name": "Airlock",
				"options": map[string]any{
					"baseURL": base,
					"apiKey":  "{env:OPENAI_API_KEY}",
				},
				"models": map[string]any{name: map[string]any{"name": name}},
			},
		},
		"enabled_providers": []string{"airlock"},
		"model":             "airlock/" + name,
		"small_model":       "airlock/" + name,
		"permission":        "allow",
		"autoupdate":        false,
		"share":             "disabled",
		"snapshot":          false,
	}
	b, _ := json.Marshal(cfg)
	mem := runtime.Limits{MemoryMB: cmp.Or(r.Limits.MemoryMB, opencodeMemoryMB)}.WithDefaults().MemoryMB
	return map[string]string{
		"OPENCODE_CONFIG_CONTENT": string(b),
		"BUN_JSC_forceRAMSize":    strconv.FormatInt(mem<<20/2, 10),
	}
}

// opencodeParser reads `opencode run --format json`: one JSON object a
// line, typed step_start, text, reasoning, tool_use, step_finish (a model
// call's tokens) and error. A tool_use line comes once the tool is done
// (status completed or error), so it is both the call and its result.
type opencodeParser struct{ last string }

type opencodeLine struct {
	Type  string        `json:"type"`
	Part  *opencodePart `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	} `json:"error"`
}

type opencodePart struct {
	Text   string `json:"text"`
	Tool   string `json:"tool"`
	CallID string `json:"callID"`
	State  struct {
		Status   string          `json:"status"`
		Input    json.RawMessage `json:"input"`
		Output   string          `json:"output"`
		Error    string          `json:"error"`
		Metadata json.RawMessage `json:"metadata"`
	} `json:"state"`
	Tokens *struct {
		Input     int64 `json:"input"`
		Output    int64 `json:"output"`
		Reasoning int64 `json:"reasoning"`
		Cache     struct {
			Read  int64 `json:"read"`
			Write int64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
}

func (p *opencodeParser) Summary() string { return p.last }

func (p *opencodeParser) Line(line string) []Event {
	var l opencodeLine
	if json.Unmarshal([]byte(line), &l) != nil || l.Type == "" {
		return rawLine(line)
	}
	switch l.Type {
	case "step_start":
		return nil
	case "error":
		msg := ""
		if l.Error != nil {
			msg = l.Error.Data.Message
			if msg == "" {
				msg = l.Error.Name
			}
		}
		return []Event{{Type: EventMessage, Role: "error", Text: msg}}
	}
	if l.Part == nil {
		return rawLine(line)
	}
	switch l.Type {
	case "text", "reasoning":
		// A part can end empty (a model that only called tools); it is
		// no answer.
		if strings.TrimSpace(l.Part.Text) == "" {
			return nil
		}
		if l.Type == "reasoning" {
			return []Event{{Type: EventMessage, Role: "reasoning", Text: l.Part.Text}}
		}
		p.last = l.Part.Text
		return []Event{{Type: EventMessage, Role: "assistant", Text: l.Part.Text}}
	case "step_finish":
		t := l.Part.Tokens
		if t == nil {
			return nil
		}
		// OpenCode splits cached input off input and reasoning off
		// output; the model read and wrote them all the same.
		return []Event{{Type: EventUsage, InputTokens: t.Input + t.Cache.Read + t.Cache.Write, OutputTokens: t.Output + t.Reasoning}}
	case "tool_use":
		return opencodeTool(l.Part)
	}
	return rawLine(line)
}

// opencodeTool is a finished tool's call, result, and what it did: a
// bash call's command, the files a write, edit or apply_patch changed.
func opencodeTool(part *opencodePart) []Event {
	st := part.State
	failed := st.Status == "error"
	out := st.Output
	if failed {
		out = st.Error
	}
	evs := []Event{
		{Type: EventToolCall, ID: part.CallID, Name: part.Tool, Input: st.Input},
		{Type: EventToolResult, ID: part.CallID, Name: part.Tool, Output: out, IsError: failed},
	}
	if failed {
		// The tool threw before it ran (a permission refused, bad
		// arguments): no command ran, no file changed.
		return evs
	}
	var in struct {
		Command  string `json:"command"`
		FilePath string `json:"filePath"`
	}
	json.Unmarshal(st.Input, &in)
	var meta struct {
		Output *string `json:"output"`
		Exit   *int    `json:"exit"`
		Exists *bool   `json:"exists"`
		Files  []struct {
			FilePath string `json:"filePath"`
			Type     string `json:"type"`
		} `json:"files"`
	}
	json.Unmarshal(st.Metadata, &meta)
	switch part.Tool {
	case "bash":
		// OpenCode runs the line with `$SHELL -c` ($SHELL if it is a
		// shell it knows, else bash, else sh): bash in a sandbox. Exit
		// is null for a command it killed (timeout, abort).
		cmdOut := st.Output
		if meta.Output != nil {
			cmdOut = *meta.Output
		}
		if cmdOut == "(no output)" {
			cmdOut = "" // OpenCode's words for an empty output
		}
		evs = append(evs, Event{Type: EventCommand, Argv: []string{"bash", "-c", in.Command}, ExitCode: meta.Exit, Output: cmdOut})
	case "write":
		kind := "modified"
		if meta.Exists != nil && !*meta.Exists {
			kind = "added"
		}
		evs = append(evs, Event{Type: EventFileChange, Path: in.FilePath, Kind: kind})
	case "edit":
		evs = append(evs, Event{Type: EventFileChange, Path: in.FilePath, Kind: "modified"})
	case "apply_patch":
		for _, f := range meta.Files {
			evs = append(evs, Event{Type: EventFileChange, Path: f.FilePath, Kind: changeKind(f.Type)})
		}
	}
	return evs
}
