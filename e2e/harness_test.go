package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/e2e/modelmock"
	"github.com/airlockhq/airlock/e2e/npmreg"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
	"github.com/airlockhq/airlock/internal/tasks"
)

// harnessPacks is where e2e/harnessnode/fetch.sh puts the pinned tarballs.
var harnessPacks = filepath.Join("harnessnode", "packs")

// harnessEnv is a server on a fake internet that serves the npm registry
// (the pinned harness tarballs) at https://allowed.test/npm/.
type harnessEnv struct {
	n   *fakenet.Net
	s   *server
	reg *npmreg.Registry
	// built are the harness templates built on s so far.
	built map[string]bool
}

func startHarnessEnv(t *testing.T) *harnessEnv {
	t.Helper()
	if files, _ := filepath.Glob(filepath.Join(harnessPacks, "*.tgz")); len(files) == 0 {
		linuxtest.Lacking(t, t.Name(), harnessPacks+" is empty (run e2e/harnessnode/fetch.sh)")
	}
	n, s := startTrusting(t)
	reg, err := npmreg.New(harnessPacks)
	if err != nil {
		t.Fatal(err)
	}
	n.Handle("/npm/", reg)
	return &harnessEnv{n: n, s: s, reg: reg, built: map[string]bool{}}
}

// buildHarness builds the harness's template the way an admin would, with
// the harness table's own install command, from the fake registry (a
// mirror, to npm: its address and CA are npm settings).
func (e *harnessEnv) buildHarness(t *testing.T, name string) client.Template {
	t.Helper()
	h, ok := tasks.Lookup(name)
	if !ok || h.Install() == "" {
		t.Fatalf("harness %s has no install command", name)
	}
	ca := filepath.Join(t.TempDir(), "registry-ca.pem")
	if err := os.WriteFile(ca, e.n.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	start := time.Now()
	tmpl, cached, err := e.s.admin().BuildTemplate(ctx, client.TemplateBuild{
		Name: h.Template,
		Steps: []client.BuildStep{
			{Copy: &client.CopyStep{Src: ca, Dst: "/home/user/registry-ca.pem"}},
			{Run: h.Install()},
		},
		Env: map[string]string{
			"NPM_CONFIG_REGISTRY": "https://" + fakenet.AllowedName + "/npm/",
			"NPM_CONFIG_CAFILE":   "/home/user/registry-ca.pem",
		},
		Network: client.AllowOnly(fakenet.AllowedName),
	}, &log)
	if err != nil || cached {
		t.Fatalf("build %s (cached %v): %v\n%s", h.Template, cached, err, log.String())
	}
	t.Logf("built %s (%d MiB) in %v", h.Template, tmpl.SizeBytes>>20, time.Since(start).Round(time.Millisecond))
	e.built[name] = true
	return tmpl
}

// needHarness builds the harness's template unless this server has it.
func (e *harnessEnv) needHarness(t *testing.T, name string) {
	if !e.built[name] {
		e.buildHarness(t, name)
	}
}

// harnessCase is one harness's task against the model mock.
type harnessCase struct {
	harness string
	model   client.TaskModel
	// key is the header the API's key travels in.
	key func(http.Header) string
	// viaCLI runs the task with `airlock task run`, as a user would.
	viaCLI bool
	// noSelfUsage: the harness's output reports no token counts.
	noSelfUsage bool
}

func bearerKey(h http.Header) string { return strings.TrimPrefix(h.Get("Authorization"), "Bearer ") }

// runHarnessCase builds tc's template with npm in a build sandbox (its
// --version must name the pinned version), then runs a task with the real
// CLI against mock (its key a tenant secret the egress proxy puts in):
// the mock's tool call runs its script's command, which must write
// answer.txt (an artifact, and in the diff); the normalized events must
// show the tool call and the command; the model API got the real key on
// every call and nothing the sandbox recorded holds it.
func runHarnessCase(t *testing.T, e *harnessEnv, mock *modelmock.Mock, tc harnessCase) {
	c := e.s.admin()
	h, _ := tasks.Lookup(tc.harness)
	e.buildHarness(t, tc.harness)
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Template: h.Template}))
	res := must[client.ExecResult](t)(c.Exec(ctx, sb.ID, client.ExecRequest{Command: h.Command() + " --version", Timeout: time.Minute}))
	if version := h.Package[strings.LastIndex(h.Package, "@")+1:]; res.ExitCode != 0 || !strings.Contains(res.Stdout+res.Stderr, version) {
		t.Errorf("%s --version in a %s sandbox: %+v", tc.harness, h.Template, res)
	}
	c.DeleteSandbox(ctx, sb.ID)

	real := "sk-REAL-" + randHex(16)
	must[client.Secret](t)(c.CreateSecret(ctx, client.SecretRequest{Name: h.KeyEnv, Value: real, Hosts: []string{fakenet.AllowedName}}))
	before := len(mock.Requests())
	prompt := "The test fails: make answer.txt say fixed."
	var task client.Task
	if tc.viaCLI {
		// As a user runs it: the CLI packs the folder, streams the
		// events and writes the artifacts.
		dir, out := t.TempDir(), t.TempDir()
		os.WriteFile(filepath.Join(dir, "README.md"), []byte("a project\n"), 0o644)
		text, code := e.s.cli(e.s.adminKey, "task", "run", "--harness", tc.harness, "--prompt", prompt,
			"--model", tc.model.Name, "--base-url", tc.model.BaseURL, "--secret", h.KeyEnv,
			"--artifact", "answer.txt", "--artifact", "env.txt", "--timeout", "5m", "--out", out, dir)
		if b, _ := os.ReadFile(filepath.Join(out, "answer.txt")); code != 0 || string(b) != "fixed\n" {
			t.Fatalf("airlock task run: exit %d, answer.txt %q:\n%s", code, b, text)
		}
		_, rest, _ := strings.Cut(text, "airlock: task ")
		id, _, _ := strings.Cut(rest, " ")
		task = must[client.Task](t)(c.GetTask(ctx, id))
	} else {
		model := tc.model
		task = must[client.Task](t)(c.CreateTask(ctx, client.TaskRequest{
			Harness: tc.harness, Prompt: prompt,
			Files: map[string]string{"README.md": "a project\n"},
			Model: &model, Secrets: []string{h.KeyEnv}, Artifacts: []string{"answer.txt", "env.txt"},
			TimeoutS: 300,
		}))
	}
	var evs []client.TaskEvent
	must[int64](t)(c.FollowTask(ctx, task.ID, 0, func(ev client.TaskEvent) error {
		evs = append(evs, ev)
		return nil
	}))
	got := must[client.Task](t)(c.GetTask(ctx, task.ID))
	if got.State != client.TaskSucceeded || got.Summary != modelmock.DefaultFinal {
		t.Fatalf("task %+v\nevents:\n%s", got, eventLines(evs))
	}
	var toolCall, command bool
	for _, ev := range evs {
		toolCall = toolCall || ev.Type == "tool_call" && strings.Contains(string(ev.Input), "answer.txt")
		command = command || ev.Type == "command" && strings.Contains(strings.Join(ev.Argv, " "), "echo fixed > answer.txt") && ev.ExitCode != nil && *ev.ExitCode == 0
	}
	if !toolCall || !command {
		t.Errorf("events lack the tool call (%v) or the command (%v):\n%s", toolCall, command, eventLines(evs))
	}
	// What the harness reported, and beside it what the egress proxy
	// counted of the mock's answers (every call, each with usage).
	if !tc.noSelfUsage && (got.Usage.Reported.InputTokens == 0 || got.Usage.Reported.OutputTokens == 0) {
		t.Errorf("token usage the harness reported: %+v", got.Usage)
	}
	if got.Usage.Calls == 0 || got.Usage.UnmeteredCalls != 0 || got.Usage.InputTokens == 0 || got.Usage.OutputTokens == 0 {
		t.Errorf("token usage the proxy counted: %+v", got.Usage)
	}
	arts := must[client.TaskArtifacts](t)(c.TaskArtifacts(ctx, task.ID))
	var buf bytes.Buffer
	must[int64](t)(c.ReadTaskArtifact(ctx, task.ID, "answer.txt", &buf))
	if buf.String() != "fixed\n" || arts.Diff == nil || !strings.Contains(arts.Diff.Text, "+fixed") {
		t.Errorf("answer.txt %q, diff %+v", buf.String(), arts.Diff)
	}
	// The model API got the real key on every call, and the task's
	// sandbox only ever held the placeholder: nothing it recorded
	// (commands, output, files) holds the key.
	reqs := mock.Requests()[before:]
	if len(reqs) < 2 {
		t.Fatalf("the mock got %d requests", len(reqs))
	}
	for _, r := range reqs {
		if k := tc.key(r.Header); k != real {
			t.Errorf("%s %s reached the mock with key %q, want the real one", r.Method, r.Path, k)
		}
	}
	buf.Reset()
	must[int64](t)(c.ReadTaskArtifact(ctx, task.ID, "env.txt", &buf))
	if env := buf.String(); strings.Contains(env, real) || !strings.Contains(env, h.KeyEnv+"=") {
		t.Errorf("the harness's environment holds the key, or no placeholder:\n%s", env)
	}
	var injected int
	c.AuditLog(ctx, got.SandboxID, client.AuditQuery{}, func(ev client.AuditEvent) error {
		if strings.Contains(string(ev.Data), real) {
			t.Errorf("the sandbox's audit log holds the key: %s %s", ev.Type, ev.Data)
		}
		if ev.Type == "secret.injected" {
			injected++
		}
		return nil
	})
	if injected == 0 {
		t.Error("no secret.injected event")
	}
}

