package tasks

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// Request is POST /v1/tasks: what to run, on what, with what reach.
type Request struct {
	Harness string `json:"harness"`
	Prompt  string `json:"prompt"`
	// Files are written into the workspace before the harness starts:
	// relative path -> content. A file whose content starts with "#!" is
	// made executable.
	Files map[string]string `json:"files,omitempty"`
	// Repo fills the workspace before Files are written.
	Repo *Repo `json:"repo,omitempty"`
	// Command is the generic harness's argv (refused for the others).
	Command []string          `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Allow is the egress allow-list (sandbox network patterns); empty:
	// no network but the bound secrets' hosts and the harness's model
	// hosts.
	Allow []string `json:"allow,omitempty"`
	// Secrets names tenant secrets bound to the task's sandbox.
	Secrets   []string `json:"secrets,omitempty"`
	Model     *Model   `json:"model,omitempty"`
	Limits    Limits   `json:"limits,omitzero"`
	TimeoutS  int64    `json:"timeout_s,omitempty"`
	Artifacts []string `json:"artifacts,omitempty"`
	// Budget caps what the task's model calls may spend (each attempt's
	// sandbox gets it); once spent, further calls are refused and the
	// task ends failed with reason "budget".
	Budget *sandbox.Budget `json:"budget,omitempty"`
	// Retry runs the task again, in a new sandbox, after an
	// infrastructure failure (its sandbox could not be created or was
	// lost); a harness that fails is not retried.
	Retry *Retry `json:"retry,omitempty"`
	// Continue makes this task a follow-up turn of an ended one (its
	// id): it starts from that task's final workspace, which it kept
	// (KeepWorkspaceS), in the same harness, and where the harness can,
	// in its own session (codex exec resume --last, claude --continue).
	Continue string `json:"continue,omitempty"`
	// KeepWorkspaceS keeps the final workspace (the whole sandbox's
	// writable layer: the harness's session too) as a snapshot for that
	// many seconds after the task ends, for a follow-up turn.
	KeepWorkspaceS int64 `json:"keep_workspace_s,omitempty"`
	// Approval makes the harness's tool calls of the categories it names
	// wait for a person (approval.go).
	Approval *Approval `json:"approval,omitempty"`
}

// Retry bounds how often a task is tried again.
type Retry struct {
	Max int `json:"max"`
}

// MaxRetries bounds Retry.Max; MaxKeepWorkspaceS KeepWorkspaceS (a week).
const (
	MaxRetries        = 10
	MaxKeepWorkspaceS = 7 * 86400
)

// Repo is what the workspace starts from: exactly one of a tar archive
// (plain or gzip-compressed; base64 in JSON) and a git repository that the
// sandbox clones through its egress proxy, so its host must be allowed.
type Repo struct {
	Tarball []byte   `json:"tarball,omitempty"`
	Git     *GitRepo `json:"git,omitempty"`
}

// GitRepo is a repository to clone: an http(s) URL without credentials
// (bind a secret for a private host instead) and a branch, tag or commit
// (default: the remote's HEAD).
type GitRepo struct {
	URL string `json:"url"`
	Ref string `json:"ref,omitempty"`
}

// Model says which model endpoint a harness talks to.
type Model struct {
	Provider string `json:"provider,omitempty"`
	BaseURL  string `json:"base_url,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Limits are the task sandbox's resources; zero fields take the sandbox
// defaults.
type Limits struct {
	CPUs     float64 `json:"cpus,omitempty"`
	MemoryMB int64   `json:"memory_mb,omitempty"`
	Pids     int64   `json:"pids,omitempty"`
	DiskMB   int64   `json:"disk_mb,omitempty"`
}

// Bounds of a request.
const (
	DefaultTimeoutS = 600
	MaxTimeoutS     = 86400
	// MaxPrompt keeps the prompt under the kernel's 128 KiB bound on one
	// environment string ($AIRLOCK_TASK_PROMPT).
	MaxPrompt    = 100 << 10
	MaxFiles     = 10000
	MaxTarball   = 32 << 20
	MaxArtifacts = 64
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", sandbox.ErrInvalid, fmt.Sprintf(format, args...))
}

// validate checks r and fills its defaults. has says whether the server
// has a template.
func (r *Request) validate(has func(template string) bool) error {
	h, ok := harnesses[r.Harness]
	if !ok {
		return invalid("harness %q: want one of %s", r.Harness, strings.Join(HarnessNames(), ", "))
	}
	if !has(h.Template) {
		return invalid("harness %q needs the sandbox template %q (with %s installed), which this server does not have yet; an admin builds it with: %s",
			h.Name, h.Template, h.Package, h.BuildHint())
	}
	switch {
	case len(r.Prompt) > MaxPrompt:
		return invalid("prompt is %d bytes; at most %d", len(r.Prompt), MaxPrompt)
	case strings.ContainsRune(r.Prompt, 0):
		return invalid("prompt holds a NUL byte")
	case r.Harness != HarnessGeneric && strings.TrimSpace(r.Prompt) == "":
		return invalid("prompt is empty")
	case r.Harness == HarnessGeneric && (len(r.Command) == 0 || r.Command[0] == ""):
		return invalid("harness generic needs a command (argv), e.g. [\"sh\", \"-c\", \"...\"]")
	case r.Harness != HarnessGeneric && len(r.Command) > 0:
		return invalid("command is for the generic harness; harness %q has its own", r.Harness)
	case r.TimeoutS < 0 || r.TimeoutS > MaxTimeoutS:
		return invalid("timeout_s %d: want 1..%d (default %d)", r.TimeoutS, MaxTimeoutS, DefaultTimeoutS)
	case len(r.Files) > MaxFiles:
		return invalid("%d files; at most %d", len(r.Files), MaxFiles)
	case len(r.Artifacts) > MaxArtifacts:
		return invalid("%d artifact patterns; at most %d", len(r.Artifacts), MaxArtifacts)
	}
	if r.TimeoutS == 0 {
		r.TimeoutS = DefaultTimeoutS
	}
	for _, a := range r.Command {
		if strings.ContainsRune(a, 0) {
			return invalid("command holds a NUL byte")
		}
	}
	if err := sandbox.ValidEnv(r.Env); err != nil {
		return fmt.Errorf("env: %w", err)
	}
	for k := range r.Env {
		if strings.HasPrefix(k, "AIRLOCK_") {
			return invalid("env %.40q: AIRLOCK_* names are the task's own", k)
		}
	}
	if m := r.Model; m != nil && strings.ContainsRune(m.Provider+m.BaseURL+m.Name, 0) {
		return invalid("model: NUL byte in provider, base_url or name")
	}
	if r.Limits.CPUs < 0 || r.Limits.MemoryMB < 0 || r.Limits.Pids < 0 || r.Limits.DiskMB < 0 {
		return invalid("limits must not be negative (0 takes the sandbox default)")
	}
	if len(r.Allow) > 0 {
		if _, err := egress.Compile(egress.Policy{Mode: egress.ModeAllowlist, Allow: r.Allow}); err != nil {
			return invalid("allow: %v", err)
		}
	}
	for _, name := range r.Secrets {
		if !envName.MatchString(name) {
			return invalid("secret %.40q: want a secret's name", name)
		}
	}
	for p := range r.Files {
		if err := validPath(p); err != nil {
			return err
		}
	}
	for _, g := range r.Artifacts {
		if err := validGlob(g); err != nil {
			return err
		}
	}
	if err := r.Budget.Validate(); err != nil {
		return invalid("%v", err)
	}
	if r.Retry != nil && (r.Retry.Max < 0 || r.Retry.Max > MaxRetries) {
		return invalid("retry.max %d: want 0..%d", r.Retry.Max, MaxRetries)
	}
	if r.KeepWorkspaceS < 0 || r.KeepWorkspaceS > MaxKeepWorkspaceS {
		return invalid("keep_workspace_s %d: want 0..%d", r.KeepWorkspaceS, MaxKeepWorkspaceS)
	}
	if r.Approval != nil {
		if err := r.Approval.validate(); err != nil {
			return err
		}
		if r.Harness != HarnessClaude && r.Harness != HarnessCodex {
			return invalid("approval: harness %q does not ask permission through Airlock (claude and codex do; the generic harness asks with airlock-approve without it)", r.Harness)
		}
	}
	if r.Continue != "" && r.Repo != nil {
		return invalid("continue starts from the earlier task's workspace: leave repo out")
	}
	if r.Repo != nil {
		return r.validRepo()
	}
	return nil
}

// validGitRef: a letter, digit, '.', '_' or '/' first, then up to 199 of
// those or '-' (no leading '-': git would take it for an option). A loop,
// not a regexp: `{0,199}` compiles to 200 copies of its class, which cost
// every start of the airlock binary ~2 ms (GODEBUG=inittrace=1).
func validGitRef(s string) bool {
	if s == "" || len(s) > 200 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("._/-", c) >= 0) {
			return false
		}
	}
	return true
}

