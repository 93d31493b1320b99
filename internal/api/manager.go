package api

import (
	"context"
	"io"
	"io/fs"
	"net"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store"
)

// The sandbox layer as the API uses it, one interface per capability,
// composed into the Manager that New takes (sandbox.Service in the
// server, a fake in tests). Every method takes the caller and treats a
// sandbox of another tenant (or, for a token, any other sandbox) exactly
// as a sandbox that does not exist.

// Manager is every capability the API serves.
type Manager interface {
	Sandboxes
	Templates
	Files
	Processes
	Sessions
	Network
	Secrets
	Audit
	Metering
	Lifecycle
}

// Lifecycle is pause and resume, snapshots, forks and volumes
// (lifecycle.go).
type Lifecycle interface {
	Pause(ctx context.Context, c sandbox.Caller, id string) (sandboxrec.Sandbox, error)
	Resume(ctx context.Context, c sandbox.Caller, id string) (sandboxrec.Sandbox, error)
	CreateSnapshot(ctx context.Context, c sandbox.Caller, id, name string) (sandbox.Snapshot, error)
	Snapshots(ctx context.Context, c sandbox.Caller) ([]sandbox.Snapshot, error)
	GetSnapshot(ctx context.Context, c sandbox.Caller, name string) (sandbox.Snapshot, error)
	DeleteSnapshot(ctx context.Context, c sandbox.Caller, name string) error
	Fork(ctx context.Context, c sandbox.Caller, id string, req sandbox.ForkRequest) ([]sandboxrec.Sandbox, error)
	CreateVolume(ctx context.Context, c sandbox.Caller, req sandbox.VolumeRequest) (sandbox.Volume, error)
	Volumes(ctx context.Context, c sandbox.Caller) ([]sandbox.Volume, error)
	GetVolume(ctx context.Context, c sandbox.Caller, name string) (sandbox.Volume, error)
	DeleteVolume(ctx context.Context, c sandbox.Caller, name string) error
}

var _ Manager = (*sandbox.Service)(nil)

// Sandboxes is the lifecycle of sandboxes (sandboxes.go, server_info.go,
// admin.go).
type Sandboxes interface {
	Create(ctx context.Context, c sandbox.Caller, req sandbox.CreateRequest) (sandboxrec.Sandbox, error)
	Get(ctx context.Context, c sandbox.Caller, id string) (sandboxrec.Sandbox, error)
	List(ctx context.Context, c sandbox.Caller, f sandboxrec.Filter) ([]sandboxrec.Sandbox, error)
	Delete(ctx context.Context, c sandbox.Caller, id string) error
	SetTimeout(ctx context.Context, c sandbox.Caller, id string, d time.Duration) (sandboxrec.Sandbox, error)
	// AgentVersion is the agent protocol version of a running sandbox, 0
	// when not known.
	AgentVersion(ctx context.Context, rec sandboxrec.Sandbox) int
	// AgentVersions counts the running sandboxes by agent version (admin).
	AgentVersions(ctx context.Context) (map[int]int, error)
	// ForgetTenant drops what the manager keeps of the tenant with id, so
	// that quotas just changed in the store apply to the next create.
	ForgetTenant(id string)
}

// Templates are the server's (templates.go): every tenant can list and
// use them; only an admin can commit (from one of its own build
// sandboxes) or delete one.
type Templates interface {
	Templates(ctx context.Context) ([]runtime.TemplateInfo, error)
	Template(ctx context.Context, name string) (runtime.TemplateInfo, error)
	CommitTemplate(ctx context.Context, c sandbox.Caller, req sandbox.CommitTemplateRequest) (runtime.TemplateInfo, error)
	// ImportTemplate makes one from an OCI or Docker image (admin).
	ImportTemplate(ctx context.Context, c sandbox.Caller, req sandbox.ImportTemplateRequest, progress func(runtime.ImageProgress)) (runtime.TemplateInfo, error)
	DeleteTemplate(ctx context.Context, c sandbox.Caller, name string) error
}

// Files are a sandbox's files (files.go, files_download.go). Paths may be
// relative (to /home/user) or absolute; they are resolved inside the
// sandbox, never on the host.
type Files interface {
	ReadFile(ctx context.Context, c sandbox.Caller, id, path string, w io.Writer) (int64, error)
	WriteFile(ctx context.Context, c sandbox.Caller, id, path string, r io.Reader, mode fs.FileMode) (int64, error)
	ListDir(ctx context.Context, c sandbox.Caller, id, path string) ([]runtime.FileInfo, error)
	Stat(ctx context.Context, c sandbox.Caller, id, path string) (runtime.FileInfo, error)
	Mkdir(ctx context.Context, c sandbox.Caller, id, path string, mode fs.FileMode) error
	Move(ctx context.Context, c sandbox.Caller, id, from, to string) error
	Remove(ctx context.Context, c sandbox.Caller, id, path string, recursive bool) error
}

