package client

import (
	"time"
)

// Sandbox states.
const (
	StateCreating = "creating"
	StateRunning  = "running"
	StatePaused   = "paused"
	StateStopped  = "stopped"
	StateFailed   = "failed"
)

// Sandbox is a sandbox as the server describes it.
type Sandbox struct {
	ID        string            `json:"id"`
	State     string            `json:"state"`
	Reason    string            `json:"reason,omitempty"` // why it failed or stopped
	Template  string            `json:"template"`
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt time.Time         `json:"expires_at"`
	EndedAt   time.Time         `json:"ended_at,omitzero"` // once stopped or failed
	Limits    Limits            `json:"limits"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Workdir   string            `json:"workdir,omitempty"`
	Network   *NetworkPolicy    `json:"network,omitempty"`
	// IdleTimeout is 0 when the sandbox has no idle timeout.
	IdleTimeoutS int64 `json:"idle_timeout_s,omitempty"`
	// AgentVersion is the protocol version of the sandbox's agent (from
	// GetSandbox of a running sandbox; 0 when not known).
	AgentVersion int `json:"agent_version,omitempty"`
	// Node is the node it runs on: "local" for the server's own host,
	// else a joined node's name ("" until it is placed).
	Node string `json:"node,omitempty"`
	// Pause settings, and where the sandbox came from.
	AutoResume bool          `json:"auto_resume,omitempty"`
	IdleAction string        `json:"idle_action,omitempty"`
	MaxPausedS int64         `json:"max_paused_s,omitempty"`
	PausedAt   time.Time     `json:"paused_at,omitzero"`
	Snapshot   string        `json:"snapshot,omitempty"`
	ForkOf     string        `json:"fork_of,omitempty"`
	Volumes    []VolumeMount `json:"volumes,omitempty"`
	// SnapshotTransfer is set when the create streamed its snapshot from
	// the node that keeps it to one with room.
	SnapshotTransfer *SnapshotTransfer `json:"snapshot_transfer,omitempty"`
	// VolumeTransfers are set when the create moved its volumes from
	// their node, which had no room, to the sandbox's.
	VolumeTransfers []VolumeTransfer `json:"volume_transfers,omitempty"`
	// Budget caps its model calls' spending (nil: none).
	Budget *Budget `json:"budget,omitempty"`
}

// VolumeTransfer is a volume moved to another node, and what it cost.
type VolumeTransfer struct {
	Volume string `json:"volume"`
	SnapshotTransfer
}

// SnapshotTransfer is what streaming a snapshot to another node cost.
type SnapshotTransfer struct {
	From       string `json:"from_node"`
	To         string `json:"to_node"`
	Bytes      int64  `json:"bytes"`
	DurationMS int64  `json:"duration_ms"`
	Resumed    int    `json:"resumed,omitempty"`
}

// VolumeMount mounts one of the tenant's volumes into a sandbox.
type VolumeMount struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// Limits are a sandbox's resource limits.
type Limits struct {
	CPUs     float64 `json:"cpus"`
	MemoryMB int64   `json:"memory_mb"`
	Pids     int64   `json:"pids"`
	DiskMB   int64   `json:"disk_mb"`
}

// CreateRequest is the body of POST /v1/sandboxes. Zero fields take the
// server's defaults (template base, 1 CPU, 512 MiB, 256 pids, 1024 MiB of
// disk, 5 minutes).
type CreateRequest struct {
	Template string            `json:"template,omitempty"`
	CPUs     float64           `json:"cpus,omitempty"`
	MemoryMB int64             `json:"memory_mb,omitempty"`
	Pids     int64             `json:"pids,omitempty"`
	DiskMB   int64             `json:"disk_mb,omitempty"`
	Timeout  time.Duration     `json:"-"` // sent as whole seconds, rounded up
	Env      map[string]string `json:"env,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Workdir  string            `json:"workdir,omitempty"`
	// Network is the egress policy; nil means none (no network at all).
	Network *NetworkPolicy `json:"network,omitempty"`
	// Secrets names the tenant's secrets to bind (see CreateSecret).
	Secrets []string `json:"secrets,omitempty"`
	// IdleTimeoutS destroys the sandbox after that many seconds without
	// use (calls, running commands, open streams); 0: none.
	IdleTimeoutS int64 `json:"idle_timeout_s,omitempty"`
	// Build makes /usr/local writable, to build a template (BuildTemplate).
	Build bool `json:"build,omitempty"`
	// AutoResume resumes the sandbox, while paused, on any call that
	// needs it running; IdleAction is what IdleTimeoutS does ("destroy",
	// the default, or "pause"); MaxPausedS bounds a pause (0: 7 days).
	AutoResume bool   `json:"auto_resume,omitempty"`
	IdleAction string `json:"idle_action,omitempty"`
	MaxPausedS int64  `json:"max_paused_s,omitempty"`
	// Snapshot starts from one of the tenant's snapshots.
	Snapshot string `json:"snapshot,omitempty"`
	// Volumes mounts the tenant's volumes.
	Volumes []VolumeMount `json:"volumes,omitempty"`
	// Budget caps what its model calls may spend; once spent, the egress
	// proxy answers further model calls 429.
	Budget *Budget `json:"budget,omitempty"`
}

