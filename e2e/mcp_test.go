package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

// The MCP bridge over both transports, with the official Go SDK's client:
// what a harness sees (tools and their schemas, results, tool errors) and
// what must hold underneath (tenancy, cancellation killing the command).
func TestMCP(t *testing.T) {
	s := startServer(t, "")
	admin := s.admin()
	for _, n := range []string{"mcp-a", "mcp-b"} {
		must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: n}))
	}
	keyA := must[client.NewKey](t)(admin.CreateKey(ctx, "mcp-a", "a")).Key
	keyB := must[client.NewKey](t)(admin.CreateKey(ctx, "mcp-b", "b")).Key
	transports := []struct {
		name    string
		connect func(t *testing.T, key, version string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession
	}{
		{"http", func(t *testing.T, key, version string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
			return mcpHTTPAt(t, s.url, key, version, opts)
		}},
		{"stdio", func(t *testing.T, key, version string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
			return mcpStdioAt(t, s.bin, s.url, key, version, opts)
		}},
	}
	// 2026-07-28 is stateless (no session; over HTTP a call is its POST, so
	// cancelling drops the request); 2025-11-25 is the newest revision with
	// an initialize handshake and a session. The older handshake revisions
	// differ from it in nothing Airlock uses: e2e/mcpnode2 runs them.
	for _, tr := range transports {
		for _, rev := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(tr.name+"/"+rev, func(t *testing.T) {
				connect := func(t *testing.T, key string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
					cs := tr.connect(t, key, rev, opts)
					if got := cs.InitializeResult().ProtocolVersion; got != rev {
						t.Fatalf("negotiated %s, want %s", got, rev)
					}
					if tr.name == "http" && (cs.ID() == "") != (rev >= "2026-07-28") {
						t.Errorf("Mcp-Session-Id %q at %s: want one only before 2026-07-28", cs.ID(), rev)
					}
					return cs
				}
				a := connect(t, keyA, nil)
				t.Run("Tools", func(t *testing.T) { mcpToolSchemas(t, a) })
				t.Run("Flow", func(t *testing.T) { mcpFlow(t, a, client.New(s.url, keyA)) })
				t.Run("Expired", func(t *testing.T) { mcpExpired(t, a) })
				t.Run("Tenancy", func(t *testing.T) { mcpTenancy(t, a, connect(t, keyB, nil), client.New(s.url, keyA)) })
				t.Run("Cancel", func(t *testing.T) { mcpCancel(t, a, client.New(s.url, keyA)) })
				t.Run("Progress", func(t *testing.T) {
					var mu sync.Mutex
					var got []string
					p := connect(t, keyA, &mcpsdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcpsdk.ProgressNotificationClientRequest) {
						mu.Lock()
						got = append(got, r.Params.Message)
						mu.Unlock()
					}})
					mcpProgress(t, p, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) })
				})
				t.Run("Resources", func(t *testing.T) { mcpResources(t, a) })
				t.Run("Task", func(t *testing.T) { mcpTask(t, a) })
			})
		}
	}
	t.Run("HTTPAuth", func(t *testing.T) { mcpHTTPAuth(t, s.url, keyA, keyB) })
}

// bearer adds an Authorization header to every request.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

func mcpHTTP(t *testing.T, url, key string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	return mcpHTTPAt(t, url, key, "", opts)
}

// mcpHTTPAt connects over streamable HTTP asking for protocol revision
// version ("": the SDK's newest, 2026-07-28).
func mcpHTTPAt(t *testing.T, url, key, version string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	tr := &mcpsdk.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}}
	return mcpConnectAt(t, tr, version, opts)
}

func mcpStdio(t *testing.T, bin, url, key string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	return mcpStdioAt(t, bin, url, key, "", opts)
}

func mcpStdioAt(t *testing.T, bin, url, key, version string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	mcpVerb(t, bin)
	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), "AIRLOCK_URL="+url, "AIRLOCK_API_KEY="+key)
	cmd.Stderr = os.Stderr
	return mcpConnectAt(t, &mcpsdk.CommandTransport{Command: cmd}, version, opts)
}

func mcpConnect(t *testing.T, tr mcpsdk.Transport, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	return mcpConnectAt(t, tr, "", opts)
}