// TestHarnesses: the Codex and Claude Code templates are built with npm in
// build sandboxes; then each real CLI completes a task against a scripted
// model API in the fake internet (its key a tenant secret the egress proxy
// puts in): the mock's tool call runs `echo fixed > answer.txt`, which
// comes back as an artifact and in the diff, and the normalized events show
// the tool call and the command.
func TestHarnesses(t *testing.T) {
	e := startHarnessEnv(t)
	// The harness's shell also saves its environment, to show what the
	// sandbox held.
	mock := modelmock.New(modelmock.Script{Command: modelmock.DefaultCommand + "; env > env.txt"})
	e.n.Handle("/v1/", mock)
	c := e.s.admin()
	for _, tc := range []harnessCase{
		{harness: tasks.HarnessCodex, model: client.TaskModel{BaseURL: "https://" + fakenet.AllowedName + "/v1"}, key: bearerKey},
		{harness: tasks.HarnessClaude, model: client.TaskModel{BaseURL: "https://" + fakenet.AllowedName, Name: "claude-sonnet-4-5"},
			key: func(h http.Header) string { return h.Get("X-Api-Key") }, viaCLI: true},
	} {
		t.Run(tc.harness, func(t *testing.T) { runHarnessCase(t, e, mock, tc) })
	}

	// Claude Code asking permission through Airlock: its Bash call
	// waits for a person's decision.
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprintf("claude-approval/allow=%v", allow), func(t *testing.T) { claudeApproval(t, e, allow) })
	}
	// Codex asking through its PreToolUse hook, airlock-approve --hook
	// codex: the same.
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprintf("codex-approval/allow=%v", allow), func(t *testing.T) { codexApproval(t, e, allow) })
	}

	// Claude Code cut in the middle: its tool (the mock's command) runs
	// while the daemon is killed or stopped, then the CLI sends the tool's
	// result to the model through the next daemon's proxy, and the task
	// ends succeeded with its artifacts, each event once.
	slow := modelmock.New(modelmock.Script{Command: "echo fixed > answer.txt; sleep 6; echo slept"})
	e.n.Handle("/slow/", slow)
	h, _ := tasks.Lookup(tasks.HarnessClaude)
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run("claude-restart/"+strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			task := must[client.Task](t)(c.CreateTask(ctx, client.TaskRequest{
				Harness: tasks.HarnessClaude, Prompt: "make answer.txt say fixed, slowly",
				Model:   &client.TaskModel{BaseURL: "https://" + fakenet.AllowedName + "/slow", Name: "claude-sonnet-4-5"},
				Secrets: []string{h.KeyEnv}, Artifacts: []string{"answer.txt"}, TimeoutS: 300,
			}))
			errCalled := errors.New("the tool was called")
			last, err := c.FollowTask(ctx, task.ID, 0, func(ev client.TaskEvent) error {
				if ev.Type == "tool_call" {
					return errCalled
				}
				return nil
			})
			if !errors.Is(err, errCalled) {
				t.Fatalf("waiting for the tool call: %v", err)
			}
			time.Sleep(time.Second) // the tool's command runs
			restartServer(t, e.s, how, 2*time.Second)
			c = e.s.admin()
			must[int64](t)(c.FollowTask(ctx, task.ID, last, func(client.TaskEvent) error { return nil }))
			got := must[client.Task](t)(c.GetTask(ctx, task.ID))
			evs := must[[]client.TaskEvent](t)(c.TaskEvents(ctx, task.ID, 0))
			var lines []string
			calls := 0
			for i, ev := range evs {
				b, _ := json.Marshal(ev)
				lines = append(lines, string(b))
				if ev.Seq != int64(i+1) {
					t.Errorf("event %d has seq %d", i, ev.Seq)
				}
				if ev.Type == "tool_call" {
					calls++
				}
			}
			if got.State != client.TaskSucceeded || got.Summary != modelmock.DefaultFinal || calls != 1 {
				t.Fatalf("task %+v (%d tool calls)\nevents:\n%s", got, calls, strings.Join(lines, "\n"))
			}
			if got.Usage.Reported.InputTokens == 0 || got.Usage.Reported.OutputTokens == 0 || got.Usage.Calls == 0 {
				t.Errorf("token usage %+v", got.Usage)
			}
			var buf bytes.Buffer
			must[int64](t)(c.ReadTaskArtifact(ctx, task.ID, "answer.txt", &buf))
			if buf.String() != "fixed\n" {
				t.Errorf("answer.txt %q", buf.String())
			}
			if v := must[client.AuditVerify](t)(c.VerifyAudit(ctx, got.SandboxID)); !v.OK {
				t.Errorf("audit chain of the task's sandbox: %+v", v)
			}
			assertNoSandboxesLeft(t, e.s, got.SandboxID)
		})
	}
}

