package tasks

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Harness is how one agent harness runs in a sandbox: a row of the
// harnesses table, not code of its own beyond its output parser.
type Harness struct {
	Name string
	// Template is the sandbox template the harness is installed in; a
	// task cannot start until the server has it.
	Template string
	// Package is the npm package (pinned) the template installs, "" for
	// none.
	Package string
	// KeyEnv is the variable the harness reads its model key from: bind a
	// tenant secret of that name, so the sandbox holds a placeholder and
	// the egress proxy puts the key in.
	KeyEnv string
	// BaseURLEnv carries Model.BaseURL to the harness.
	BaseURLEnv string
	// Env is fixed environment the harness runs with (its nonessential
	// traffic off and the like); the request's own env overrides it.
	Env map[string]string
	// EnvFor, if set, is more environment that depends on the request (a
	// config naming its model and base URL, say); the request's own env
	// overrides it too.
	EnvFor func(r Request) map[string]string
	// Hosts are the model API hosts added to the allow-list by default.
	Hosts []string
	// Argv is the non-interactive command line; the prompt is on stdin.
	Argv func(r Request) []string
	// Bin is the CLI's command when Argv starts with a wrapper (sh -c
	// writing its config first); "" when Argv starts with it.
	Bin string
	// MemoryMB is the task sandbox's memory when the request sets none
	// (0: the sandbox default).
	MemoryMB int64
	// NewParser turns the harness's stdout lines into normalized events.
	NewParser func() Parser
}

// Parser turns one harness's stdout, a line at a time, into normalized
// events. Summary is the harness's final answer, "" if it gave none.
type Parser interface {
	Line(line string) []Event
	Summary() string
}

// failer is a Parser that can tell a run exiting 0 had failed: Failure
// is why ("" if it did not). Pi, for one, exits 0 after its last model
// call failed.
type failer interface {
	Failure() string
}

// Harness names.
const (
	HarnessGeneric  = "generic"
	HarnessCodex    = "codex"
	HarnessClaude   = "claude"
	HarnessOpenCode = "opencode"
	HarnessQwen     = "qwen"
	HarnessGemini   = "gemini"
	HarnessCline    = "cline"
	HarnessPi       = "pi"
)

// harnesses is the table of supported harnesses.
var harnesses = map[string]Harness{
	HarnessGeneric: {
		Name:      HarnessGeneric,
		Template:  "base",
		Argv:      func(r Request) []string { return r.Command },
		NewParser: func() Parser { return &genericParser{} },
	},
	HarnessCodex: {
		Name:      HarnessCodex,
		Template:  "harness-codex",
		Package:   "@openai/codex@0.169.0",
		KeyEnv:    "OPENAI_API_KEY",
		Hosts:     []string{"api.openai.com"},
		Argv:      codexArgv,
		NewParser: func() Parser { return &codexParser{} },
	},
	HarnessClaude: {
		Name:       HarnessClaude,
		Template:   "harness-claude",
		Package:    "@anthropic-ai/claude-code@2.1.328",
		KeyEnv:     "ANTHROPIC_API_KEY",
		BaseURLEnv: "ANTHROPIC_BASE_URL",
		Hosts:      []string{"api.anthropic.com"},
		Env:        claudeEnv(),
		Argv:       claudeArgv,
		NewParser:  func() Parser { return &claudeParser{tools: map[string]string{}} },
	},
	HarnessOpenCode: opencodeHarness,
	HarnessQwen:     qwenHarness,
	HarnessGemini:   geminiHarness,
	HarnessCline:    clineHarness,
	HarnessPi:       piHarness,
}

// Registry is where harness templates install their package from.
const Registry = "registry.npmjs.org"

// Install is the shell command that installs the harness's package into
// a template build (its /usr/local; a build sandbox's npm prefix), "" for
// a harness that needs none. The package's install script is allowed by
// name: Claude Code's puts its native binary in place.
func (h Harness) Install() string {
	if h.Package == "" {
		return ""
	}
	name := h.Package[:strings.LastIndex(h.Package, "@")]
	return "npm install -g --no-audit --no-fund --no-update-notifier --allow-scripts=" + name + " " + h.Package
}

