package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

// Approvals for an operator's agent: what sandboxes are waiting on, and a
// way to answer. Deciding takes an API key (the server refuses a sandbox
// token), so an agent inside a sandbox, holding only its token, cannot
// approve itself through these tools.

type approvalListIn struct {
	State     string `json:"state,omitempty" jsonschema:"pending (default), allowed, denied, timed_out, or all"`
	SandboxID string `json:"sandbox_id,omitempty" jsonschema:"only this sandbox's approvals"`
}

type approvalListOut struct {
	Approvals []approvalOut `json:"approvals"`
	Note      string        `json:"note,omitempty"`
}

type approvalRef struct {
	ID string `json:"id" jsonschema:"the approval's id (from approval_list)"`
}

type approvalDecideIn struct {
	ID       string `json:"id" jsonschema:"the approval's id (from approval_list)"`
	Decision string `json:"decision" jsonschema:"allow or deny"`
	Remember string `json:"remember,omitempty" jsonschema:"once (default: this request only); sandbox: an egress decision goes into the sandbox's network policy, so the same host and port are not asked about again; task: as sandbox, for the task's sandbox"`
	Reason   string `json:"reason,omitempty" jsonschema:"why, in a few words; kept in the sandbox's audit log and shown to a denied request"`
}

// approvalOut is an approval as a model reads it: the question in one
// line (what), with the structured fields beside it.
type approvalOut struct {
	ID          string    `json:"id" jsonschema:"pass it to approval_decide"`
	SandboxID   string    `json:"sandbox_id"`
	Task        string    `json:"task,omitempty" jsonschema:"the task whose sandbox asks, if any"`
	Kind        string    `json:"kind" jsonschema:"egress (a connection held open), command (something an agent asks to do) or harness (a harness's tool call)"`
	What        string    `json:"what" jsonschema:"what is asked, in one line; text that came from inside the sandbox is quoted"`
	Input       string    `json:"input,omitempty" jsonschema:"approval_get only: the command's whole text, or the harness tool call's input (JSON)"`
	State       string    `json:"state" jsonschema:"pending, allowed, denied or timed_out"`
	RequestedAt time.Time `json:"requested_at"`
	Deadline    time.Time `json:"deadline" jsonschema:"when a pending approval times out (and is refused)"`
	DecidedAt   time.Time `json:"decided_at,omitzero"`
	DecidedBy   string    `json:"decided_by,omitempty" jsonschema:"the id of the API key that decided"`
	Reason      string    `json:"reason,omitempty"`
	Remember    string    `json:"remember,omitempty"`
}

// Bounds of what an approval shows a model.
const (
	maxWhat       = 500
	maxInput      = 16 << 10
	maxApprovals  = 200
	allApprovals  = "all"
	decisionAllow = "allow"
	decisionDeny  = "deny"
)

func approvalOf(a client.Approval) approvalOut {
	return approvalOut{ID: a.ID, SandboxID: a.SandboxID, Task: a.Task, Kind: a.Kind, What: describe(a), State: a.State,
		RequestedAt: a.RequestedAt, Deadline: a.Deadline, DecidedAt: a.DecidedAt, DecidedBy: a.DecidedBy, Reason: a.Reason, Remember: a.Remember}
}

// describe says in one line what a is about. What came from inside the
// sandbox (a command's text, a tool's input) is quoted, so that neither a
// model nor a person takes it for Airlock's own words.
func describe(a client.Approval) string {
	switch {
	case a.Egress != nil:
		s := fmt.Sprintf("connect to %s:%d (%s)", a.Egress.Host, a.Egress.Port, a.Egress.Protocol)
		if a.Egress.Rule != "" {
			s += fmt.Sprintf(", asked by the network rule %q", a.Egress.Rule)
		}
		return s
	case a.Command != nil:
		return fmt.Sprintf("run, in the agent's words: %q", cut(a.Command.Text, maxWhat))
	case a.Harness != nil:
		s := fmt.Sprintf("%s tool call %q", a.Harness.Harness, a.Harness.Tool)
		if a.Harness.Category != "" {
			s += " (" + a.Harness.Category + ")"
		}
		if len(a.Harness.Input) > 0 {
			s += fmt.Sprintf(" with input %q", cut(string(a.Harness.Input), maxWhat))
		}
		return s
	}
	return "a " + a.Kind + " request"
}

