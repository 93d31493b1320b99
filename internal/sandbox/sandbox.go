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
	"errors"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/live"
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
	// ErrPaused is the ErrConflict of a call that needs a paused sandbox
	// running.
	ErrPaused = errors.New("paused")
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
	// AutoResume resumes a paused sandbox on any call that needs it
	// running (exec, files, terminals) instead of refusing it.
	AutoResume bool `json:"auto_resume,omitempty"`
	// IdleAction is what the idle timeout does: "destroy" (the default)
	// or "pause".
	IdleAction string `json:"idle_action,omitempty"`
	// MaxPausedS bounds how long the sandbox may stay paused before it
	// is destroyed as expired (default DefaultMaxPaused).
	MaxPausedS int64 `json:"max_paused_s,omitempty"`
	// Snapshot starts the sandbox's writable layer from one of the
	// tenant's snapshots; its template is the snapshot's.
	Snapshot string `json:"snapshot,omitempty"`
	// Volumes are the tenant's volumes to mount.
	Volumes []VolumeMount `json:"volumes,omitempty"`
	// Budget caps what the sandbox's model calls may spend; once spent,
	// the egress proxy answers further model calls with 429.
	Budget *Budget `json:"budget,omitempty"`
}

// origin is where a sandbox's files come from, once resolved: the
// runtime's snapshot and its node, and for a fork its parent.
type origin struct {
	snapshot, node, forkOf string
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
