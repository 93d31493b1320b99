package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// mcpApproval is an approval as MCP tools return it.
type mcpApproval struct {
	ID        string `json:"id"`
	SandboxID string `json:"sandbox_id"`
	Kind      string `json:"kind"`
	What      string `json:"what"`
	State     string `json:"state"`
	DecidedBy string `json:"decided_by"`
	Reason    string `json:"reason"`
	Remember  string `json:"remember"`
}

type mcpRunAsked struct {
	ExitCode  *int          `json:"exit_code"`
	Stdout    string        `json:"stdout"`
	Note      string        `json:"note"`
	Approvals []mcpApproval `json:"approvals"`
}

// TestMCPApprovals is issue 26's MCP deliverable against a real server:
// run_command held by its sandbox's egress approval asks the MCP client's
// user (elicitation up to 2025-11-25, input_required at 2026-07-28, over
// HTTP and stdio), and the answer decides it with the caller's key; a
// client that cannot be asked waits for a decision taken elsewhere and is
// told which approval it waited on; an operator's agent lists and decides
// with approval_list and approval_decide.
func TestMCPApprovals(t *testing.T) {
	n := fakenet.Start(t)
	s := startServer(t, "", "--egress-dns", n.DNS)
	admin := s.admin()
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "mcp-apr"}))
	key := must[client.NewKey](t)(admin.CreateKey(ctx, "mcp-apr", "a"))
	api := client.New(s.url, key.Key)
	asks := &client.NetworkPolicy{Mode: client.NetworkAllowlist, Allow: []string{}, Ask: client.Ask{All: true}, AskTimeoutS: 60}
	newSandbox := func(t *testing.T) string {
		sb := must[client.Sandbox](t)(api.CreateSandbox(ctx, client.CreateRequest{Network: asks, Timeout: 10 * time.Minute}))
		t.Cleanup(func() { api.DeleteSandbox(context.Background(), sb.ID) })
		return sb.ID
	}
	curl := func(id string) map[string]any {
		return map[string]any{"sandbox_id": id, "command": "curl -s -i --max-time 60 http://" + fakenet.DeniedName + "/"}
	}
	connect := func(t *testing.T, transport, rev string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
		if transport == "http" {
			return mcpHTTPAt(t, s.url, key.Key, rev, opts)
		}
		return mcpStdioAt(t, s.bin, s.url, key.Key, rev, opts)
	}

	for _, transport := range []string{"http", "stdio"} {
		for _, rev := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(transport+"/"+rev+"/asked", func(t *testing.T) {
				id := newSandbox(t)
				asked := make(chan string, 10)
				cs := connect(t, transport, rev, &mcpsdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
					asked <- r.Params.Message
					return &mcpsdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow", "remember": "sandbox"}}, nil
				}})
				r := mcpCall[mcpRunAsked](t, cs, "run_command", curl(id))
				if !strings.Contains(r.Stdout, " 200 ") || !strings.Contains(r.Stdout, "hello from denied.test") {
					t.Errorf("curl allowed through MCP: %q", r.Stdout)
				}
				if len(r.Approvals) != 1 {
					t.Fatalf("approvals in the result: %+v", r)
				}
				a := r.Approvals[0]
				if a.SandboxID != id || a.Kind != "egress" || a.State != client.ApprovalAllowed || a.DecidedBy != key.ID || a.Remember != "sandbox" ||
					!strings.Contains(a.What, fakenet.DeniedName+":80") {
					t.Errorf("the approval: %+v (want allowed by %s, remembered)", a, key.ID)
				}
				if msg := <-asked; !strings.Contains(msg, a.ID) || !strings.Contains(msg, fakenet.DeniedName+":80") {
					t.Errorf("asked %q", msg)
				}
				// Remembered for the sandbox: the next request is not asked.
				r = mcpCall[mcpRunAsked](t, cs, "run_command", curl(id))
				if !strings.Contains(r.Stdout, " 200 ") || len(r.Approvals) != 0 || len(asked) != 0 {
					t.Errorf("after remember sandbox: %q, approvals %+v, asked %d more", r.Stdout, r.Approvals, len(asked))
				}
			})
		}
	}

	t.Run("denied", func(t *testing.T) {
		id := newSandbox(t)
		cs := connect(t, "http", "2026-07-28", &mcpsdk.ClientOptions{ElicitationHandler: func(context.Context, *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
			return &mcpsdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny", "reason": "not from here"}}, nil
		}})
		r := mcpCall[mcpRunAsked](t, cs, "run_command", curl(id))
		for _, want := range []string{"HTTP/1.1 403", "X-Airlock-Egress-Approval: denied", "not from here"} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("denied curl: %q lacks %q", r.Stdout, want)
			}
		}
		if len(r.Approvals) != 1 || r.Approvals[0].State != client.ApprovalDenied || r.Approvals[0].Reason != "not from here" {
			t.Errorf("approvals: %+v", r.Approvals)
		}
	})

	// A client that cannot be asked: the call waits, a person decides
	// through the API (here), and the result names the approval.
	for _, rev := range []string{"2026-07-28", "2025-11-25"} {
		t.Run("unasked/"+rev, func(t *testing.T) {
			id := newSandbox(t)
			cs := connect(t, "http", rev, nil)
			done := make(chan mcpRunAsked, 1)
			go func() { done <- mcpCall[mcpRunAsked](t, cs, "run_command", curl(id)) }()
			ap := pending(t, api, id, nil)
			// A person takes a while: the call looks for approvals once a
			// second, and names those it saw pending.
			time.Sleep(2500 * time.Millisecond)
			must[client.Approval](t)(api.DecideApproval(ctx, ap.ID, client.ApprovalDecision{Decision: "allow"}))
			r := <-done
			if !strings.Contains(r.Stdout, " 200 ") || len(r.Approvals) != 1 || r.Approvals[0].ID != ap.ID || r.Approvals[0].State != client.ApprovalAllowed {
				t.Errorf("run_command waited on %s: %+v", ap.ID, r)
			}
		})
	}

	// An operator's agent: a curl held by the API's exec, listed and
	// allowed over MCP.
	t.Run("operator", func(t *testing.T) {
		id := newSandbox(t)
		cs := connect(t, "http", "2026-07-28", nil)
		held := curlBG(t, api, id, "http://"+fakenet.DeniedName+"/")
		ap := pending(t, api, id, nil)
		listed := mcpCall[struct {
			Approvals []mcpApproval `json:"approvals"`
		}](t, cs, "approval_list", map[string]any{"sandbox_id": id})
		if len(listed.Approvals) != 1 || listed.Approvals[0].ID != ap.ID || listed.Approvals[0].State != client.ApprovalPending {
			t.Fatalf("approval_list: %+v", listed)
		}
		got := mcpCall[mcpApproval](t, cs, "approval_decide", map[string]any{"id": ap.ID, "decision": "allow", "reason": "operator says yes"})
		if got.State != client.ApprovalAllowed || got.DecidedBy != key.ID || got.Reason != "operator says yes" {
			t.Errorf("approval_decide: %+v", got)
		}
		if out := <-held; !strings.Contains(out, " 200 ") {
			t.Errorf("the held curl after approval_decide: %q", out)
		}
		if msg := mcpToolError(t, cs, "approval_decide", map[string]any{"id": ap.ID, "decision": "deny"}); !strings.Contains(msg, "already allowed") {
			t.Errorf("deciding twice: %q", msg)
		}
	})
}
