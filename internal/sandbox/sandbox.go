// Package sandbox is the domain of Airlock: sandboxes that belong to tenants,
// their lifecycle (creating -> running -> stopped | failed), time limits,
// quotas, and the checks and records around what runs inside them (what
// runs beyond one request, processes, sessions and terminals, is
// internal/live's, which this package hands work to after its checks). It
// owns the rules (ownership, quotas, expiry, path resolution, the audit
// log) and must never let one tenant see or touch another tenant's
// sandbox: every lookup is scoped to the caller's tenant and answers
// ErrNotFound otherwise.
package sandbox

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/live"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store"
)

// Error kinds; the API maps each to one HTTP status. The five kinds are
// errdefs', which the live work in a sandbox (internal/live) wraps too.
var (
	ErrNotFound      = errdefs.ErrNotFound
	ErrInvalid       = errdefs.ErrInvalid
	ErrConflict      = errdefs.ErrConflict
	ErrLimitExceeded = errdefs.ErrLimitExceeded
	ErrUnavailable   = errdefs.ErrUnavailable
	// ErrTenantQuota is the ErrLimitExceeded of a tenant's quota, which
	// passes once the tenant's other sandboxes end (unlike a request no
	// host could hold).
	ErrTenantQuota = errors.New("tenant quota")
	// ErrPidLimit is the ErrLimitExceeded of a sandbox that holds as many
	// processes as its pids limit allows: it passes as they end.
	ErrPidLimit = errors.New("pid limit")
	// ErrStorageQuota is the ErrLimitExceeded of a tenant that keeps as
	// much as its storage quota allows. Unlike ErrTenantQuota it does not
	// pass when sandboxes end: only retention or a larger quota frees it.
	ErrStorageQuota = errors.New("storage quota")
	// ErrLowDisk is the ErrUnavailable of a data dir's filesystem with
	// less free space than the operator's minimum.
	ErrLowDisk = errors.New("low disk space")
	// ErrServerStopping is the ErrUnavailable of a follow of output that
	// the server let go as it stops: what was followed goes on, for the
	// next daemon.
	ErrServerStopping = live.ErrServerStopping
)

// pidLimitError is a command refused at the sandbox's pid limit:
// ErrLimitExceeded and ErrPidLimit both match it.
type pidLimitError string

func (e pidLimitError) Error() string { return string(e) }
func (e pidLimitError) Is(target error) bool {
	return target == ErrLimitExceeded || target == ErrPidLimit
}

// quotaError is a tenant quota refusal: ErrLimitExceeded and
// ErrTenantQuota both match it; its message is ErrLimitExceeded's.
type quotaError string

func (e quotaError) Error() string { return ErrLimitExceeded.Error() + ": " + string(e) }
func (e quotaError) Is(target error) bool {
	return target == ErrLimitExceeded || target == ErrTenantQuota
}

// storageQuotaError is a refusal for a tenant's storage quota:
// ErrLimitExceeded and ErrStorageQuota match it.
type storageQuotaError string

func (e storageQuotaError) Error() string { return ErrLimitExceeded.Error() + ": " + string(e) }
func (e storageQuotaError) Is(target error) bool {
	return target == ErrLimitExceeded || target == ErrStorageQuota
}

// lowDiskError is a refusal for the data dir's free space: ErrUnavailable
// and ErrLowDisk match it.
type lowDiskError string

func (e lowDiskError) Error() string        { return ErrUnavailable.Error() + ": " + string(e) }
func (e lowDiskError) Is(target error) bool { return target == ErrUnavailable || target == ErrLowDisk }

// Defaults and bounds for a create request.
const (
	DefaultTimeout = 300 * time.Second
	MaxTimeout     = 24 * time.Hour
	DefaultWorkdir = "/home/user"
	// OutputCap bounds each stream kept for a non-streaming exec result.
	OutputCap = live.OutputCap
)

