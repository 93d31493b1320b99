// Package runtime defines the interface every sandbox backend implements
// (runtime/linux today, a Kubernetes backend later) and the types that cross
// it. It owns no processes itself and must never assume a backend is local:
// everything a caller needs travels through the Runtime and Sandbox methods.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"time"
)

// Errors a backend returns, wrapped with context. The API maps these kinds to
// transport codes in one place.
var (
	ErrNotFound    = errors.New("not found")
	ErrInvalid     = errors.New("invalid argument")
	ErrUnavailable = errors.New("unavailable")
	ErrUnsupported = errors.New("not supported on this host")
	ErrConflict    = errors.New("already exists")
	// ErrPidLimit: the sandbox holds as many processes as its pids limit
	// allows, so nothing new can start until some end.
	ErrPidLimit = errors.New("pid limit reached")
)

// Limits bound what one sandbox may consume. Zero fields take the defaults.
type Limits struct {
	CPUs     float64 // CPU quota in cores
	MemoryMB int64   // memory limit, OOM kills stay inside the sandbox
	Pids     int64   // maximum number of tasks
	DiskMB   int64   // writable layer size
	TmpMB    int64   // size of the tmpfs at /tmp (its pages count as memory)
}

// Default limits, as documented for POST /v1/sandboxes.
var DefaultLimits = Limits{CPUs: 1, MemoryMB: 512, Pids: 256, DiskMB: 1024, TmpMB: 256}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	if l.CPUs == 0 {
		l.CPUs = d.CPUs
	}
	if l.MemoryMB == 0 {
		l.MemoryMB = d.MemoryMB
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	if l.DiskMB == 0 {
		l.DiskMB = d.DiskMB
	}
	if l.TmpMB == 0 {
		l.TmpMB = d.TmpMB
	}
	return l
}

// The ranges a sandbox's limits must fall in, after defaults. Clients
// (the CLI, the console's form) check against the same numbers before
// they send a request, so a person learns the range without a round trip.
const (
	MinCPUs     = 0.01
	MaxCPUs     = 1024
	MinMemoryMB = 16
	// MaxMemoryMB (16 TiB) is beyond any host's memory; the service
	// refuses what exceeds this host's as a limit, not as bad input.
	MaxMemoryMB = 16 << 20
	MinPids     = 8
	// MaxPids is the kernel's PID_MAX_LIMIT on 64-bit: no pid namespace
	// can hold more tasks.
	MaxPids   = 4 << 20
	MinDiskMB = 16
	MinTmpMB  = 1
	MaxTmpMB  = 1 << 20
)

// RangeError is a limit outside its range. Its Unwrap is ErrInvalid.
type RangeError struct {
	Field string // as POST /v1/sandboxes names it: cpus, memory_mb, pids, disk_mb
	Value string
	Range string // "0.01 to 1024", "at least 16"
}

func (e *RangeError) Error() string { return fmt.Sprintf("%s %s: want %s", e.Field, e.Value, e.Range) }
func (e *RangeError) Unwrap() error { return ErrInvalid }

// Validate refuses limits that cannot be honoured with a *RangeError.
func (l Limits) Validate() error {
	between := func(lo, hi any) string { return fmt.Sprintf("%v to %v", lo, hi) }
	switch {
	case !(l.CPUs >= MinCPUs && l.CPUs <= MaxCPUs): // NaN too
		return &RangeError{"cpus", fmt.Sprint(l.CPUs), between(MinCPUs, MaxCPUs)}
	case l.MemoryMB < MinMemoryMB || l.MemoryMB > MaxMemoryMB:
		return &RangeError{"memory_mb", fmt.Sprint(l.MemoryMB), between(MinMemoryMB, MaxMemoryMB)}
	case l.Pids < MinPids || l.Pids > MaxPids:
		return &RangeError{"pids", fmt.Sprint(l.Pids), between(MinPids, MaxPids)}
	case l.DiskMB < MinDiskMB:
		return &RangeError{"disk_mb", fmt.Sprint(l.DiskMB), fmt.Sprintf("at least %d", MinDiskMB)}
	case l.TmpMB < MinTmpMB || l.TmpMB > MaxTmpMB:
		// /tmp is memory: what is written there counts against the memory
		// limit, whatever its size.
		return &RangeError{"tmp_mb", fmt.Sprint(l.TmpMB), between(MinTmpMB, MaxTmpMB)}
	}
	return nil
}