// Processes are the commands a sandbox runs (exec.go, procs.go).
type Processes interface {
	// Exec runs to the end and returns output capped at OutputCap per
	// stream. ExecStream sends output to s as it comes and returns the
	// final status (Stdout/Stderr empty).
	Exec(ctx context.Context, c sandbox.Caller, id string, req sandbox.ExecRequest) (sandbox.ExecResult, error)
	ExecStream(ctx context.Context, c sandbox.Caller, id string, req sandbox.ExecRequest, s sandbox.Stream) (sandbox.ExecResult, error)
	// StartBackground starts a background process (exec with Background
	// set): it outlives the request; its output is kept (bounded) and can
	// be read from any kept offset, following it as it grows.
	StartBackground(ctx context.Context, c sandbox.Caller, id string, req sandbox.ExecRequest) (sandbox.ProcInfo, error)
	ListProcesses(ctx context.Context, c sandbox.Caller, id string) ([]sandbox.ProcInfo, error)
	ProcessOutput(ctx context.Context, c sandbox.Caller, id string, pid int, offset int64, follow bool, out sandbox.ProcStream) error
	// GetExec describes a command by exec id; ExecOutput reads its output
	// as ProcessOutput does, for one streamed to a client or a background
	// process.
	GetExec(ctx context.Context, c sandbox.Caller, id, execID string) (sandbox.ExecInfo, error)
	ExecOutput(ctx context.Context, c sandbox.Caller, id, execID string, offset int64, follow bool, out sandbox.ProcStream) error
	WriteStdin(ctx context.Context, c sandbox.Caller, id string, pid int, r io.Reader) (int64, error)
	CloseStdin(ctx context.Context, c sandbox.Caller, id string, pid int) error
	SignalProcess(ctx context.Context, c sandbox.Caller, id string, pid, sig int) error
}

// Sessions are shells on a terminal kept between calls (sessions.go,
// terminal.go): each exec runs one command in one, so its state (cwd,
// environment, functions) persists.
type Sessions interface {
	CreateSession(ctx context.Context, c sandbox.Caller, id string, req sandbox.SessionRequest) (sandbox.SessionInfo, error)
	ListSessions(ctx context.Context, c sandbox.Caller, id string) ([]sandbox.SessionInfo, error)
	SessionExec(ctx context.Context, c sandbox.Caller, id, sid string, req sandbox.SessionExecRequest) (sandbox.SessionExecResult, error)
	DeleteSession(ctx context.Context, c sandbox.Caller, id, sid string) error
	AttachSession(ctx context.Context, c sandbox.Caller, id, sid string, offset int64) (sandbox.Terminal, error)
}

// Network is a sandbox's way out and in (network.go, ports.go): its
// egress policy, the log of its connections (kept after the sandbox
// ends), and connections to the ports it listens on.
type Network interface {
	GetNetwork(ctx context.Context, c sandbox.Caller, id string) (egress.Policy, error)
	SetNetwork(ctx context.Context, c sandbox.Caller, id string, p egress.Policy) (egress.Policy, error)
	NetworkLog(ctx context.Context, c sandbox.Caller, id string, after int64, limit int) ([]egress.Event, error)
	// DialPort connects to a TCP port the sandbox listens on (see
	// sandbox.Service.DialPort).
	DialPort(ctx context.Context, c sandbox.Caller, id string, port int) (net.Conn, error)
}

// Secrets are a tenant's secrets (secrets.go). Values go in and never
// come out.
type Secrets interface {
	CreateSecret(ctx context.Context, c sandbox.Caller, spec secrets.Spec) (sandbox.SecretInfo, error)
	ListSecrets(ctx context.Context, c sandbox.Caller) ([]sandbox.SecretInfo, error)
	RotateSecret(ctx context.Context, c sandbox.Caller, name string, req sandbox.RotateRequest) (sandbox.SecretInfo, error)
	DeleteSecret(ctx context.Context, c sandbox.Caller, name string) error
}

// Audit is a sandbox's audit log (audit.go, cast.go, auth.go): every
// event in order, hash-chained; it outlives the sandbox.
type Audit interface {
	// AuditLog sends the events f selects to out.
	AuditLog(ctx context.Context, c sandbox.Caller, id string, f store.AuditFilter, out func(audit.Event) error) error
	VerifyAudit(ctx context.Context, c sandbox.Caller, id string) (audit.Result, error)
	// RecordRequest adds an api.request event for a call c made on the
	// sandbox: the route's pattern, never its query or body. A sandbox c
	// may not see records nothing.
	RecordRequest(ctx context.Context, c sandbox.Caller, id, method, route string, status int, d time.Duration)
	// Durable returns once every audit event recorded so far is in the
	// store: the API calls it before it answers.
	Durable()
}

// Metering is what sandboxes used (metering.go): live while one runs,
// final after it ended, kept across restarts, and summed per tenant.
type Metering interface {
	SandboxMetrics(ctx context.Context, c sandbox.Caller, id string) (sandbox.Metrics, error)
	// SandboxMetricsHistory is a running sandbox's readings of the last
	// minutes, kept in memory for charts (none once it has ended).
	SandboxMetricsHistory(ctx context.Context, c sandbox.Caller, id string) (sandbox.MetricsHistory, error)
	Usage(ctx context.Context, c sandbox.Caller, q sandbox.UsageQuery) (sandbox.UsageReport, error)
}
