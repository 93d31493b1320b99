// Package approvals owns approvals: questions put to a person about an
// action of a sandbox (for now an egress connection its policy asks
// about), their state from pending to allowed, denied or timed out, who
// decided and why, and the waiters held until then. Only an API key of
// the sandbox's tenant may decide: never a sandbox token, so that an
// agent cannot approve itself.
//
// Waiters live in the process that opened the approval: a decision taken
// through another replica is stored, but wakes no waiter here (the
// waiter times out). One process per store (airlock serve) is the case
// this package serves; waking across replicas is for later.
package approvals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/store"
)

// Kinds of approval.
const KindEgress = "egress"

// States, as the store keeps them.
const (
	Pending  = store.ApprovalPending
	Allowed  = store.ApprovalAllowed
	Denied   = store.ApprovalDenied
	TimedOut = store.ApprovalTimedOut
)

// What a decision asks to remember beyond the one request.
const (
	RememberOnce    = "once"
	RememberSandbox = "sandbox" // the sandbox's allow-list (or deny-list) gets the target
	RememberTask    = "task"    // a task runs in one sandbox: as RememberSandbox
)

// Audit and event types.
const (
	EventRequested = audit.ApprovalRequested
	EventDecided   = audit.ApprovalDecided
)

// Approval is one question as the API shows it.
type Approval struct {
	ID          string    `json:"id"`
	TenantID    string    `json:"-"`
	SandboxID   string    `json:"sandbox_id"`
	Task        string    `json:"task,omitempty"`
	Kind        string    `json:"kind"`
	Egress      *Egress   `json:"egress,omitempty"` // kind egress: what is asked
	State       string    `json:"state"`
	RequestedAt time.Time `json:"requested_at"`
	Deadline    time.Time `json:"deadline"`
	DecidedAt   time.Time `json:"decided_at,omitzero"`
	DecidedBy   string    `json:"decided_by,omitempty"` // the API key's id; "" for a timeout
	Reason      string    `json:"reason,omitempty"`
	Remember    string    `json:"remember,omitempty"`
}

// Egress is a connection held for a decision.
type Egress struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`       // http, connect or socks5
	Rule     string `json:"rule,omitempty"` // the policy's ask entry that matched; "" for "ask": true
}

// Caller is who calls: an API key (KeyID set) or a sandbox token.
type Caller struct {
	TenantID string
	KeyID    string // "" for a sandbox token
}

// Decision is a person's answer.
type Decision struct {
	Allow    bool
	Remember string // "" is RememberOnce
	Reason   string
}

// Store is what the service persists through (store.Store has it).
type Store interface {
	CreateApproval(ctx context.Context, a store.Approval) error
	GetApproval(ctx context.Context, tenantID, id string) (store.Approval, error)
	ListApprovals(ctx context.Context, tenantID, state string) ([]store.Approval, error)
	DecideApproval(ctx context.Context, a store.Approval) error
}

func toStore(a Approval) (store.Approval, error) {
	req, err := json.Marshal(a.Egress)
	if err != nil {
		return store.Approval{}, err
	}
	return store.Approval{ID: a.ID, TenantID: a.TenantID, SandboxID: a.SandboxID, Task: a.Task, Kind: a.Kind,
		Request: string(req), State: a.State, RequestedAt: a.RequestedAt, Deadline: a.Deadline,
		DecidedAt: a.DecidedAt, DecidedBy: a.DecidedBy, Reason: a.Reason, Remember: a.Remember}, nil
}

func fromStore(r store.Approval) (Approval, error) {
	a := Approval{ID: r.ID, TenantID: r.TenantID, SandboxID: r.SandboxID, Task: r.Task, Kind: r.Kind,
		State: r.State, RequestedAt: r.RequestedAt, Deadline: r.Deadline, DecidedAt: r.DecidedAt,
		DecidedBy: r.DecidedBy, Reason: r.Reason, Remember: r.Remember}
	if r.Kind == KindEgress {
		a.Egress = new(Egress)
		if err := json.Unmarshal([]byte(r.Request), a.Egress); err != nil {
			return Approval{}, fmt.Errorf("approval %s: decode request: %w", r.ID, err)
		}
	}
	return a, nil
}

func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "apr_" + hex.EncodeToString(b)
}

// Options wires a Service. Store is required.
type Options struct {
	Store  Store
	Now    func() time.Time
	Logger *slog.Logger
	// TaskOf returns the task a sandbox runs (its metadata
	// airlock.task), "" if none or unknown.
	TaskOf func(ctx context.Context, tenantID, sandboxID string) string
	// Record adds an approval event (EventRequested, EventDecided) to
	// the sandbox's audit log, whence it reaches the tenant's event
	// stream and webhooks; keyID is the actor, "" for the system.
	Record func(ctx context.Context, a Approval, typ, keyID string)
	// Remember makes a decision to remember (a.Remember sandbox or task)
	// hold for the sandbox's later connections: called before the
	// decision is stored, and an error leaves the approval pending.
	Remember func(ctx context.Context, a Approval, keyID string) error
}