func mcpConnectAt(t *testing.T, tr mcpsdk.Transport, version string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "airlock-e2e", Version: "1"}, opts)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := c.Connect(cctx, tr, &mcpsdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call runs a tool that must succeed and decodes its structured result.
func mcpCall[T any](t *testing.T, cs *mcpsdk.ClientSession, name string, args map[string]any) T {
	t.Helper()
	res := mcpCallRaw(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s %v: tool error: %s", name, args, mcpText(res))
	}
	var out T
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return out
}

func mcpCallRaw(t *testing.T, cs *mcpsdk.ClientSession, name string, args map[string]any) *mcpsdk.CallToolResult {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol error (want a result): %v", name, args, err)
	}
	return res
}

// toolError calls a tool that must fail as a tool (isError), not as the
// protocol, and returns its message.
func mcpToolError(t *testing.T, cs *mcpsdk.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res := mcpCallRaw(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s %v: succeeded, want a tool error: %s", name, args, mcpText(res))
	}
	return mcpText(res)
}

func mcpText(res *mcpsdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

type mcpRun struct {
	Pid      int    `json:"pid"`
	ExitCode *int   `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	TimedOut bool   `json:"timed_out"`
	Note     string `json:"note"`
}

type mcpCreated struct {
	SandboxID string    `json:"sandbox_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

func mcpCreate(t *testing.T, cs *mcpsdk.ClientSession, args map[string]any) string {
	t.Helper()
	id := mcpCall[mcpCreated](t, cs, "sandbox_create", args).SandboxID
	if id == "" {
		t.Fatal("sandbox_create gave no sandbox_id")
	}
	return id
}

var mcpTools = []string{"approval_decide", "approval_get", "approval_list", "audit_log", "delete_file", "list_files", "network_log", "process_kill", "process_output", "read_file",
	"run_command", "sandbox_create", "sandbox_destroy", "sandbox_extend", "sandbox_fork", "sandbox_list", "sandbox_pause",
	"sandbox_resume", "sandbox_snapshot", "shell", "snapshot_delete", "snapshot_list", "task_run", "write_file"}

func mcpToolSchemas(t *testing.T, cs *mcpsdk.ClientSession) {
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		in, _ := json.Marshal(tool.InputSchema)
		out, _ := json.Marshal(tool.OutputSchema)
		if !strings.Contains(string(in), `"properties"`) || !strings.Contains(string(out), `"properties"`) {
			t.Errorf("%s: want input and output schemas with properties, got %s and %s", tool.Name, in, out)
		}
		if len(tool.Description) < 40 {
			t.Errorf("%s: description %q too thin for a model to act on", tool.Name, tool.Description)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, mcpTools) {
		t.Errorf("tools %v, want %v", names, mcpTools)
	}
}

func mcpFlow(t *testing.T, cs *mcpsdk.ClientSession, api *client.Client) {
	id := mcpCreate(t, cs, map[string]any{"timeout_s": 300, "metadata": map[string]string{"via": "mcp"}})
	if sb := must[client.Sandbox](t)(api.GetSandbox(ctx, id)); sb.State != client.StateRunning || sb.Metadata["via"] != "mcp" {
		t.Fatalf("through the API the sandbox is %+v", sb)
	}
	listed := mcpCall[struct {
		Sandboxes []struct {
			SandboxID string `json:"sandbox_id"`
		} `json:"sandboxes"`
	}](t, cs, "sandbox_list", nil)
	if !slices.ContainsFunc(listed.Sandboxes, func(s struct {
		SandboxID string `json:"sandbox_id"`
	}) bool {
		return s.SandboxID == id
	}) {
		t.Errorf("sandbox_list %+v lacks %s", listed, id)
	}

	r := mcpCall[mcpRun](t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "echo out; echo err >&2; whoami; exit 3"})
	if r.ExitCode == nil || *r.ExitCode != 3 || r.Stdout != "out\nuser\n" || r.Stderr != "err\n" {
		t.Errorf("run_command: %+v", r)
	}
	big := mcpCall[mcpRun](t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "head -c 300000 /dev/zero | tr '\\0' x; echo END"})
	if len(big.Stdout) > 70<<10 || !strings.HasSuffix(big.Stdout, "xEND\n") || !strings.Contains(big.Note, "read_file") {
		t.Errorf("a 300 kB output: %d bytes back, ends %q, note %q", len(big.Stdout), big.Stdout[max(0, len(big.Stdout)-10):], big.Note)
	}

	type shellOut struct {
		SessionID string `json:"session_id"`
		ExitCode  int    `json:"exit_code"`
		Output    string `json:"output"`
	}
	sh := mcpCall[shellOut](t, cs, "shell", map[string]any{"sandbox_id": id, "command": "mkdir -p /tmp/d && cd /tmp/d && export MCPV=kept"})
	if sh.SessionID == "" || sh.ExitCode != 0 {
		t.Fatalf("shell: %+v", sh)
	}
	sh2 := mcpCall[shellOut](t, cs, "shell", map[string]any{"sandbox_id": id, "session_id": sh.SessionID, "command": "pwd; echo $MCPV; false"})
	if sh2.SessionID != sh.SessionID || sh2.ExitCode != 1 || !strings.Contains(sh2.Output, "/tmp/d") || !strings.Contains(sh2.Output, "kept") {
		t.Errorf("second shell call in the session: %+v", sh2)
	}

	type readOut struct {
		Content string `json:"content"`
		Base64  bool   `json:"base64"`
		Size    int64  `json:"size"`
	}
	mcpCall[any](t, cs, "write_file", map[string]any{"sandbox_id": id, "path": "notes/a.txt", "content": "héllo\n"})
	if got := mcpCall[readOut](t, cs, "read_file", map[string]any{"sandbox_id": id, "path": "/home/user/notes/a.txt"}); got != (readOut{"héllo\n", false, 7}) {
		t.Errorf("read_file of text: %+v", got)
	}
	bin := []byte{0, 1, 2, 0xff, 0xfe, 'x'}
	mcpCall[any](t, cs, "write_file", map[string]any{"sandbox_id": id, "path": "b.bin", "content": base64.StdEncoding.EncodeToString(bin), "base64": true})
	if got := mcpCall[readOut](t, cs, "read_file", map[string]any{"sandbox_id": id, "path": "b.bin"}); got != (readOut{base64.StdEncoding.EncodeToString(bin), true, 6}) {
		t.Errorf("read_file of binary: %+v", got)
	}
	if r := mcpCall[mcpRun](t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "od -An -tx1 b.bin"}); strings.Join(strings.Fields(r.Stdout), "") != "000102fffe78" {
		t.Errorf("the binary file inside the sandbox: %q", r.Stdout)
	}
	ls := mcpCall[struct {
		Entries []struct{ Name, Type string } `json:"entries"`
	}](t, cs, "list_files", map[string]any{"sandbox_id": id, "path": "notes"})
	if len(ls.Entries) != 1 || ls.Entries[0].Name != "a.txt" || ls.Entries[0].Type != "file" {
		t.Errorf("list_files: %+v", ls)
	}
	mcpCall[any](t, cs, "delete_file", map[string]any{"sandbox_id": id, "path": "notes/a.txt"})
	if msg := mcpToolError(t, cs, "read_file", map[string]any{"sandbox_id": id, "path": "notes/a.txt"}); !strings.Contains(msg, "not found") {
		t.Errorf("read_file after delete_file: %q", msg)
	}

	bg := mcpCall[mcpRun](t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "echo started; sleep 300", "background": true})
	if bg.Pid == 0 {
		t.Fatalf("background run_command: %+v", bg)
	}
	type procOut struct {
		Output     string `json:"output"`
		NextOffset int64  `json:"next_offset"`
		Running    bool   `json:"running"`
	}
	var po procOut
	for deadline := time.Now().Add(10 * time.Second); po.Output == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		po = mcpCall[procOut](t, cs, "process_output", map[string]any{"sandbox_id": id, "pid": bg.Pid})
	}
	if po.Output != "started\n" || po.NextOffset != 8 || !po.Running {
		t.Errorf("process_output: %+v", po)
	}
	mcpCall[any](t, cs, "process_kill", map[string]any{"sandbox_id": id, "pid": bg.Pid})
	// Output over the cap comes in pages: next_offset resumes exactly.
	big2 := mcpCall[mcpRun](t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "head -c 100000 /dev/zero | tr '\\0' y", "background": true})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !mcpCall[procOut](t, cs, "process_output", map[string]any{"sandbox_id": id, "pid": big2.Pid}).Running {
			break
		}
	}
	var pages []procOut
	for off := int64(0); len(pages) < 3; {
		p := mcpCall[procOut](t, cs, "process_output", map[string]any{"sandbox_id": id, "pid": big2.Pid, "offset": off})
		if p.Output == "" {
			break
		}
		pages, off = append(pages, p), p.NextOffset
	}
	if len(pages) != 2 || len(pages[0].Output) != 64<<10 || pages[0].NextOffset != 64<<10 || len(pages[1].Output) != 100000-64<<10 ||
		strings.Trim(pages[0].Output+pages[1].Output, "y") != "" {
		var sizes []int
		for _, p := range pages {
			sizes = append(sizes, len(p.Output))
		}
		t.Errorf("100000 bytes through process_output: pages of %v bytes", sizes)
	}
	type auditOut struct {
		Events []struct{ Type string } `json:"events"`
	}
	au := mcpCall[auditOut](t, cs, "audit_log", map[string]any{"sandbox_id": id, "types": []string{"exec.started"}})
	if len(au.Events) < 3 {
		t.Errorf("audit_log exec.started: %d events, want the commands run above", len(au.Events))
	}
	mcpCall[struct {
		Events []any `json:"events"`
	}](t, cs, "network_log", map[string]any{"sandbox_id": id})
	ext := mcpCall[mcpCreated](t, cs, "sandbox_extend", map[string]any{"sandbox_id": id, "timeout_s": 3600})
	if d := time.Until(ext.ExpiresAt); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("sandbox_extend 3600: expires in %v", d)
	}

	mcpCall[any](t, cs, "sandbox_destroy", map[string]any{"sandbox_id": id})
	if _, err := api.GetSandbox(ctx, id); err != nil {
		t.Fatalf("the record should outlive the sandbox: %v", err)
	} else if sb := must[client.Sandbox](t)(api.GetSandbox(ctx, id)); sb.State != client.StateStopped {
		t.Errorf("after sandbox_destroy the sandbox is %s", sb.State)
	}
	if msg := mcpToolError(t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "true"}); !strings.Contains(msg, "sandbox_create") {
		t.Errorf("run_command in a destroyed sandbox: %q, want advice to create a new one", msg)
	}
	if msg := mcpToolError(t, cs, "run_command", map[string]any{"sandbox_id": "sb-doesnotexist", "command": "true"}); !strings.Contains(msg, "not found") || !strings.Contains(msg, "sandbox_create") {
		t.Errorf("run_command in an unknown sandbox: %q", msg)
	}
}

