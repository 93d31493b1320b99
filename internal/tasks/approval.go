package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/askchan"
	"github.com/airlockhq/airlock/internal/initbin"
)

// Approval says which of the harness's tool calls wait for a person's
// decision (an approval of kind harness): Tools of ToolCategories, or
// every call the harness asks permission for (All). Claude Code asks
// through Airlock's MCP tool (--permission-prompt-tool), Codex through
// its PreToolUse hook (airlock-approve --hook codex); the generic
// harness asks itself with airlock-approve, which every task's sandbox
// has whether or not Approval is set.
type Approval struct {
	Tools []string
	All   bool
	// TimeoutS is how long one question waits for a decision before it
	// counts as denied (default DefaultApprovalTimeoutS).
	TimeoutS int64
}

// Tool categories a task's approval.tools names.
const (
	ToolShell   = "shell"   // running commands
	ToolWrite   = "write"   // changing files
	ToolNetwork = "network" // fetching from the web
)

// ToolCategories are the categories, in the order the API lists them.
var ToolCategories = []string{ToolShell, ToolWrite, ToolNetwork}

// Bounds of approval.timeout_s.
const (
	DefaultApprovalTimeoutS = 600
	MaxApprovalTimeoutS     = 86400
)

type approvalJSON struct {
	Tools    json.RawMessage `json:"tools"`
	TimeoutS int64           `json:"timeout_s,omitempty"`
}

