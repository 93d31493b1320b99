package tasks

import (
	"context"
	"io"
	"io/fs"
	"net"

	"github.com/airlockhq/airlock/internal/pricing"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// Sandboxes is what tasks use of the sandbox layer, always with the
// task's tenant as the caller: every method treats a sandbox of another
// tenant exactly as one that does not exist.
type Sandboxes interface {
	// Check refuses, as Create would, a request for what can never be
	// had; it creates nothing.
	Check(ctx context.Context, c sandbox.Caller, req sandbox.CreateRequest) error
	Create(ctx context.Context, c sandbox.Caller, req sandbox.CreateRequest) (sandboxrec.Sandbox, error)
	Delete(ctx context.Context, c sandbox.Caller, id string) error
	// Template tells whether the server has a harness's template.
	Template(ctx context.Context, name string) (runtime.TemplateInfo, error)

	Exec(ctx context.Context, c sandbox.Caller, id string, req sandbox.ExecRequest) (sandbox.ExecResult, error)
	// StartBackground runs the harness as a background process, whose
	// output ExecOutput follows (again, after a restart) and whose end
	// GetExec tells once it is no longer kept.
	StartBackground(ctx context.Context, c sandbox.Caller, id string, req sandbox.ExecRequest) (sandbox.ProcInfo, error)
	ExecOutput(ctx context.Context, c sandbox.Caller, id, execID string, offset int64, follow bool, out sandbox.ProcStream) error
	GetExec(ctx context.Context, c sandbox.Caller, id, execID string) (sandbox.ExecInfo, error)

	WriteFile(ctx context.Context, c sandbox.Caller, id, path string, r io.Reader, mode fs.FileMode) (int64, error)
	ReadFile(ctx context.Context, c sandbox.Caller, id, path string, w io.Writer) (int64, error)
	Mkdir(ctx context.Context, c sandbox.Caller, id, path string, mode fs.FileMode) error
	Stat(ctx context.Context, c sandbox.Caller, id, path string) (runtime.FileInfo, error)

	// SandboxMetrics is what a sandbox used (its model calls too), live
	// while it runs; Prices is the operator's price table (nil: none).
	SandboxMetrics(ctx context.Context, c sandbox.Caller, id string) (sandbox.Metrics, error)
	Prices() *pricing.Table

	// CreateSnapshot and DeleteSnapshot keep and drop a task's final
	// workspace (continuation.go).
	CreateSnapshot(ctx context.Context, c sandbox.Caller, id, name string) (sandbox.Snapshot, error)
	DeleteSnapshot(ctx context.Context, c sandbox.Caller, name string) error

	// ListenIn listens inside the sandbox (its approvals channel).
	ListenIn(ctx context.Context, c sandbox.Caller, id, network, address string) (net.Listener, error)

	// RecordTask adds task.started or task.finished to the sandbox's
	// audit log (and so its tenant's event stream).
	RecordTask(ctx context.Context, c sandbox.Caller, id, typ string, data map[string]any)
}

var _ Sandboxes = (*sandbox.Service)(nil)