func (r CreateRequest) MarshalJSON() ([]byte, error) {
	type wire CreateRequest // without this method
	return marshal(struct {
		wire
		TimeoutS int64 `json:"timeout_s,omitempty"`
	}{wire(r), seconds(r.Timeout)})
}

// ListOptions filter ListSandboxes. Zero fields do not filter.
type ListOptions struct {
	State    string
	Metadata map[string]string // every pair must match
	Limit    int
	After    string // a Page's Next
}

// Page is one page of sandboxes; Next is empty on the last page.
type Page struct {
	Sandboxes []Sandbox `json:"sandboxes"`
	Next      string    `json:"next"`
}

// ExecRequest is a command to run: exactly one of Cmd (an argv) and
// Command (a shell string).
type ExecRequest struct {
	Cmd     []string          `json:"cmd,omitempty"`
	Command string            `json:"command,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Stdin   string            `json:"stdin,omitempty"`
	Timeout time.Duration     `json:"-"` // 0: until the sandbox expires; sent as whole seconds, rounded up
}

func (r ExecRequest) MarshalJSON() ([]byte, error) {
	type wire ExecRequest // without this method
	return marshal(struct {
		wire
		TimeoutS int64 `json:"timeout_s,omitempty"`
	}{wire(r), seconds(r.Timeout)})
}

// ExecResult is how a command ended. Stdout and Stderr are set by Exec
// only, each capped at 1 MiB (Truncated past it).
type ExecResult struct {
	// ExecID names the command in the sandbox's audit log (AuditCast).
	ExecID     string  `json:"exec_id,omitempty"`
	ExitCode   int     `json:"exit_code"`
	Signal     int     `json:"signal"` // the signal that killed it, or 0
	Stdout     string  `json:"stdout"`
	Stderr     string  `json:"stderr"`
	DurationMS float64 `json:"duration_ms"`
	TimedOut   bool    `json:"timed_out"`
	OOMKilled  bool    `json:"oom_killed"`
	Truncated  bool    `json:"truncated"`
}

// FileEntry is one entry of a directory listing.
type FileEntry struct {
	Name  string    `json:"name"`
	Path  string    `json:"path"`
	Type  string    `json:"type"` // file, dir, symlink or other
	Size  int64     `json:"size"`
	Mode  string    `json:"mode"` // octal permissions, "0644"
	MTime time.Time `json:"mtime"`
}

// Token is a sandbox token: a credential for one sandbox, until ExpiresAt.
type Token struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// TenantRequest is the body of POST /v1/tenants. Zero limits are
// unlimited; a nil MaxStorageMB takes the server's default (2048).
type TenantRequest struct {
	Name         string `json:"name"`
	MaxSandboxes int    `json:"max_sandboxes,omitempty"`
	MaxMemoryMB  int64  `json:"max_memory_mb,omitempty"`
	MaxStorageMB *int64 `json:"max_storage_mb,omitempty"`
}

// TenantQuota changes a tenant's quotas: a nil field stays as it is, 0 is
// unlimited.
type TenantQuota struct {
	MaxSandboxes *int   `json:"max_sandboxes,omitempty"`
	MaxMemoryMB  *int64 `json:"max_memory_mb,omitempty"`
	MaxStorageMB *int64 `json:"max_storage_mb,omitempty"`
}

// Tenant owns sandboxes and API keys.
type Tenant struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	MaxSandboxes int       `json:"max_sandboxes"`
	MaxMemoryMB  int64     `json:"max_memory_mb"`
	MaxStorageMB int64     `json:"max_storage_mb"` // what the server keeps for it: logs, events, tasks; 0 = unlimited
	CreatedAt    time.Time `json:"created_at"`
}

// Key is an API key as listed: the secret is never shown again.
type Key struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// NewKey is a key just created; Key is the secret ("alk_...").
type NewKey struct {
	ID     string `json:"id"`
	Key    string `json:"key"`
	Tenant string `json:"tenant"`
	Name   string `json:"name"`
}

// seconds rounds d up to whole seconds, so that a short timeout does not
// become 0, which the API reads as "the default".
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// Network modes.
const (
	NetworkNone      = "none"
	NetworkAllowlist = "allowlist"
)

// NetworkPolicy is a sandbox's egress policy. Allow and Deny take names
// ("pypi.org"), "*." wildcards that do not match the apex
// ("*.pythonhosted.org"), optional ports ("api.openai.com:443"; without one,
// 80 and 443), and IP or CIDR entries ("203.0.113.0/24:8080"). Deny wins.
type NetworkPolicy struct {
	Mode  string   `json:"mode"`
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// Ask holds a connection to a target the allow list does not admit
	// for a person's decision (an Approval) instead of refusing it.
	Ask Ask `json:"ask,omitzero"`
	// AskTimeoutS is how long a held connection waits (0: the server's
	// 60 s); then it is refused.
	AskTimeoutS int64 `json:"ask_timeout_s,omitempty"`
}

// AllowOnly is an allow-list policy of the given entries.
func AllowOnly(allow ...string) *NetworkPolicy {
	return &NetworkPolicy{Mode: NetworkAllowlist, Allow: allow}
}

// NetEvent is one connection or request through a sandbox's egress proxy.
type NetEvent struct {
	Seq        int64     `json:"seq"`
	Time       time.Time `json:"time"`
	SandboxID  string    `json:"sandbox_id"`
	TenantID   string    `json:"tenant_id"`
	Protocol   string    `json:"protocol"`
	Host       string    `json:"host"`
	Port       int       `json:"port"`
	Addr       string    `json:"addr,omitempty"`
	Decision   string    `json:"decision"` // "allowed" or "denied"
	Rule       string    `json:"rule,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Status     int       `json:"status,omitempty"`
	BytesUp    int64     `json:"bytes_up"`
	BytesDown  int64     `json:"bytes_down"`
	DurationMS float64   `json:"duration_ms"`
	// UpstreamError is set when the policy allowed the connection and the
	// upstream failed: "dns", "refused", "unreachable", "timeout", "tls",
	// "reset" or "other" (Reason says what failed; Decision is "allowed").
	UpstreamError string `json:"upstream_error,omitempty"`
	// Cut says the connection was open when the daemon stopped (or the
	// sandbox ended), or when a daemon went away (logged by the next).
	Cut bool `json:"cut,omitempty"`
	// Kind is "" for a connection or request, NetSecretInjected or
	// NetSecretMisdirected for what the proxy did with a bound secret
	// (named in Secret; values never appear), NetModelUsage for a model
	// API call's usage (in Usage) and NetModelBudget for a model call
	// refused because the budget is spent.
	Kind   string `json:"kind,omitempty"`
	Secret string `json:"secret,omitempty"`
	// Usage is set with NetModelUsage.
	Usage *ModelUsage `json:"usage,omitempty"`
	// Approval is set when the policy's ask held the connection for a
	// person: "allowed", or why it was refused: "denied", "timed_out",
	// "unavailable" or "abandoned".
	Approval string `json:"approval,omitempty"`
}
