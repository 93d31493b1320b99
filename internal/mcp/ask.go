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

// A tool call that waits on a sandbox (a command, a task) may be waiting
// on an approval: a connection the sandbox's policy asks about, say. The
// person to ask is often the one at the MCP client, so the call asks them
// in the way the client's protocol revision has for it:
//   - up to 2025-11-25, a session that declared elicitation gets an
//     elicitation/create request while the call runs (sentry);
//   - from 2026-07-28 there are no server requests: the call ends with an
//     input_required result, and the client retries it with the answer
//     (rounds.go);
//   - a client that can do neither is not asked: the call waits as it
//     would anyway, and its result names the approvals it waited on, for
//     someone to decide elsewhere (the CLI, the API, an operator's agent).
//
// The answer is decided with the caller's own API key: the person at the
// client is the one the key stands for.

// askMode is how a call's client can be asked.
type askMode int

const (
	askNone   askMode = iota // not at all: wait, and name the approvals in the result
	askElicit                // elicitation/create during the call
	askInput                 // an input_required result, answered by the retry
)

// askModeOf tells how the client of req can be asked: it must have
// declared form elicitation (an empty elicitation capability means form,
// as the specification says for clients older than url mode).
func askModeOf(req *mcpsdk.CallToolRequest) askMode {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil || caps.Elicitation.Form == nil && caps.Elicitation.URL != nil {
		return askNone
	}
	if req.ProtocolVersion() >= firstStateless {
		return askInput
	}
	if req.Session == nil {
		return askNone
	}
	return askElicit
}

// approvalPoll is how often a waiting call looks for new approvals.
var approvalPoll = time.Second

// target is what a call waits on: a sandbox, or a task (whose sandbox may
// not be known when the call begins).
type target struct {
	sandbox string
	task    string
}

func (t target) has(a client.Approval) bool {
	return t.sandbox != "" && a.SandboxID == t.sandbox || t.task != "" && a.Task == t.task
}

// watch finds the approvals that open for a target while a call waits on
// it. It polls the tenant's pending approvals rather than following
// the event stream: the list is the truth, so nothing is lost to a stream
// that was still connecting when the sandbox asked, and it works where
// the server publishes no events.
type watch struct {
	c    *client.Client
	of   target
	skip map[string]bool // pending before the call began: another call's business
	seen []string        // opened during the call, oldest first
	off  bool            // this server has no approvals
}

// newWatch notes what is pending for t now, before the call acts, so
// that only what its action opens is asked about.
func newWatch(ctx context.Context, c *client.Client, t target) (*watch, error) {
	w := &watch{c: c, of: t, skip: map[string]bool{}}
	if t.sandbox == "" {
		// A task the call just created: nothing of it can predate the call.
		return w, nil
	}
	list, err := w.pending(ctx)
	for _, a := range list {
		w.skip[a.ID] = true
	}
	return w, err
}

// resumeWatch is a watch carried over from an earlier round of the call.
func resumeWatch(c *client.Client, t target, skip, seen []string) *watch {
	w := &watch{c: c, of: t, skip: map[string]bool{}, seen: slices.Clone(seen)}
	for _, id := range skip {
		w.skip[id] = true
	}
	return w
}

// pending lists the target's pending approvals, oldest first. A server
// without approvals (an older one, a fake) has nothing pending.
func (w *watch) pending(ctx context.Context) ([]client.Approval, error) {
	if w.off {
		return nil, nil
	}
	list, err := w.c.ListApprovals(ctx, client.ApprovalPending)
	if errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrUnavailable) {
		w.off = true
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list, func(a client.Approval) bool { return !w.of.has(a) }), nil
}

// poll returns up to limit approvals that opened since the last poll (the
// rest come with the next one), and the ids of all that are pending.
func (w *watch) poll(ctx context.Context, limit int) ([]client.Approval, map[string]bool, error) {
	list, err := w.pending(ctx)
	if err != nil {
		return nil, nil, err
	}
	var opened []client.Approval
	pending := map[string]bool{}
	for _, a := range list {
		pending[a.ID] = true
		if !w.skip[a.ID] && !slices.Contains(w.seen, a.ID) && len(opened) < limit {
			opened = append(opened, a)
			w.seen = append(w.seen, a.ID)
		}
	}
	return opened, pending, nil
}

// ended describes the approvals the call saw, as they stand now, with a
// note about those still pending.
func (w *watch) ended(ctx context.Context) ([]approvalOut, []string) {
	if len(w.seen) == 0 {
		return nil, nil
	}
	// The call's own context may have ended; the answer still says what
	// happened.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var out []approvalOut
	var notes []string
	for _, id := range w.seen {
		a, err := w.c.GetApproval(ctx, id)
		if err != nil {
			notes = append(notes, fmt.Sprintf("approval %s: %v", id, err))
			continue
		}
		out = append(out, approvalOf(a))
		if a.State == client.ApprovalPending {
			notes = append(notes, fmt.Sprintf("approval %s is still pending until %s: a person can decide it with `airlock approvals allow %s` (or deny)",
				id, a.Deadline.Format(time.RFC3339), id))
		}
	}
	return out, notes
}