// Spec describes a sandbox to create.
type Spec struct {
	ID       string            // unique, [a-z0-9-], chosen by the caller
	Template string            // "base" unless set
	Limits   Limits            // zero fields take defaults
	Env      map[string]string // added to every process's environment
	Hostname string            // defaults to the ID
	Workdir  string            // default working directory, /home/user unless set
	// Build makes /usr/local writable (over the template's), for a
	// template build: Templater.CommitTemplate keeps what was put there.
	Build bool
	// Snapshot starts the writable layer (the workspace and everything
	// written outside it) from a snapshot the runtime keeps (Snapshotter),
	// instead of empty. Its template must be the snapshot's.
	Snapshot string
	// Node, when set, is the one node the sandbox may be placed on: the
	// one that holds its snapshot or volumes.
	Node string
	// Volumes are mounted into the sandbox (Volumer).
	Volumes []VolumeMount
}

// VolumeMount mounts a volume the runtime keeps at Path in a sandbox.
type VolumeMount struct {
	Name     string `json:"name"` // the runtime's name of the volume
	Path     string `json:"path"` // absolute, inside the sandbox
	ReadOnly bool   `json:"read_only,omitempty"`
}

// Pauser is implemented by sandboxes whose processes can be frozen: a
// paused sandbox keeps its memory and processes and uses no CPU. Calls
// into a paused sandbox (exec, files) would wait until it is resumed;
// the caller refuses them instead.
type Pauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// Snapshotter is implemented by runtimes that keep copies of sandboxes'
// writable layers. Names are the runtime's: the caller keeps them unique
// (1-63 of [a-z0-9-]).
type Snapshotter interface {
	// Snapshot saves the writable layer of sandbox id, frozen for the
	// instant it takes (and running again after, unless it was paused),
	// as name, and returns its size in bytes.
	Snapshot(ctx context.Context, id, name string) (int64, error)
	// DeleteSnapshot removes it; sandboxes made from it keep their
	// copy. A snapshot that is not there is not an error.
	DeleteSnapshot(ctx context.Context, name string) error
}

// ErrNoRoom is the ErrUnavailable of a create that must go to one node
// (Spec.Node) when that node has no room or is not ready.
var ErrNoRoom = errors.New("no room on the node")

// SnapshotMover is implemented by runtimes that hand snapshots to another
// node's runtime, for a sandbox made from one on a node that has room.
type SnapshotMover interface {
	// ExportSnapshot writes snapshot name as a tar stream from byte
	// offset on: the stream is the same bytes every time, so a transfer
	// that broke resumes where it stopped.
	ExportSnapshot(ctx context.Context, name string, offset int64, w io.Writer) error
	// ImportSnapshot adds r to what it holds of snapshot name's stream
	// and, once the stream is whole, makes the snapshot, on template.
	// It returns how many bytes it holds (where to resume) and whether
	// the snapshot is made. A reader with nothing asks how far it got.
	ImportSnapshot(ctx context.Context, name, template string, r io.Reader) (have int64, done bool, err error)
}

// VolumeMover is implemented by runtimes that hand a volume no sandbox
// mounts to another node's runtime, as SnapshotMover does snapshots.
type VolumeMover interface {
	ExportVolume(ctx context.Context, name string, offset int64, w io.Writer) error
	// ImportVolume makes volume name, limited to sizeMB, once the stream
	// is whole.
	ImportVolume(ctx context.Context, name string, sizeMB int64, r io.Reader) (have int64, done bool, err error)
}

// NodeChooser is implemented by a runtime that places sandboxes: Choose
// names a ready node with room for lim other than not.
type NodeChooser interface {
	Choose(ctx context.Context, lim Limits, not string) (string, error)
}

// Volumer is implemented by runtimes that keep volumes: directories with
// a disk limit of their own that outlive the sandboxes that mount them.
type Volumer interface {
	// CreateVolume makes an empty volume limited to sizeMB.
	CreateVolume(ctx context.Context, name string, sizeMB int64) error
	// DeleteVolume removes it with all it holds; one that is not there is
	// not an error.
	DeleteVolume(ctx context.Context, name string) error
}