// claudeApproval runs a Claude Code task whose shell calls wait for a
// person (approval: tools shell): the mock's Bash call opens an approval
// of kind harness naming the tool and its command; allowed, the command
// runs and its file is an artifact; denied, it does not run, claude gets
// the denial as its tool's answer, and the task still finishes.
func claudeApproval(t *testing.T, e *harnessEnv, allow bool) {
	harnessApproval(t, e, tasks.HarnessClaude, client.TaskModel{BaseURL: "https://" + fakenet.AllowedName, Name: "claude-sonnet-4-5"}, allow)
}

// codexApproval is claudeApproval for Codex, whose PreToolUse hook names
// every shell command's call Bash too. Airlock's own hook-trust warning
// is no error of the task.
func codexApproval(t *testing.T, e *harnessEnv, allow bool) {
	evs := harnessApproval(t, e, tasks.HarnessCodex, client.TaskModel{BaseURL: "https://" + fakenet.AllowedName + "/v1"}, allow)
	for _, ev := range evs {
		if ev.Type == "message" && ev.Role == "error" {
			t.Errorf("an error event: %s", ev.Text)
		}
	}
}

// harnessApproval runs the harness's task with approval: tools shell
// against the mock, decides its approval (allow or deny) and checks the
// outcome; it returns the task's events.
func harnessApproval(t *testing.T, e *harnessEnv, harness string, model client.TaskModel, allow bool) []client.TaskEvent {
	c := e.s.admin()
	h, _ := tasks.Lookup(harness)
	e.needHarness(t, harness)
	if _, err := c.CreateSecret(ctx, client.SecretRequest{Name: h.KeyEnv, Value: "sk-REAL-" + randHex(16), Hosts: []string{fakenet.AllowedName}}); err != nil && !errors.Is(err, client.ErrConflict) {
		t.Fatal(err)
	}
	task := must[client.Task](t)(c.CreateTask(ctx, client.TaskRequest{
		Harness: harness, Prompt: "make answer.txt say fixed, if a person lets you",
		Model: &model, Secrets: []string{h.KeyEnv}, Artifacts: []string{"answer.txt"}, TimeoutS: 300,
		Approval: &client.TaskApproval{Tools: []string{"shell"}},
	}))
	if task.Approval == nil || len(task.Approval.Tools) != 1 || task.Approval.TimeoutS != tasks.DefaultApprovalTimeoutS {
		t.Errorf("the task shows approval %+v", task.Approval)
	}
	var ap client.Approval
	for deadline := time.Now().Add(3 * time.Minute); ap.ID == "" && time.Now().Before(deadline); {
		for _, a := range must[[]client.Approval](t)(c.ListApprovals(ctx, "pending")) {
			if a.Task == task.ID {
				ap = a
			}
		}
		if got := must[client.Task](t)(c.GetTask(ctx, task.ID)); got.Ended() {
			t.Fatalf("the task ended %s before asking; events:\n%s", got.State, eventLines(must[[]client.TaskEvent](t)(c.TaskEvents(ctx, task.ID, 0))))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ap.ID == "" {
		t.Fatal("no approval opened for the task's Bash call")
	}
	var input struct{ Command string }
	if ap.Kind != "harness" || ap.Harness == nil || ap.Harness.Harness != harness || ap.Harness.Tool != "Bash" ||
		ap.Harness.Category != "shell" || json.Unmarshal(ap.Harness.Input, &input) != nil ||
		!strings.HasPrefix(input.Command, "echo fixed > answer.txt") {
		t.Errorf("approval %+v, harness %+v", ap, ap.Harness)
	}
	decision := "deny"
	if allow {
		decision = "allow"
	}
	must[client.Approval](t)(c.DecideApproval(ctx, ap.ID, client.ApprovalDecision{Decision: decision, Reason: "e2e"}))
	var evs []client.TaskEvent
	must[int64](t)(c.FollowTask(ctx, task.ID, 0, func(ev client.TaskEvent) error {
		evs = append(evs, ev)
		return nil
	}))
	got := must[client.Task](t)(c.GetTask(ctx, task.ID))
	var asked, answered, ran bool
	for _, ev := range evs {
		asked = asked || ev.Type == "approval" && ev.Approval == ap.ID && ev.Status == "pending" && ev.Name == "Bash"
		answered = answered || ev.Type == "approval" && ev.Approval == ap.ID && ev.Status == map[bool]string{true: "allowed", false: "denied"}[allow]
		ran = ran || ev.Type == "command" && strings.Contains(strings.Join(ev.Argv, " "), "answer.txt") && ev.ExitCode != nil && *ev.ExitCode == 0
	}
	if got.State != client.TaskSucceeded || got.Summary != modelmock.DefaultFinal || !asked || !answered || ran != allow {
		t.Fatalf("task %s %q (asked %v, answered %v, ran %v)\nevents:\n%s", got.State, got.Summary, asked, answered, ran, eventLines(evs))
	}
	var buf bytes.Buffer
	_, err := c.ReadTaskArtifact(ctx, task.ID, "answer.txt", &buf)
	switch {
	case allow && (err != nil || buf.String() != "fixed\n"):
		t.Errorf("allowed: answer.txt %q, %v", buf.String(), err)
	case !allow && err == nil:
		t.Errorf("denied, yet answer.txt %q exists", buf.String())
	}
	// The decision is in the sandbox's audit log, with who made it.
	var decided bool
	c.AuditLog(ctx, got.SandboxID, client.AuditQuery{}, func(ev client.AuditEvent) error {
		decided = decided || ev.Type == "approval.decided" && strings.Contains(string(ev.Data), ap.ID) && strings.Contains(string(ev.Data), "e2e")
		return nil
	})
	if !decided {
		t.Error("no approval.decided in the task sandbox's audit log")
	}
	return evs
}

// eventLines is a task's events as JSON lines, for a failure's message.
func eventLines(evs []client.TaskEvent) string {
	var lines []string
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		lines = append(lines, string(b))
	}
	return strings.Join(lines, "\n")
}