func mcpExpired(t *testing.T, cs *mcpsdk.ClientSession) {
	id := mcpCreate(t, cs, map[string]any{"timeout_s": 1})
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := mcpCallRaw(t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "true"})
		if res.IsError {
			if msg := mcpText(res); !strings.Contains(msg, "expired") || !strings.Contains(msg, "ago") || !strings.Contains(msg, "sandbox_create") {
				t.Errorf("run_command in an expired sandbox: %q", msg)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sandbox did not expire")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// mcpTenancy: tenant B reaches none of tenant A's sandboxes through any tool
// or resource, and A's sandbox is untouched afterwards.
func mcpTenancy(t *testing.T, a, b *mcpsdk.ClientSession, apiA *client.Client) {
	id := mcpCreate(t, a, map[string]any{"timeout_s": 300})
	defer apiA.DeleteSandbox(ctx, id)
	mcpCall[any](t, a, "write_file", map[string]any{"sandbox_id": id, "path": "secret.txt", "content": "A's"})
	bg := mcpCall[mcpRun](t, a, "run_command", map[string]any{"sandbox_id": id, "command": "sleep 300", "background": true})
	before := must[client.Sandbox](t)(apiA.GetSandbox(ctx, id))

	listed := mcpCall[struct {
		Sandboxes []struct {
			SandboxID string `json:"sandbox_id"`
		} `json:"sandboxes"`
	}](t, b, "sandbox_list", map[string]any{"all": true})
	for _, s := range listed.Sandboxes {
		if s.SandboxID == id {
			t.Errorf("tenant B lists tenant A's sandbox %s", id)
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"sandbox_destroy", nil},
		{"sandbox_extend", map[string]any{"timeout_s": 86400}},
		{"run_command", map[string]any{"command": "touch /home/user/pwned"}},
		{"run_command", map[string]any{"command": "touch /home/user/pwned", "background": true}},
		{"shell", map[string]any{"command": "touch /home/user/pwned"}},
		{"write_file", map[string]any{"path": "secret.txt", "content": "B's"}},
		{"read_file", map[string]any{"path": "secret.txt"}},
		{"list_files", map[string]any{"path": "/home/user"}},
		{"delete_file", map[string]any{"path": "secret.txt"}},
		{"process_output", map[string]any{"pid": bg.Pid}},
		{"process_kill", map[string]any{"pid": bg.Pid}},
		{"network_log", nil},
		{"audit_log", nil},
	} {
		args := map[string]any{"sandbox_id": id}
		for k, v := range c.args {
			args[k] = v
		}
		msg := mcpToolError(t, b, c.tool, args)
		if !strings.Contains(msg, "not found") || strings.Contains(msg, "A's") {
			t.Errorf("tenant B %s on A's sandbox: %q, want not found", c.tool, msg)
		}
	}
	if _, err := b.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: "airlock://sandboxes/" + id + "/files/home/user/secret.txt"}); err == nil {
		t.Error("tenant B read A's file as a resource")
	}
	after := must[client.Sandbox](t)(apiA.GetSandbox(ctx, id))
	if after.State != client.StateRunning || !after.ExpiresAt.Equal(before.ExpiresAt) {
		t.Errorf("A's sandbox changed: %+v -> %+v", before, after)
	}
	// The background sh may not have started its sleep yet on a loaded
	// machine: give it a moment (a killed one never comes back).
	r := mcpCall[mcpRun](t, a, "run_command", map[string]any{"sandbox_id": id, "command": "cat secret.txt; ls /home/user; for i in $(seq 50); do pgrep -x sleep >/dev/null && echo sleeping && break; sleep 0.1; done"})
	if r.Stdout != "A'ssecret.txt\nsleeping\n" {
		t.Errorf("A's sandbox after B's attempts: %q", r.Stdout)
	}
}

