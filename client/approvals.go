package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Ask is a network policy's "ask": All (true) for every target the allow
// list does not admit, or the host patterns to ask about.
type Ask struct {
	All      bool
	Patterns []string
}

// IsZero says the policy asks about nothing.
func (a Ask) IsZero() bool { return !a.All && len(a.Patterns) == 0 }

// MarshalJSON writes true or the patterns.
func (a Ask) MarshalJSON() ([]byte, error) {
	if a.All {
		return []byte("true"), nil
	}
	return json.Marshal(a.Patterns)
}

// UnmarshalJSON reads true, false or a list of patterns.
func (a *Ask) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "true" || string(b) == "false" || string(b) == "null" {
		*a = Ask{All: string(b) == "true"}
		return nil
	}
	*a = Ask{}
	return json.Unmarshal(b, &a.Patterns)
}

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalAllowed  = "allowed"
	ApprovalDenied   = "denied"
	ApprovalTimedOut = "timed_out"
)

// Approval is a question put to a person about a sandbox's action.
type Approval struct {
	ID          string           `json:"id"`
	SandboxID   string           `json:"sandbox_id"`
	Task        string           `json:"task,omitempty"`
	Kind        string           `json:"kind"`              // "egress", "command" or "harness"
	Egress      *ApprovalEgress  `json:"egress,omitempty"`  // kind egress: the connection held
	Command     *ApprovalCommand `json:"command,omitempty"` // kind command: what the agent asks to do
	Harness     *ApprovalHarness `json:"harness,omitempty"` // kind harness: the tool call held
	State       string           `json:"state"`
	RequestedAt time.Time        `json:"requested_at"`
	Deadline    time.Time        `json:"deadline"`
	DecidedAt   time.Time        `json:"decided_at,omitzero"`
	DecidedBy   string           `json:"decided_by,omitempty"` // the API key's id
	Reason      string           `json:"reason,omitempty"`
	Remember    string           `json:"remember,omitempty"`
}

// ApprovalEgress is a connection held for a decision.
type ApprovalEgress struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
	Rule     string `json:"rule,omitempty"`
}

// ApprovalCommand is what an agent asks to do, in its own words
// (airlock-approve "deploy").
type ApprovalCommand struct {
	Text string `json:"text"`
}

// ApprovalHarness is a harness's tool call held for a decision.
type ApprovalHarness struct {
	Harness  string          `json:"harness"`
	Tool     string          `json:"tool"`
	Category string          `json:"category,omitempty"` // shell, write or network
	Input    json.RawMessage `json:"input,omitempty"`
}

// ApprovalDecision answers an approval. Decision is "allow" or "deny";
// Remember "once" (default), "sandbox" or "task".
type ApprovalDecision struct {
	Decision string `json:"decision"`
	Remember string `json:"remember,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// ListApprovals lists the tenant's approvals in state ("" for all),
// oldest first.
func (c *Client) ListApprovals(ctx context.Context, state string) ([]Approval, error) {
	q := url.Values{}
	if state != "" {
		q.Set("state", state)
	}
	var out struct {
		Approvals []Approval `json:"approvals"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/v1/approvals", q, nil, &out)
	return out.Approvals, err
}

// GetApproval returns one approval.
func (c *Client) GetApproval(ctx context.Context, id string) (Approval, error) {
	var a Approval
	err := c.doJSON(ctx, http.MethodGet, "/v1/approvals/"+url.PathEscape(id), nil, nil, &a)
	return a, err
}

// DecideApproval allows or denies a pending approval (API keys only).
func (c *Client) DecideApproval(ctx context.Context, id string, d ApprovalDecision) (Approval, error) {
	var a Approval
	err := c.doJSON(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(id)+"/decision", nil, d, &a)
	return a, err
}