// MarshalJSON writes tools as "all" or the list.
func (a Approval) MarshalJSON() ([]byte, error) {
	tools, err := json.Marshal(a.Tools)
	if a.All {
		tools, err = json.Marshal("all")
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(approvalJSON{Tools: tools, TimeoutS: a.TimeoutS})
}

// UnmarshalJSON reads tools as "all" or a list of categories.
func (a *Approval) UnmarshalJSON(b []byte) error {
	var j approvalJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*a = Approval{TimeoutS: j.TimeoutS}
	var all string
	if err := json.Unmarshal(j.Tools, &all); err == nil {
		if all != "all" {
			return fmt.Errorf(`approval.tools: want "all" or a list of %s, not %q`, strings.Join(ToolCategories, ", "), all)
		}
		a.All = true
		return nil
	}
	if err := json.Unmarshal(j.Tools, &a.Tools); err != nil || a.Tools == nil {
		return fmt.Errorf(`approval.tools: want "all" or a list of %s`, strings.Join(ToolCategories, ", "))
	}
	return nil
}

func (a *Approval) validate() error {
	for _, t := range a.Tools {
		if !slices.Contains(ToolCategories, t) {
			return invalid("approval.tools: %.40q: want %s, or \"all\"", t, strings.Join(ToolCategories, ", "))
		}
	}
	if !a.All && len(a.Tools) == 0 {
		return invalid("approval.tools: name at least one of %s, or \"all\"", strings.Join(ToolCategories, ", "))
	}
	if a.TimeoutS < 0 || a.TimeoutS > MaxApprovalTimeoutS {
		return invalid("approval.timeout_s %d: want 1..%d (default %d)", a.TimeoutS, MaxApprovalTimeoutS, DefaultApprovalTimeoutS)
	}
	if a.TimeoutS == 0 {
		a.TimeoutS = DefaultApprovalTimeoutS
	}
	return nil
}

// gates says a tool call of category waits for a person.
func (a *Approval) gates(category string) bool {
	return a != nil && (a.All || category != "" && slices.Contains(a.Tools, category))
}

// claudeCategories are Claude Code's tools by category; a tool not here
// (an MCP server's, say) has none and waits only under "all".
var claudeCategories = map[string]string{
	"Bash": ToolShell, "BashOutput": ToolShell, "KillShell": ToolShell, "KillBash": ToolShell,
	"Write": ToolWrite, "Edit": ToolWrite, "MultiEdit": ToolWrite, "NotebookEdit": ToolWrite,
	"WebFetch": ToolNetwork, "WebSearch": ToolNetwork,
}

// codexCategories are Codex's tools by category, as its PreToolUse hook
// names them: every shell command (exec_command, the older shell tools)
// as "Bash", file edits as apply_patch. The rest are the model-facing
// names of its shell tools, should a hook report one. Its web search runs
// on the model's side, where no hook sees it: none of its tools is of
// category network.
var codexCategories = map[string]string{
	"Bash": ToolShell, "exec_command": ToolShell, "write_stdin": ToolShell,
	"shell": ToolShell, "shell_command": ToolShell, "local_shell": ToolShell,
	"apply_patch": ToolWrite,
}

// category is what a harness's tool does.
func category(harness, tool string) string {
	switch harness {
	case HarnessClaude:
		return claudeCategories[tool]
	case HarnessCodex:
		return codexCategories[tool]
	}
	return ""
}

// Where airlock-approve lives in a task's sandbox.
const (
	approveDir = stateDir + "/bin"
	approveBin = approveDir + "/" + askchan.Command
)

// installApprove puts airlock-approve in the sandbox: the sandbox init
// program, which is that command by this name. A binary built without
// the init program has none to give: the command is then missing, and a
// harness asking through it is refused (it fails closed).
func (r *taskRun) installApprove(ctx context.Context, sbID string) (bool, error) {
	prog := initbin.Program()
	if prog == "" {
		r.note(sbID, "airlock-approve is missing: this airlock binary was built without the sandbox init program (go generate ./internal/initbin)")
		return false, nil
	}
	if err := r.s.m.Mkdir(ctx, r.c, sbID, approveDir, 0o755); err != nil {
		return false, fmt.Errorf("install airlock-approve: %w", err)
	}
	if _, err := r.s.m.WriteFile(ctx, r.c, sbID, approveBin, strings.NewReader(prog), 0o755); err != nil {
		return false, fmt.Errorf("install airlock-approve: %w", err)
	}
	return true, nil
}

// asker answers a task's sandbox's questions (askchan): by what a person
// decided to remember for the task, by the task's approval settings, or
// by opening an approval and waiting for it.
type asker struct {
	r *taskRun
	// remembered are decisions a person asked to keep for the task: by
	// "tool:NAME" or "command:TEXT".
	mu         sync.Mutex
	remembered map[string]bool
}

// openChannel serves the sandbox's questions until the returned stop is
// called. A sandbox that cannot have one (a runtime without network
// namespaces) gets none; airlock-approve then says so and fails.
func (r *taskRun) openChannel(ctx context.Context) (stop func()) {
	sbID := r.rec.SandboxID
	ln, err := r.s.m.ListenIn(ctx, r.c, sbID, "unix", askchan.Socket)
	if err != nil {
		r.s.log.Warn("task: approvals channel", "task", r.rec.ID, "sandbox", sbID, "err", err)
		r.note(sbID, "no approvals channel in this sandbox: %v", err)
		return func() {}
	}
	a := &asker{r: r, remembered: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		askchan.Serve(ln, a.answer)
	}()
	return func() {
		ln.Close()
		<-done
	}
}

func (a *asker) answer(ctx context.Context, q askchan.Ask) askchan.Answer {
	r := a.r
	var (
		req approvals.Request
		key string
		ev  = Event{Type: EventApproval, Kind: q.Kind}
	)
	switch q.Kind {
	case askchan.KindCommand:
		req.Command = &approvals.Command{Text: q.Text}
		key, ev.Text = "command:"+q.Text, q.Text
	case askchan.KindHarness:
		cat := category(r.h.Name, q.Tool)
		if !r.req.Approval.gates(cat) {
			// Not what the task asked to be asked about: as without
			// approvals, the harness may.
			return askchan.Answer{Allow: true, Reason: "the task's approval.tools does not name this tool"}
		}
		input := q.Input
		if len(bytes.TrimSpace(input)) == 0 {
			input = nil
		}
		req.Harness = &approvals.Harness{Harness: r.h.Name, Tool: q.Tool, Category: cat, Input: input}
		key, ev.Name, ev.Input = "tool:"+q.Tool, q.Tool, input
	default:
		return askchan.Answer{Error: fmt.Sprintf("kind %q: want command or harness", q.Kind)}
	}
	a.mu.Lock()
	allow, ok := a.remembered[key]
	a.mu.Unlock()
	if ok {
		return askchan.Answer{Allow: allow, Reason: "as a person decided earlier for this task"}
	}
	svc := r.s.opts.Approvals
	if svc == nil {
		return askchan.Answer{Error: "this server has no approvals service"}
	}
	timeout := int64(DefaultApprovalTimeoutS)
	if r.req.Approval != nil && r.req.Approval.TimeoutS > 0 {
		timeout = r.req.Approval.TimeoutS
	}
	deadline := r.s.opts.Now().Add(time.Duration(timeout) * time.Second)
	req.TenantID, req.SandboxID, req.Deadline = r.rec.TenantID, r.rec.SandboxID, deadline
	w, err := svc.Open(ctx, req)
	if err != nil {
		return askchan.Answer{Error: err.Error()}
	}
	id := w.Approval().ID
	ev.Approval, ev.Status = id, approvals.Pending
	r.s.emitLive(r.rec.ID, r.rec.SandboxID, ev)
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	ap, err := w.Wait(wctx)
	if err != nil {
		return askchan.Answer{ID: id, Error: err.Error()}
	}
	ev.Status, ev.Reason = ap.State, ap.Reason
	r.s.emitLive(r.rec.ID, r.rec.SandboxID, ev)
	ans := askchan.Answer{ID: id, Allow: ap.State == approvals.Allowed, Reason: ap.Reason}
	switch {
	case ap.State == approvals.TimedOut:
		ans.Reason = "no decision in time"
		if errors.Is(ctx.Err(), context.Canceled) {
			ans.Reason = "the question was abandoned"
		}
	case ap.Remember == approvals.RememberSandbox || ap.Remember == approvals.RememberTask:
		a.mu.Lock()
		a.remembered[key] = ans.Allow
		a.mu.Unlock()
	}
	return ans
}