// mcpCancel: cancelling a tool call ends the command inside the sandbox.
func mcpCancel(t *testing.T, cs *mcpsdk.ClientSession, api *client.Client) {
	id := mcpCreate(t, cs, map[string]any{"timeout_s": 300})
	defer api.DeleteSandbox(ctx, id)
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcpsdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"sandbox_id": id, "command": "sleep 300"}})
		errc <- err
	}()
	ps := func() string {
		return must[client.ExecResult](t)(api.Exec(ctx, id, client.ExecRequest{Cmd: []string{"ps", "-eo", "args"}})).Stdout
	}
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(ps(), "sleep 300"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sleep 300 never started: %s", ps())
		}
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	var out string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if out = ps(); !strings.Contains(out, "sleep 300") {
			return
		}
	}
	t.Errorf("sleep 300 still runs after the tool call was cancelled:\n%s", out)
}

func mcpProgress(t *testing.T, cs *mcpsdk.ClientSession, got func() []string) {
	id := mcpCreate(t, cs, map[string]any{"timeout_s": 300})
	p := &mcpsdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"sandbox_id": id,
		"command": "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.4; done"}}
	p.SetProgressToken("tok-1")
	res, err := cs.CallTool(ctx, p)
	if err != nil || res.IsError {
		t.Fatalf("run_command with a progress token: %v %v", err, res)
	}
	msgs := got()
	if len(msgs) < 3 || !strings.Contains(strings.Join(msgs, "\n"), "tick") {
		t.Errorf("progress notifications for 6 ticks over 2.4 s: %q", msgs)
	}
	mcpCall[any](t, cs, "sandbox_destroy", map[string]any{"sandbox_id": id})
}