// CreateRequest is POST /v1/sandboxes. Zero fields take defaults.
type CreateRequest struct {
	Template string            `json:"template,omitempty"`
	CPUs     float64           `json:"cpus,omitempty"`
	MemoryMB int64             `json:"memory_mb,omitempty"`
	Pids     int64             `json:"pids,omitempty"`
	DiskMB   int64             `json:"disk_mb,omitempty"`
	TimeoutS int64             `json:"timeout_s,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Workdir  string            `json:"workdir,omitempty"`
	// Network is the egress policy; nil means none (no network at all).
	Network *egress.Policy `json:"network,omitempty"`
	// Secrets names tenant secrets to bind: the sandbox gets an environment
	// variable of each name holding a placeholder, and the proxy swaps in
	// the value on requests to the secret's hosts (added to the allow-list).
	Secrets []string `json:"secrets,omitempty"`
	// IdleTimeoutS destroys the sandbox after that many seconds without
	// use (calls, running commands, open streams); 0: no idle timeout.
	IdleTimeoutS int64 `json:"idle_timeout_s,omitempty"`
	// Build makes /usr/local writable, for building a template: an admin
	// then commits what was put there with CommitTemplate.
	Build bool `json:"build,omitempty"`
}

// ExecRequest is POST /v1/sandboxes/{id}/exec: exactly one of Cmd (argv)
// and Command (a shell string).
type ExecRequest struct {
	Cmd      []string          `json:"cmd,omitempty"`
	Command  string            `json:"command,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Stdin    string            `json:"stdin,omitempty"`
	TimeoutS int64             `json:"timeout_s,omitempty"` // 0 = until the sandbox expires
	// Background returns at once with the process's pid and tag; its
	// output is kept for the processes routes.
	Background bool   `json:"background,omitempty"`
	Tag        string `json:"tag,omitempty"`
}

// ExecResult is the JSON answer of a non-streaming exec, and how a
// process or shell ended.
type ExecResult = live.ExecResult

// Stream receives a streaming exec's events, in order, from one goroutine.
type Stream = live.Stream

// Caller is who makes a request: a tenant, optionally restricted to one
// sandbox (a sandbox token).
type Caller struct {
	TenantID  string
	KeyID     string // "" for a sandbox token
	SandboxID string // set for a sandbox token: only this sandbox exists for it
	Admin     bool
}

