package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeManager keeps sandboxes and their files in memory and enforces
// ownership like the real one: another tenant's sandbox, or for a token any
// other sandbox, does not exist.
type fakeManager struct {
	mu        sync.Mutex
	n         int
	sandboxes map[string]sandboxrec.Sandbox
	files     map[string]map[string]fakeFile     // sandbox id -> path -> file
	netlog    map[string][]egress.Event          // sandbox id -> events
	audit     map[string][]audit.Event           // sandbox id -> audit log
	secrets   map[string]map[string]secrets.Spec // tenant -> name -> spec
	templates map[string]runtime.TemplateInfo    // built ones, by name
	lastMode  fs.FileMode
	lastList  sandboxrec.Filter
	lastExec  sandbox.ExecRequest
	lastUsage sandbox.UsageQuery // metering_fake_test.go
	// err, when set, is returned by every call (error mapping tests).
	err error
	// durable, when set, is called by Durable (it may block).
	durable func()
	// stream drives ExecStream; nil sends pid 7, "out", "err" and exits 3.
	stream func(s sandbox.Stream) (sandbox.ExecResult, error)
	// read, when set, is what ReadFile of a file that exists does (a file
	// that changes while it is read, say); nil copies the file's data.
	read func(w io.Writer) (int64, error)
}

type fakeFile struct {
	data []byte
	mode fs.FileMode
	dir  bool
}

func newFakeManager() *fakeManager {
	return &fakeManager{sandboxes: map[string]sandboxrec.Sandbox{}, files: map[string]map[string]fakeFile{}}
}

// lookup returns the caller's sandbox; m.mu is held.
func (m *fakeManager) lookup(c sandbox.Caller, id string) (sandboxrec.Sandbox, error) {
	if m.err != nil {
		return sandboxrec.Sandbox{}, m.err
	}
	sb, ok := m.sandboxes[id]
	if !ok || sb.TenantID != c.TenantID || (c.SandboxID != "" && c.SandboxID != id) {
		return sandboxrec.Sandbox{}, fmt.Errorf("sandbox %q: %w", id, sandbox.ErrNotFound)
	}
	return sb, nil
}

func (m *fakeManager) Create(_ context.Context, c sandbox.Caller, req sandbox.CreateRequest) (sandboxrec.Sandbox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return sandboxrec.Sandbox{}, m.err
	}
	m.n++
	sb := sandboxrec.Sandbox{
		ID: fmt.Sprintf("sb_%03d", m.n), TenantID: c.TenantID, State: sandboxrec.Running, Node: "local",
		Template: "base", CPUs: 1, MemoryMB: 512, Pids: 256, DiskMB: 1024,
		Metadata: req.Metadata, Workdir: "/home/user", CreatedAt: t0, ExpiresAt: t0.Add(300 * time.Second),
	}
	if req.Template != "" {
		sb.Template = req.Template
	}
	if req.MemoryMB != 0 {
		sb.MemoryMB = req.MemoryMB
	}
	if req.Network != nil {
		b, _ := json.Marshal(req.Network)
		sb.Network = string(b)
	}
	m.sandboxes[sb.ID] = sb
	m.files[sb.ID] = map[string]fakeFile{"/home/user": {dir: true, mode: 0o755}}
	return sb, nil
}

// Check refuses what the fake's Create would: nothing but its error.
func (m *fakeManager) Check(context.Context, sandbox.Caller, sandbox.CreateRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// DialPort: the fake's sandboxes listen on nothing.
func (m *fakeManager) DialPort(_ context.Context, c sandbox.Caller, id string, port int) (net.Conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: nothing listens on port %d", sandbox.ErrUnavailable, port)
}

// ForgetTenant: the fake keeps nothing of tenants.
func (m *fakeManager) ForgetTenant(string) {}

func (m *fakeManager) Get(_ context.Context, c sandbox.Caller, id string) (sandboxrec.Sandbox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lookup(c, id)
}

// GetExec: the fake keeps no commands.
func (m *fakeManager) GetExec(_ context.Context, c sandbox.Caller, id, execID string) (sandbox.ExecInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return sandbox.ExecInfo{}, err
	}
	return sandbox.ExecInfo{}, fmt.Errorf("%w: no command %s", sandbox.ErrNotFound, execID)
}

func (m *fakeManager) ExecOutput(ctx context.Context, c sandbox.Caller, id, execID string, _ int64, _ bool, _ sandbox.ProcStream) error {
	_, err := m.GetExec(ctx, c, id, execID)
	return err
}

// AgentVersion: the fake's sandboxes have no agent to ask.
func (m *fakeManager) AgentVersion(context.Context, sandboxrec.Sandbox) int { return 0 }

func (m *fakeManager) AgentVersions(context.Context) (map[int]int, error) { return map[int]int{}, nil }