func mcpResources(t *testing.T, cs *mcpsdk.ClientSession) {
	id := mcpCreate(t, cs, map[string]any{"timeout_s": 300})
	defer mcpCall[any](t, cs, "sandbox_destroy", map[string]any{"sandbox_id": id})
	mcpCall[any](t, cs, "write_file", map[string]any{"sandbox_id": id, "path": "r.txt", "content": "resource text"})
	mcpCall[any](t, cs, "write_file", map[string]any{"sandbox_id": id, "path": "r.bin", "content": base64.StdEncoding.EncodeToString([]byte{0, 9, 0xff}), "base64": true})
	rl, err := cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 1 || rl.Resources[0].URI != "airlock://sandboxes" {
		t.Fatalf("resources/list: %v %+v", err, rl)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 1 || !strings.HasPrefix(tl.ResourceTemplates[0].URITemplate, "airlock://sandboxes/{id}/files/") {
		t.Fatalf("resources/templates/list: %v %+v", err, tl)
	}
	all, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: "airlock://sandboxes"})
	if err != nil || len(all.Contents) != 1 || !strings.Contains(all.Contents[0].Text, id) {
		t.Fatalf("read airlock://sandboxes: %v %+v", err, all)
	}
	txt, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("airlock://sandboxes/%s/files/home/user/r.txt", id)})
	if err != nil || len(txt.Contents) != 1 || txt.Contents[0].Text != "resource text" {
		t.Fatalf("read a text file resource: %v %+v", err, txt)
	}
	blob, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("airlock://sandboxes/%s/files/home/user/r.bin", id)})
	if err != nil || len(blob.Contents) != 1 || string(blob.Contents[0].Blob) != "\x00\x09\xff" {
		t.Fatalf("read a binary file resource: %v %+v", err, blob)
	}
}