// Command is the harness's CLI command (its --version names its version).
func (h Harness) Command() string {
	if h.Bin != "" {
		return h.Bin
	}
	return h.Argv(Request{})[0]
}

// BuildHint is the command that builds the harness's template.
func (h Harness) BuildHint() string {
	return fmt.Sprintf("airlock template build %s --allow %s --run '%s'", h.Template, Registry, h.Install())
}

// Info is a harness as GET /v1/harnesses shows it.
type Info struct {
	Name string `json:"name"`
	// Package and Version are the pinned npm package its template
	// installs ("" for generic, which runs the task's own command).
	Package  string `json:"package,omitempty"`
	Version  string `json:"version,omitempty"`
	Template string `json:"template"`
	// Built says whether this server has the template; BuildHint is the
	// command an admin builds it with.
	Built     bool   `json:"built"`
	BuildHint string `json:"build_hint,omitempty"`
	// KeyEnv is the variable it reads its model key from (bind a secret
	// of that name); Hosts its default model API hosts.
	KeyEnv string   `json:"key_env,omitempty"`
	Hosts  []string `json:"hosts"`
}

// Harnesses lists the harness table, with whether this server has each
// one's template.
func (s *Service) Harnesses() []Info {
	out := make([]Info, 0, len(harnesses))
	for _, name := range HarnessNames() {
		h := harnesses[name]
		in := Info{Name: h.Name, Package: h.Package, Template: h.Template, Built: s.opts.HasTemplate(h.Template),
			KeyEnv: h.KeyEnv, Hosts: append([]string{}, h.Hosts...)}
		if i := strings.LastIndex(h.Package, "@"); i > 0 {
			in.Package, in.Version = h.Package[:i], h.Package[i+1:]
			in.BuildHint = h.BuildHint()
		}
		out = append(out, in)
	}
	return out
}

// HarnessNames lists the supported harnesses.
func HarnessNames() []string {
	return []string{HarnessGeneric, HarnessCodex, HarnessClaude, HarnessOpenCode, HarnessQwen, HarnessGemini, HarnessCline, HarnessPi}
}

// Lookup returns the harness with the name.
func Lookup(name string) (Harness, bool) {
	h, ok := harnesses[name]
	return h, ok
}

// env is what the harness's command gets beyond the request's own env.
func (h Harness) env(r Request, taskID string) map[string]string {
	env := map[string]string{}
	for k, v := range h.Env {
		env[k] = v
	}
	if h.EnvFor != nil {
		for k, v := range h.EnvFor(r) {
			env[k] = v
		}
	}
	for k, v := range r.Env {
		env[k] = v
	}
	if h.BaseURLEnv != "" && r.Model != nil && r.Model.BaseURL != "" {
		env[h.BaseURLEnv] = r.Model.BaseURL
	}
	env["AIRLOCK_TASK_ID"] = taskID
	env["AIRLOCK_TASK_PROMPT"] = r.Prompt
	return env
}

// genericParser: every stdout line is an assistant message, unless it is
// a JSON object that already is a normalized event of a type a harness
// may report.
type genericParser struct{ last string }

func (p *genericParser) Line(line string) []Event {
	if strings.TrimSpace(line) == "" {
		return nil
	}
	if strings.HasPrefix(line, "{") {
		var e Event
		if json.Unmarshal([]byte(line), &e) == nil && harnessTypes[e.Type] {
			e.Seq, e.SandboxID = 0, ""
			if e.Type == EventMessage && e.Role == "" {
				e.Role = "assistant"
			}
			if e.Type == EventMessage && e.Role == "assistant" {
				p.last = e.Text
			}
			return []Event{e}
		}
	}
	p.last = line
	return []Event{{Type: EventMessage, Role: "assistant", Text: line}}
}

func (p *genericParser) Summary() string { return p.last }