// askParams is the question about a put to the client's user: a form
// with the decision, for egress (or a task's request) how long to
// remember it, and a reason.
func askParams(a client.Approval) *mcpsdk.ElicitParams {
	who := "Sandbox " + a.SandboxID
	if a.Task != "" {
		who += " (task " + a.Task + ")"
	}
	msg := fmt.Sprintf("%s is waiting for approval %s: %s. Allow it? Your answer is recorded with your Airlock API key; "+
		"if nobody answers, it is refused at %s.", who, a.ID, describe(a), a.Deadline.UTC().Format("15:04:05 UTC"))
	props := map[string]any{
		"decision": map[string]any{"type": "string", "title": "Decision", "enum": []string{decisionAllow, decisionDeny},
			"description": "allow lets the sandbox go on; deny refuses it"},
		"reason": map[string]any{"type": "string", "title": "Reason", "maxLength": maxReason,
			"description": "optional; kept in the sandbox's audit log"},
	}
	switch {
	case a.Kind == "egress":
		props["remember"] = map[string]any{"type": "string", "title": "Remember", "enum": []string{"once", "sandbox"}, "default": "once",
			"description": "once: this connection only; sandbox: the same host and port for the rest of the sandbox's life"}
	case a.Task != "":
		// A task's command or tool call: remembered, the same question is
		// answered the same way for the rest of the task.
		props["remember"] = map[string]any{"type": "string", "title": "Remember", "enum": []string{"once", "task"}, "default": "once",
			"description": "once: this time only; task: the same request (or tool) the same way for the rest of the task"}
	}
	return &mcpsdk.ElicitParams{Mode: "form", Message: msg,
		RequestedSchema: map[string]any{"type": "object", "properties": props, "required": []string{"decision"}}}
}

// maxReason is the API's bound on a decision's reason.
const maxReason = 1000

// answer decides approval id as the client's user answered res, with c
// (their own key). Accept with a decision decides it; decline denies it,
// since the person refused; cancel, or no answer, leaves it pending for
// someone else to decide before its deadline. It returns a line for the
// call's result when the answer could not be applied ("" otherwise).
func answer(ctx context.Context, c *client.Client, id string, res *mcpsdk.ElicitResult) string {
	var d client.ApprovalDecision
	switch {
	case res == nil || res.Action == "cancel":
		return ""
	case res.Action == "decline":
		d = client.ApprovalDecision{Decision: decisionDeny, Reason: "declined in the MCP client"}
	case res.Action == "accept":
		var err error
		if d, err = decisionOf(res.Content); err != nil {
			return fmt.Sprintf("the answer to approval %s was not understood (%v); it is still pending", id, err)
		}
	default:
		return fmt.Sprintf("the answer to approval %s was %q, which is not accept, decline or cancel; it is still pending", id, res.Action)
	}
	_, err := c.DecideApproval(ctx, id, d)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, client.ErrConflict):
		return fmt.Sprintf("approval %s had been decided (or had timed out) before the answer came", id)
	}
	return fmt.Sprintf("the answer to approval %s could not be recorded: %v", id, err)
}

// decisionOf reads the form askParams asked for. The client is not
// trusted to have checked it against the schema (a 2026-07-28 answer
// comes back with the retry, unchecked by the SDK).
func decisionOf(content map[string]any) (client.ApprovalDecision, error) {
	str := func(k string) (string, error) {
		switch v := content[k].(type) {
		case nil:
			return "", nil
		case string:
			return v, nil
		}
		return "", fmt.Errorf("%s is not a string", k)
	}
	var d client.ApprovalDecision
	var err error
	if d.Decision, err = str("decision"); err != nil {
		return d, err
	}
	if d.Decision != decisionAllow && d.Decision != decisionDeny {
		return d, fmt.Errorf("decision %q: want allow or deny", d.Decision)
	}
	if d.Remember, err = str("remember"); err != nil {
		return d, err
	}
	if d.Remember != "" && d.Remember != "once" && d.Remember != "sandbox" && d.Remember != "task" {
		return d, fmt.Errorf("remember %q: want once, sandbox or task", d.Remember)
	}
	if d.Reason, err = str("reason"); err != nil {
		return d, err
	}
	if d.Reason = strings.TrimSpace(d.Reason); d.Reason == "" {
		d.Reason = "answered in the MCP client"
	}
	if len(d.Reason) > maxReason {
		d.Reason = cut(d.Reason, maxReason-3)
	}
	return d, nil
}