// Manager is what the API calls. Every method takes the caller and treats a
// sandbox of another tenant (or, for a token, any other sandbox) exactly as
// a sandbox that does not exist.
type Manager interface {
	Create(ctx context.Context, c Caller, req CreateRequest) (store.Sandbox, error)
	// Check refuses, as Create would, a request that asks for what can
	// never be had: invalid fields, an unknown template or secret, limits
	// past the host's capacity or past a tenant quota even with no other
	// sandbox. It creates nothing; quota taken by other sandboxes is not
	// checked (that may pass).
	Check(ctx context.Context, c Caller, req CreateRequest) error
	// DialPort connects to a TCP port the sandbox listens on (see
	// Service.DialPort).
	DialPort(ctx context.Context, c Caller, id string, port int) (net.Conn, error)
	// ForgetTenant drops what the manager keeps of the tenant with id, so
	// that quotas just changed in the store apply to the next create.
	ForgetTenant(id string)
	// Templates are the server's: every tenant can list and use them;
	// only an admin can commit (from one of its own build sandboxes) or
	// delete one.
	Templates(ctx context.Context) ([]runtime.TemplateInfo, error)
	Template(ctx context.Context, name string) (runtime.TemplateInfo, error)
	CommitTemplate(ctx context.Context, c Caller, req CommitTemplateRequest) (runtime.TemplateInfo, error)
	DeleteTemplate(ctx context.Context, c Caller, name string) error
	Get(ctx context.Context, c Caller, id string) (store.Sandbox, error)
	// AgentVersion is the agent protocol version of a running sandbox, 0
	// when not known.
	AgentVersion(ctx context.Context, rec store.Sandbox) int
	// AgentVersions counts the running sandboxes by agent version (admin).
	AgentVersions(ctx context.Context) (map[int]int, error)
	List(ctx context.Context, c Caller, f store.SandboxFilter) ([]store.Sandbox, error)
	Delete(ctx context.Context, c Caller, id string) error
	SetTimeout(ctx context.Context, c Caller, id string, d time.Duration) (store.Sandbox, error)

	// Exec runs to the end and returns output capped at OutputCap per
	// stream. ExecStream sends output to s as it comes and returns the
	// final status (Stdout/Stderr empty).
	Exec(ctx context.Context, c Caller, id string, req ExecRequest) (ExecResult, error)
	ExecStream(ctx context.Context, c Caller, id string, req ExecRequest, s Stream) (ExecResult, error)

	// File paths may be relative (to /home/user) or absolute; they are
	// resolved inside the sandbox, never on the host.
	ReadFile(ctx context.Context, c Caller, id, path string, w io.Writer) (int64, error)
	WriteFile(ctx context.Context, c Caller, id, path string, r io.Reader, mode fs.FileMode) (int64, error)
	ListDir(ctx context.Context, c Caller, id, path string) ([]runtime.FileInfo, error)
	Stat(ctx context.Context, c Caller, id, path string) (runtime.FileInfo, error)
	Mkdir(ctx context.Context, c Caller, id, path string, mode fs.FileMode) error
	Move(ctx context.Context, c Caller, id, from, to string) error
	Remove(ctx context.Context, c Caller, id, path string, recursive bool) error

	// The egress policy of a sandbox, and the log of its connections (kept
	// after the sandbox ends).
	GetNetwork(ctx context.Context, c Caller, id string) (egress.Policy, error)
	SetNetwork(ctx context.Context, c Caller, id string, p egress.Policy) (egress.Policy, error)
	NetworkLog(ctx context.Context, c Caller, id string, after int64, limit int) ([]egress.Event, error)

	// Background processes: started by exec with Background set, they
	// outlive the request; output is kept (bounded) and can be read from
	// any kept offset, following it as it grows.
	StartBackground(ctx context.Context, c Caller, id string, req ExecRequest) (ProcInfo, error)

	// Sessions: a shell on a terminal kept between calls; each exec runs
	// one command in it, so its state (cwd, environment, functions)
	// persists.
	CreateSession(ctx context.Context, c Caller, id string, req SessionRequest) (SessionInfo, error)
	ListSessions(ctx context.Context, c Caller, id string) ([]SessionInfo, error)
	SessionExec(ctx context.Context, c Caller, id, sid string, req SessionExecRequest) (SessionExecResult, error)
	DeleteSession(ctx context.Context, c Caller, id, sid string) error
	AttachSession(ctx context.Context, c Caller, id, sid string, offset int64) (Terminal, error)
	ListProcesses(ctx context.Context, c Caller, id string) ([]ProcInfo, error)
	ProcessOutput(ctx context.Context, c Caller, id string, pid int, offset int64, follow bool, out ProcStream) error
	// GetExec describes a command by exec id; ExecOutput reads its output
	// as ProcessOutput does, for one streamed to a client or a background
	// process.
	GetExec(ctx context.Context, c Caller, id, execID string) (ExecInfo, error)
	ExecOutput(ctx context.Context, c Caller, id, execID string, offset int64, follow bool, out ProcStream) error
	WriteStdin(ctx context.Context, c Caller, id string, pid int, r io.Reader) (int64, error)
	CloseStdin(ctx context.Context, c Caller, id string, pid int) error
	SignalProcess(ctx context.Context, c Caller, id string, pid, sig int) error

	// A tenant's secrets. Values go in and never come out.
	CreateSecret(ctx context.Context, c Caller, spec secrets.Spec) (SecretInfo, error)
	ListSecrets(ctx context.Context, c Caller) ([]SecretInfo, error)
	RotateSecret(ctx context.Context, c Caller, name string, req RotateRequest) (SecretInfo, error)
	DeleteSecret(ctx context.Context, c Caller, name string) error

	// The audit log of a sandbox: every event in order, hash-chained; it
	// outlives the sandbox. AuditLog sends the events f selects to out.
	AuditLog(ctx context.Context, c Caller, id string, f store.AuditFilter, out func(audit.Event) error) error
	VerifyAudit(ctx context.Context, c Caller, id string) (audit.Result, error)
	// RecordRequest adds an api.request event for a call c made on the
	// sandbox: the route's pattern, never its query or body. A sandbox c
	// may not see records nothing.
	RecordRequest(ctx context.Context, c Caller, id, method, route string, status int, d time.Duration)
	// RecordTask adds a task.started or task.finished event (the task that
	// runs in the sandbox) to the sandbox's log, the tenant's event stream
	// and its webhooks. Other types, or a sandbox c may not see, record
	// nothing.
	RecordTask(ctx context.Context, c Caller, id, typ string, data map[string]any)
	// Durable returns once every audit event recorded so far is in the
	// store: the API calls it before it answers.
	Durable()

	// Metering: what a sandbox used (live while it runs, final after it
	// ended, kept across restarts), and usage summed per tenant.
	SandboxMetrics(ctx context.Context, c Caller, id string) (Metrics, error)
	// SandboxMetricsHistory is a running sandbox's readings of the last
	// minutes, kept in memory for charts (none once it has ended).
	SandboxMetricsHistory(ctx context.Context, c Caller, id string) (MetricsHistory, error)
	Usage(ctx context.Context, c Caller, q UsageQuery) (UsageReport, error)
}
