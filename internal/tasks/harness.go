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
	// Hosts are the model API hosts added to the allow-list by default.
	Hosts []string
	// Argv is the non-interactive command line; the prompt is on stdin.
	Argv func(r Request) []string
	// NewParser turns the harness's stdout lines into normalized events.
	NewParser func() Parser
}

// Parser turns one harness's stdout, a line at a time, into normalized
// events. Summary is the harness's final answer, "" if it gave none.
type Parser interface {
	Line(line string) []Event
	Summary() string
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

// BuildHint is the command that builds the harness's template.
func (h Harness) BuildHint() string {
	return fmt.Sprintf("airlock template build %s --allow %s --run '%s'", h.Template, Registry, h.Install())
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
