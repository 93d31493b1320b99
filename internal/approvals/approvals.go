// Package approvals owns approvals: questions put to a person about an
// action of a sandbox (for now an egress connection its policy asks
// about, a command an agent wants to run, or a harness's tool call), their state from pending to allowed, denied or timed out, who
// decided and why, and the waiters held until then. Only an API key of
// the sandbox's tenant may decide: never a sandbox token, so that an
// agent cannot approve itself.
//
// Waiters live in the process that opened the approval: a decision taken
// here wakes its waiter at once, one taken through another replica on the
// same store within a second (the waiter looks in the store).
package approvals

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
)

// Kinds of approval.
const (
	KindEgress  = "egress"  // a connection the sandbox's policy asks about
	KindCommand = "command" // something an agent asks to do (airlock-approve "deploy")
	KindHarness = "harness" // a harness's tool call (Claude Code's permission prompt)
)

// Bounds on what the sandbox may ask (it comes from inside).
const (
	MaxCommand = 4096     // bytes of a command's text
	MaxInput   = 64 << 10 // bytes of a harness tool's input (JSON)
	MaxTool    = 128      // bytes of a tool's name
)

// States, as the store keeps them.
const (
	Pending  = "pending"
	Allowed  = "allowed"
	Denied   = "denied"
	TimedOut = "timed_out"
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
	Egress      *Egress   `json:"egress,omitempty"`  // kind egress: what is asked
	Command     *Command  `json:"command,omitempty"` // kind command
	Harness     *Harness  `json:"harness,omitempty"` // kind harness
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

// Command is what an agent asks to do, in its own words.
type Command struct {
	Text string `json:"text"`
}

// Harness is a harness's tool call held for a decision.
type Harness struct {
	Harness  string          `json:"harness"`            // claude, codex, ...
	Tool     string          `json:"tool"`               // the harness's name for it: Bash, Write, ...
	Category string          `json:"category,omitempty"` // shell, write or network; "" for others
	Input    json.RawMessage `json:"input,omitempty"`    // the call's arguments as the harness gave them
}

// what is the approval's question as stored (its kind's part).
func (a Approval) what() any {
	switch a.Kind {
	case KindCommand:
		return a.Command
	case KindHarness:
		return a.Harness
	}
	return a.Egress
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

// Store is what the service persists through (store.Store has it). Its
// not-found and conflict errors wrap errdefs' kinds.
type Store interface {
	CreateApproval(ctx context.Context, a Record) error
	GetApproval(ctx context.Context, tenantID, id string) (Record, error)
	ListApprovals(ctx context.Context, tenantID, state string) ([]Record, error)
	DecideApproval(ctx context.Context, a Record) error
}

func toStore(a Approval) (Record, error) {
	// Kept as asked: a command's "a > b" stays readable in the store.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(a.what())
	req := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		return Record{}, err
	}
	return Record{ID: a.ID, TenantID: a.TenantID, SandboxID: a.SandboxID, Task: a.Task, Kind: a.Kind,
		Request: string(req), State: a.State, RequestedAt: a.RequestedAt, Deadline: a.Deadline,
		DecidedAt: a.DecidedAt, DecidedBy: a.DecidedBy, Reason: a.Reason, Remember: a.Remember}, nil
}

func fromStore(r Record) (Approval, error) {
	a := Approval{ID: r.ID, TenantID: r.TenantID, SandboxID: r.SandboxID, Task: r.Task, Kind: r.Kind,
		State: r.State, RequestedAt: r.RequestedAt, Deadline: r.Deadline, DecidedAt: r.DecidedAt,
		DecidedBy: r.DecidedBy, Reason: r.Reason, Remember: r.Remember}
	var into any
	switch r.Kind {
	case KindEgress:
		a.Egress = new(Egress)
		into = a.Egress
	case KindCommand:
		a.Command = new(Command)
		into = a.Command
	case KindHarness:
		a.Harness = new(Harness)
		into = a.Harness
	default:
		return Approval{}, fmt.Errorf("approval %s: unknown kind %q", r.ID, r.Kind)
	}
	if err := json.Unmarshal([]byte(r.Request), into); err != nil {
		return Approval{}, fmt.Errorf("approval %s: decode request: %w", r.ID, err)
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
	// PollEvery is how often a waiter looks in the store for a decision
	// another process took (default 1 s).
	PollEvery time.Duration
}