// validRepo checks the repo source; a git URL's host must be on the
// allow-list (the clone goes through the task sandbox's proxy).
func (r *Request) validRepo() error {
	switch g := r.Repo.Git; {
	case (len(r.Repo.Tarball) == 0) == (g == nil):
		return invalid("repo: give exactly one of tarball and git")
	case len(r.Repo.Tarball) > MaxTarball:
		return invalid("repo: tarball is %d bytes; at most %d", len(r.Repo.Tarball), MaxTarball)
	case g == nil:
		return validTarball(r.Repo.Tarball)
	case g.Ref != "" && (!validGitRef(g.Ref) || strings.Contains(g.Ref, "..")):
		return invalid("repo: git ref %.60q: want a branch, tag or commit name", g.Ref)
	}
	u, err := url.Parse(r.Repo.Git.URL)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "":
		return invalid("repo: git url %.100q: want an http(s) URL", r.Repo.Git.URL)
	case u.User != nil:
		return invalid("repo: git url holds credentials: bind a secret for the host instead")
	case strings.ContainsAny(r.Repo.Git.URL, " \t\n\x00"):
		return invalid("repo: git url %.100q holds whitespace", r.Repo.Git.URL)
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return invalid("repo: git url port %q", p)
		}
	}
	rules, err := egress.Compile(egress.Policy{Mode: egress.ModeAllowlist, Allow: r.Allow})
	if err != nil {
		return invalid("allow: %v", err)
	}
	ip, _ := netip.ParseAddr(u.Hostname())
	if d := rules.Match(u.Hostname(), ip, port); !d.Allowed {
		return invalid("repo: git url's host %s is not on the allow-list (%s): add it to allow", u.Host, d.Reason)
	}
	return nil
}

// validPath accepts a workspace-relative path that stays in the
// workspace.
func validPath(p string) error {
	switch {
	case p == "" || len(p) > sandbox.MaxPath || strings.ContainsRune(p, 0):
		return invalid("file path %.60q: want 1..%d bytes without NUL", p, sandbox.MaxPath)
	case strings.HasPrefix(p, "/"):
		return invalid("file path %.60q: want a path relative to the workspace", p)
	case path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return invalid("file path %.60q: want a clean path inside the workspace (no ., .. or //)", p)
	}
	if err := sandbox.CheckPathLength(p); err != nil {
		return fmt.Errorf("file path: %w", err)
	}
	return nil
}

// validTarball checks that b starts as a tar archive, plain or gzip
// compressed: a file that is neither is refused now rather than when the
// task's sandbox unpacks it. The rest is read there (a damaged archive
// then fails the task, saying why).
func validTarball(b []byte) error {
	var rd io.Reader = bytes.NewReader(b)
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return invalid("repo: tarball: %v", err)
		}
		rd = zr
	}
	if _, err := tar.NewReader(rd).Next(); err != nil && err != io.EOF {
		return invalid("repo: tarball is not a tar archive (plain or gzip): %v", err)
	}
	return nil
}