func (m *fakeManager) List(_ context.Context, c sandbox.Caller, f sandboxrec.Filter) ([]sandboxrec.Sandbox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	m.lastList = f
	var out []sandboxrec.Sandbox
	for _, sb := range m.sandboxes {
		if sb.TenantID != f.TenantID || sb.ID <= f.After || (f.State != "" && sb.State != f.State) {
			continue
		}
		match := true
		for k, v := range f.Metadata {
			match = match && sb.Metadata[k] == v
		}
		if match {
			out = append(out, sb)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func (m *fakeManager) Delete(_ context.Context, c sandbox.Caller, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return err
	}
	delete(m.sandboxes, id)
	return nil
}

func (m *fakeManager) SetTimeout(_ context.Context, c sandbox.Caller, id string, d time.Duration) (sandboxrec.Sandbox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, err := m.lookup(c, id)
	if err != nil {
		return sb, err
	}
	sb.ExpiresAt = t0.Add(d)
	m.sandboxes[id] = sb
	return sb, nil
}

func (m *fakeManager) Exec(_ context.Context, c sandbox.Caller, id string, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return sandbox.ExecResult{}, err
	}
	m.lastExec = req
	return sandbox.ExecResult{ExitCode: 0, Stdout: strings.Join(req.Cmd, " ") + req.Command + "\n", DurationMS: 1.5}, nil
}

func (m *fakeManager) ExecStream(_ context.Context, c sandbox.Caller, id string, req sandbox.ExecRequest, s sandbox.Stream) (sandbox.ExecResult, error) {
	m.mu.Lock()
	_, err := m.lookup(c, id)
	stream := m.stream
	m.mu.Unlock()
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	if stream != nil {
		return stream(s)
	}
	if err := s.Started(7, "ex-fake"); err != nil {
		return sandbox.ExecResult{}, err
	}
	if err := s.Stdout([]byte("out")); err != nil {
		return sandbox.ExecResult{}, err
	}
	if err := s.Stderr([]byte("err")); err != nil {
		return sandbox.ExecResult{}, err
	}
	return sandbox.ExecResult{ExitCode: 3, DurationMS: 2}, nil
}

// abs resolves p like the manager does: relative to /home/user.
func abs(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Join("/home/user", p)
}

func (m *fakeManager) ReadFile(_ context.Context, c sandbox.Caller, id, p string, w io.Writer) (int64, error) {
	m.mu.Lock()
	if _, err := m.lookup(c, id); err != nil {
		m.mu.Unlock()
		return 0, err
	}
	f, ok := m.files[id][abs(p)]
	read := m.read
	m.mu.Unlock()
	if !ok || f.dir {
		return 0, fmt.Errorf("read %s: %w", p, sandbox.ErrNotFound)
	}
	if read != nil {
		return read(w)
	}
	return io.Copy(w, bytes.NewReader(f.data))
}

func (m *fakeManager) WriteFile(_ context.Context, c sandbox.Caller, id, p string, r io.Reader, mode fs.FileMode) (int64, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return 0, err
	}
	m.lastMode = mode
	m.files[id][abs(p)] = fakeFile{data: data, mode: mode}
	return int64(len(data)), nil
}

func (m *fakeManager) info(p string, f fakeFile) runtime.FileInfo {
	mode := f.mode
	if f.dir {
		mode |= fs.ModeDir
	}
	i := strings.LastIndex(p, "/")
	return runtime.FileInfo{Name: p[i+1:], Path: p, Size: int64(len(f.data)), Mode: mode, ModTime: t0, IsDir: f.dir}
}

func (m *fakeManager) ListDir(_ context.Context, c sandbox.Caller, id, p string) ([]runtime.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return nil, err
	}
	dir := abs(p)
	if f, ok := m.files[id][dir]; !ok || !f.dir {
		return nil, fmt.Errorf("list %s: %w", p, sandbox.ErrNotFound)
	}
	var out []runtime.FileInfo
	for fp, f := range m.files[id] {
		if strings.HasPrefix(fp, dir+"/") && !strings.Contains(fp[len(dir)+1:], "/") {
			out = append(out, m.info(fp, f))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func (m *fakeManager) Stat(_ context.Context, c sandbox.Caller, id, p string) (runtime.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return runtime.FileInfo{}, err
	}
	f, ok := m.files[id][abs(p)]
	if !ok {
		return runtime.FileInfo{}, fmt.Errorf("stat %s: %w", p, sandbox.ErrNotFound)
	}
	return m.info(abs(p), f), nil
}

func (m *fakeManager) Mkdir(_ context.Context, c sandbox.Caller, id, p string, mode fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return err
	}
	m.lastMode = mode
	m.files[id][abs(p)] = fakeFile{dir: true, mode: mode}
	return nil
}

func (m *fakeManager) Move(_ context.Context, c sandbox.Caller, id, from, to string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return err
	}
	f, ok := m.files[id][abs(from)]
	if !ok {
		return fmt.Errorf("move %s: %w", from, sandbox.ErrNotFound)
	}
	delete(m.files[id], abs(from))
	m.files[id][abs(to)] = f
	return nil
}

func (m *fakeManager) Remove(_ context.Context, c sandbox.Caller, id, p string, recursive bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return err
	}
	if _, ok := m.files[id][abs(p)]; !ok {
		return fmt.Errorf("remove %s: %w", p, sandbox.ErrNotFound)
	}
	delete(m.files[id], abs(p))
	return nil
}

func (m *fakeManager) AuditLog(ctx context.Context, c sandbox.Caller, id string, f store.AuditFilter, out func(audit.Event) error) error {
	m.mu.Lock()
	_, err := m.lookup(c, id)
	events := m.audit[id]
	m.mu.Unlock()
	if err != nil {
		return err
	}
	for _, e := range events {
		if len(f.Types) > 0 && !slices.Contains(f.Types, e.Type) {
			continue
		}
		if err := out(e); err != nil {
			return err
		}
	}
	return nil
}

func (m *fakeManager) VerifyAudit(ctx context.Context, c sandbox.Caller, id string) (audit.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return audit.Result{}, err
	}
	return audit.Result{OK: true}, nil
}

func (m *fakeManager) RecordRequest(ctx context.Context, c sandbox.Caller, id, method, route string, status int, d time.Duration) {
}

func (m *fakeManager) Durable() {
	m.mu.Lock()
	f := m.durable
	m.mu.Unlock()
	if f != nil {
		f()
	}
}

func (m *fakeManager) RecordTask(ctx context.Context, c sandbox.Caller, id, typ string, data map[string]any) {
}