func (b *bridge) addApprovalTools(s *mcpsdk.Server) {
	ro := &mcpsdk.ToolAnnotations{ReadOnlyHint: true}
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "approval_list", Description: "List approvals: questions sandboxes put to a person (a connection " +
		"their network policy asks about, a command an agent asks to run, a harness's tool call), pending ones by default, oldest first. " +
		"A pending one holds its sandbox's action until it is decided with approval_decide or its deadline passes (then it is refused).",
		Annotations: ro}, b.approvalList)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "approval_get", Description: "Show one approval, with the whole command text or tool input it is about, " +
		"its state, and who decided it and why.", Annotations: ro}, b.approvalGet)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "approval_decide", Description: "Allow or deny a pending approval, as the person holding this " +
		"API key: the sandbox's held action goes on or is refused at once. Decide only as that person has told you to; remember: sandbox " +
		"makes an egress decision stick for the rest of the sandbox's life."}, b.approvalDecide)
}

func (b *bridge) approvalList(ctx context.Context, req *mcpsdk.CallToolRequest, in approvalListIn) (*mcpsdk.CallToolResult, approvalListOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, approvalListOut{}, err
	}
	state := in.State
	switch state {
	case "":
		state = client.ApprovalPending
	case allApprovals:
		state = ""
	case client.ApprovalPending, client.ApprovalAllowed, client.ApprovalDenied, client.ApprovalTimedOut:
	default:
		return nil, approvalListOut{}, fmt.Errorf("state %q: want pending, allowed, denied, timed_out or all", in.State)
	}
	list, err := c.ListApprovals(ctx, state)
	if err != nil {
		return nil, approvalListOut{}, approvalError(ctx, c, "", err)
	}
	if in.SandboxID != "" {
		list = slices.DeleteFunc(list, func(a client.Approval) bool { return a.SandboxID != in.SandboxID })
	}
	out := approvalListOut{Approvals: []approvalOut{}}
	if n := len(list); n > maxApprovals {
		// Oldest first: the newest are the ones still worth reading.
		list = list[n-maxApprovals:]
		out.Note = fmt.Sprintf("%d approvals matched; only the newest %d are listed (filter by state or sandbox_id)", n, maxApprovals)
	}
	for _, a := range list {
		out.Approvals = append(out.Approvals, approvalOf(a))
	}
	return nil, out, nil
}

func (b *bridge) approvalGet(ctx context.Context, req *mcpsdk.CallToolRequest, in approvalRef) (*mcpsdk.CallToolResult, approvalOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, approvalOut{}, err
	}
	a, err := c.GetApproval(ctx, in.ID)
	if err != nil {
		return nil, approvalOut{}, approvalError(ctx, c, in.ID, err)
	}
	out := approvalOf(a)
	switch {
	case a.Command != nil:
		out.Input = a.Command.Text
	case a.Harness != nil:
		out.Input = string(a.Harness.Input)
	}
	if len(out.Input) > maxInput {
		out.Input = cut(out.Input, maxInput)
	}
	return nil, out, nil
}

func (b *bridge) approvalDecide(ctx context.Context, req *mcpsdk.CallToolRequest, in approvalDecideIn) (*mcpsdk.CallToolResult, approvalOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, approvalOut{}, err
	}
	if in.Decision != decisionAllow && in.Decision != decisionDeny {
		return nil, approvalOut{}, fmt.Errorf("decision %q: want allow or deny", in.Decision)
	}
	a, err := c.DecideApproval(ctx, in.ID, client.ApprovalDecision{Decision: in.Decision, Remember: in.Remember, Reason: in.Reason})
	if err != nil {
		return nil, approvalOut{}, approvalError(ctx, c, in.ID, err)
	}
	return nil, approvalOf(a), nil
}

// approvalError is toolError for approval id: a conflict says how the
// approval ended, for a model that tried to decide it too late.
func approvalError(ctx context.Context, c *client.Client, id string, err error) error {
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, client.ErrNotFound) && id != "":
		return fmt.Errorf("approval %s not found; list the pending ones with approval_list", id)
	case errors.Is(err, client.ErrNotFound), errors.Is(err, client.ErrUnavailable) && strings.Contains(err.Error(), "approvals"):
		return fmt.Errorf("this Airlock server has no approvals (%v)", err)
	case errors.Is(err, client.ErrConflict) && id != "":
		if a, gerr := c.GetApproval(ctx, id); gerr == nil {
			by := ""
			if a.DecidedBy != "" {
				by = " by key " + a.DecidedBy
			}
			return fmt.Errorf("approval %s was already %s%s at %s; nothing left to decide", id, a.State, by, a.DecidedAt.Format(time.RFC3339))
		}
	}
	return toolError(ctx, c, "", err)
}