// TemplateInfo describes a template sandboxes can be created from.
type TemplateInfo struct {
	Name        string            `json:"name"`
	From        string            `json:"from,omitempty"` // the template it was built on
	Description string            `json:"description,omitempty"`
	CreatedAt   time.Time         `json:"created_at,omitzero"`
	SizeBytes   int64             `json:"size_bytes"` // what it adds to its base
	Labels      map[string]string `json:"labels,omitempty"`
	// Image is the OCI or Docker image an imported template was made
	// from (its reference, or "file:" and the name of the uploaded
	// tarball), Digest its manifest digest; such a template is the
	// image's own root filesystem, /usr included.
	Image  string `json:"image,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Env, Workdir and User are the image's: its environment is the
	// default of every sandbox made from it, its working directory the
	// default workdir. Commands run as uid 1000 whatever User says.
	Env     []string `json:"env,omitempty"`
	Workdir string   `json:"workdir,omitempty"`
	User    string   `json:"user,omitempty"`
	// Start is run in every sandbox created from the template (nil:
	// nothing is).
	Start *TemplateStart `json:"start,omitempty"`
	// Nodes are the nodes that hold the template, as a control plane
	// with nodes lists it; a node's own runtime leaves it empty.
	Nodes []string `json:"nodes,omitempty"`
}

// TemplateStart is a template's start command: a service that every
// sandbox made from the template runs (a code interpreter, a dev server).
// It runs in the background as the sandbox user, in the sandbox's
// workdir with its environment, and the create returns once it is ready:
// ReadyPort accepts connections, ReadyCommand exits 0 (both, when both
// are set; neither: once it has started), within ReadyTimeoutS.
type TemplateStart struct {
	Command       string `json:"command"` // run with /bin/sh -c
	ReadyPort     int    `json:"ready_port,omitempty"`
	ReadyCommand  string `json:"ready_command,omitempty"`
	ReadyTimeoutS int    `json:"ready_timeout_s,omitempty"` // 0: DefaultReadyTimeout
}

// Bounds of a start command's wait for readiness.
const (
	DefaultReadyTimeout = time.Minute
	MaxReadyTimeout     = 10 * time.Minute
)

// ImageSource is where ImageImporter gets an image: a registry reference,
// or a `docker save` or OCI layout tarball on the runtime's host.
type ImageSource struct {
	Ref  string
	File string
	// FileName is what File was called where it came from (an upload),
	// for the template's Image; File's own name otherwise.
	FileName string
	// Username and Password log in to the registry (Password alone: a
	// registry token); empty is anonymous.
	Username, Password string
	Insecure           bool // plain http (a registry on a private network)
	// Dial makes every connection to a registry: the caller's egress
	// rules decide which hosts may be reached. Required for Ref.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxBytes bounds the image's unpacked size (0: no bound).
	MaxBytes int64
	// Archive, in place of Ref and File, is the bytes of an image
	// archive (an OCI layout tar, or a docker save tarball) streamed from
	// another host: a control plane hands a node what it pulled or was
	// uploaded. Only a runtime reached over the node API reads it.
	Archive io.Reader
	// Origin, when set, is what the template's Image records instead of
	// Ref or "file:" and File's name: the reference of an image pulled
	// elsewhere into the archive.
	Origin string
}

// ImageProgress is how far an import got: bytes of the current layer
// read, of Total.
type ImageProgress struct {
	Layer  int    `json:"layer"`
	Layers int    `json:"layers"`
	Digest string `json:"digest"`
	Bytes  int64  `json:"bytes"`
	Total  int64  `json:"total"`
	Done   bool   `json:"done"`
}

// ImageImporter is implemented by runtimes that make templates from OCI
// and Docker images: the layers flattened into a root filesystem of the
// template's own, setuid and setgid bits and device nodes dropped.
type ImageImporter interface {
	ImportImage(ctx context.Context, t TemplateInfo, src ImageSource, progress func(ImageProgress)) (TemplateInfo, error)
}

// BaseTemplate is the template every runtime has.
var BaseTemplate = TemplateInfo{Name: "base", Description: "the host's /usr, read-only, with a writable /home/user"}

// Templater is implemented by runtimes that can keep templates built in a
// sandbox created with Spec.Build.
type Templater interface {
	// Templates lists the templates, base first.
	Templates(ctx context.Context) ([]TemplateInfo, error)
	// Template returns one template; ErrNotFound if there is none.
	Template(ctx context.Context, name string) (TemplateInfo, error)
	// CommitTemplate saves what the build sandbox put in /usr/local as the
	// template t.Name (replacing one of that name: sandboxes already
	// running on the old one keep it). Unless it refuses the request
	// (ErrInvalid, ErrNotFound), it first ends the sandbox's processes:
	// the caller destroys the sandbox after.
	CommitTemplate(ctx context.Context, sandboxID string, t TemplateInfo) (TemplateInfo, error)
	// DeleteTemplate removes a built template; running sandboxes keep it
	// until they end.
	DeleteTemplate(ctx context.Context, name string) error
}

// ExecRequest starts one process inside a sandbox.
type ExecRequest struct {
	Argv    []string          // argv[0] looked up in PATH when it has no slash
	Shell   string            // run with /bin/sh -c when Argv is empty
	Env     map[string]string // merged over the sandbox environment
	Cwd     string            // defaults to the sandbox workdir
	Stdin   io.Reader         // nil means /dev/null
	Stdout  io.Writer         // nil discards
	Stderr  io.Writer         // nil discards
	Timeout time.Duration     // 0 means none; on expiry the whole process tree is killed
	// TTY runs the process on a new terminal of this size: Stdin is what
	// is typed, Stdout gets everything it prints (Stderr is unused), and
	// the Process implements Resizer.
	TTY *TTYSize
}

// TTYSize is a terminal's size in character cells.
type TTYSize struct {
	Cols, Rows uint16
}

// Resizer is implemented by a Process started on a terminal.
type Resizer interface {
	Resize(size TTYSize) error
}

// ExitStatus is how a process ended.
type ExitStatus struct {
	Code      int           // exit code, or 128+signal when killed
	Signal    int           // signal that killed it, 0 when it exited
	TimedOut  bool          // killed by the wall-clock timeout
	OOMKilled bool          // killed by the sandbox's memory limit
	Duration  time.Duration // wall time from start to exit
}

// FileInfo describes a file inside a sandbox.
type FileInfo struct {
	Name    string      `json:"name"`
	Path    string      `json:"path"`
	Size    int64       `json:"size"`
	Mode    fs.FileMode `json:"mode"`
	ModTime time.Time   `json:"mod_time"`
	IsDir   bool        `json:"is_dir"`
	Link    string      `json:"link,omitempty"` // symlink target, when a symlink
}

// Stats is a point-in-time reading of a sandbox's resource use.
type Stats struct {
	CPUSeconds      float64 `json:"cpu_seconds"`
	MemoryBytes     int64   `json:"memory_bytes"`
	MemoryPeakBytes int64   `json:"memory_peak_bytes"`
	Pids            int64   `json:"pids"`
	DiskBytes       int64   `json:"disk_bytes"`
	OOMKills        int64   `json:"oom_kills"`
}

// Runtime creates and finds sandboxes.
type Runtime interface {
	Create(ctx context.Context, spec Spec) (Sandbox, error)
	// Get re-attaches to a sandbox that exists, for example after a restart.
	Get(ctx context.Context, id string) (Sandbox, error)
	// List returns the IDs of sandboxes this runtime holds.
	List(ctx context.Context) ([]string, error)
	// Protections reports which isolation layers this host enforces.
	Protections() []Protection
}

// Sandbox is one live sandbox.
type Sandbox interface {
	ID() string
	// Exec runs a process to its end, streaming its output.
	Exec(ctx context.Context, req ExecRequest) (ExitStatus, error)
	// Start begins a process without waiting for it; Wait on the result
	// collects its status. Cancelling ctx kills its process tree.
	Start(ctx context.Context, req ExecRequest) (Process, error)
	// Signal sends sig to the process with that pid inside the sandbox.
	Signal(ctx context.Context, pid int, sig int) error

	ReadFile(ctx context.Context, path string, w io.Writer) (int64, error)
	WriteFile(ctx context.Context, path string, r io.Reader, mode fs.FileMode) (int64, error)
	Stat(ctx context.Context, path string) (FileInfo, error)
	ListDir(ctx context.Context, path string) ([]FileInfo, error)
	MkdirAll(ctx context.Context, path string, mode fs.FileMode) error
	Remove(ctx context.Context, path string, recursive bool) error
	Rename(ctx context.Context, from, to string) error

	Stats(ctx context.Context) (Stats, error)
	// Destroy kills every process, removes every mount, cgroup and directory
	// of the sandbox. It is idempotent.
	Destroy(ctx context.Context) error
}

// Listener is implemented by sandboxes a host process can listen inside:
// the egress proxy serves a sandbox through listeners in its network
// namespace, so the sandbox needs no route or interface but lo.
type Listener interface {
	Listen(ctx context.Context, network, address string) (net.Listener, error)
}

// Dialer is implemented by sandboxes a host process can connect into: the
// API proxies requests to a port a sandbox listens on through it.
type Dialer interface {
	Dial(ctx context.Context, network, address string) (net.Conn, error)
}

// Locator is implemented by a runtime that places sandboxes on several
// nodes: Locate names the node that runs sandbox id ("" if it knows of
// none).
type Locator interface {
	Locate(id string) string
}

// NodeRouter is implemented by a runtime that places sandboxes on several
// nodes: On is the runtime of one of them, for what lives on a node
// rather than in a sandbox (snapshots, volumes).
type NodeRouter interface {
	On(ctx context.Context, node string) (Runtime, error)
}

// LocalNode is the name of the control plane's own host as a node.
const LocalNode = "local"

// NodeOf is the node of rt that runs sandbox id: where its Locator says,
// else LocalNode.
func NodeOf(rt Runtime, id string) string {
	if l, ok := rt.(Locator); ok {
		if n := l.Locate(id); n != "" {
			return n
		}
	}
	return LocalNode
}

// Process is one process started in a sandbox.
type Process interface {
	Pid() int // pid inside the sandbox
	Wait() (ExitStatus, error)
}

// Protection is one isolation layer and whether this host enforces it.
type Protection struct {
	Name     string `json:"name"`
	Enforced bool   `json:"enforced"`
	Detail   string `json:"detail,omitempty"`
}
