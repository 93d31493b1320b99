package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/client/clienttest"
	"github.com/google/go-cmp/cmp"
)

func newClient(t *testing.T) (*client.Client, *clienttest.Server) {
	t.Helper()
	srv := clienttest.NewServer(t)
	return client.New(srv.URL+"/", srv.AdminKey), srv
}

func TestSandboxLifecycle(t *testing.T) {
	c, _ := newClient(t)
	ctx := context.Background()
	if err := c.Health(ctx); err != nil {
		t.Fatalf("Health: %v", err)
	}
	sb, err := c.CreateSandbox(ctx, client.CreateRequest{MemoryMB: 256, Timeout: 1500 * time.Millisecond,
		Metadata: map[string]string{"agent": "a"}})
	if err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	if sb.State != client.StateRunning || sb.Limits.MemoryMB != 256 || sb.Limits.CPUs != 1 {
		t.Errorf("created %+v; want running with 256 MiB and the default 1 CPU", sb)
	}
	// 1.5 s goes out as 2 s, not 1 s or 0 (which means the default).
	if got := sb.ExpiresAt.Sub(sb.CreatedAt); got != 2*time.Second {
		t.Errorf("expires %v after creation; want 2s", got)
	}
	other, err := c.CreateSandbox(ctx, client.CreateRequest{Metadata: map[string]string{"agent": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.GetSandbox(ctx, sb.ID)
	if err != nil {
		t.Fatalf("GetSandbox: %v", err)
	}
	if diff := cmp.Diff(sb, got); diff != "" {
		t.Errorf("GetSandbox differs from CreateSandbox (-create +get):\n%s", diff)
	}

	page, err := c.ListSandboxes(ctx, client.ListOptions{Metadata: map[string]string{"agent": "b"}})
	if err != nil || len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != other.ID {
		t.Errorf("list by metadata agent=b = %+v, %v; want only %s", page, err, other.ID)
	}
	first, err := c.ListSandboxes(ctx, client.ListOptions{Limit: 1})
	if err != nil || len(first.Sandboxes) != 1 || first.Next == "" {
		t.Fatalf("first page = %+v, %v; want one sandbox and a next", first, err)
	}
	second, err := c.ListSandboxes(ctx, client.ListOptions{Limit: 1, After: first.Next})
	if err != nil || len(second.Sandboxes) != 1 || second.Sandboxes[0].ID == first.Sandboxes[0].ID {
		t.Errorf("second page = %+v, %v; want the other sandbox", second, err)
	}

	sb2, err := c.SetTimeout(ctx, sb.ID, time.Hour)
	if err != nil || sb2.ExpiresAt.Sub(time.Now()) < 59*time.Minute {
		t.Errorf("SetTimeout(1h) = expires %v, %v", sb2.ExpiresAt, err)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
	if _, err := c.GetSandbox(ctx, sb.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetSandbox after delete: %v; want ErrNotFound", err)
	}
}

func TestExec(t *testing.T) {
	c, srv := newClient(t)
	srv.SetExec(func(argv []string, stdout, stderr io.Writer) (int, int) {
		io.WriteString(stdout, "out:"+strings.Join(argv, ","))
		io.WriteString(stderr, "err")
		return 3, 0
	})
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sb.ID, client.ExecRequest{Cmd: []string{"a", "b c"}, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if res.ExitCode != 3 || res.Stdout != "out:a,b c" || res.Stderr != "err" {
		t.Errorf("Exec = %+v", res)
	}

	var out, errb bytes.Buffer
	res, err = c.ExecStream(ctx, sb.ID, client.ExecRequest{Command: "echo hi"}, &out, &errb)
	if err != nil {
		t.Fatalf("ExecStream: %v", err)
	}
	if res.ExitCode != 3 || out.String() != "out:sh,-c,echo hi" || errb.String() != "err" || res.Stdout != "" {
		t.Errorf("ExecStream = %+v, stdout %q, stderr %q", res, out.String(), errb.String())
	}
	_, err = c.Exec(ctx, sb.ID, client.ExecRequest{})
	if !errors.Is(err, client.ErrInvalid) {
		t.Errorf("Exec without a command: %v; want ErrInvalid", err)
	}
}

// TestExecStreamIsIncremental: output reaches the writer while the command
// still runs, not when it ends.
func TestExecStreamIsIncremental(t *testing.T) {
	c, srv := newClient(t)
	got := make(chan []byte)
	srv.SetExec(func(_ []string, stdout, _ io.Writer) (int, int) {
		stdout.Write([]byte("first"))
		<-got // the client has it; only then does the command go on
		stdout.Write([]byte("second"))
		return 0, 0
	})
	ctx := context.Background()
	sb, _ := c.CreateSandbox(ctx, client.CreateRequest{})
	w := &signalWriter{first: got}
	if _, err := c.ExecStream(ctx, sb.ID, client.ExecRequest{Cmd: []string{"x"}}, w, nil); err != nil {
		t.Fatal(err)
	}
	if w.buf.String() != "firstsecond" {
		t.Errorf("stdout = %q", w.buf.String())
	}
}

// signalWriter closes first after its first write.
type signalWriter struct {
	buf   bytes.Buffer
	first chan []byte
}

func (w *signalWriter) Write(p []byte) (int, error) {
	if w.buf.Len() == 0 {
		defer close(w.first)
	}
	return w.buf.Write(p)
}

func TestFiles(t *testing.T) {
	c, _ := newClient(t)
	ctx := context.Background()
	sb, _ := c.CreateSandbox(ctx, client.CreateRequest{})
	data := []byte("hello\x00\xff world\n")
	n, err := c.WriteFile(ctx, sb.ID, "dir/a.txt", bytes.NewReader(data), 0o600)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("WriteFile = %d, %v", n, err)
	}
	if err := c.Mkdir(ctx, sb.ID, "/home/user/dir/sub", 0o700); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	if err := c.Move(ctx, sb.ID, "dir/a.txt", "dir/b.txt"); err != nil {
		t.Fatalf("Move: %v", err)
	}
	var got bytes.Buffer
	n, err = c.ReadFile(ctx, sb.ID, "/home/user/dir/b.txt", &got)
	if err != nil || n != int64(len(data)) || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("ReadFile = %d %q, %v; want %q", n, got.Bytes(), err, data)
	}
	entries, err := c.ListDir(ctx, sb.ID, "dir")
	if err != nil {
		t.Fatalf("ListDir: %v", err)
	}
	var short []string
	for _, e := range entries {
		short = append(short, e.Name+" "+e.Type+" "+e.Mode)
	}
	if diff := cmp.Diff([]string{"b.txt file 0600", "sub dir 0700"}, short); diff != "" {
		t.Errorf("ListDir (-want +got):\n%s", diff)
	}
	if err := c.Remove(ctx, sb.ID, "dir", false); !errors.Is(err, client.ErrConflict) {
		t.Errorf("Remove of a non-empty dir: %v; want ErrConflict", err)
	}
	if err := c.Remove(ctx, sb.ID, "dir", true); err != nil {
		t.Errorf("Remove recursive: %v", err)
	}
	if _, err := c.ReadFile(ctx, sb.ID, "dir/b.txt", io.Discard); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("ReadFile after Remove: %v; want ErrNotFound", err)
	}
}

func TestTokenReachesOneSandbox(t *testing.T) {
	c, srv := newClient(t)
	ctx := context.Background()
	a, _ := c.CreateSandbox(ctx, client.CreateRequest{})
	b, _ := c.CreateSandbox(ctx, client.CreateRequest{})
	tok, err := c.CreateToken(ctx, a.ID, time.Minute)
	if err != nil || !strings.HasPrefix(tok.Token, "alt_") {
		t.Fatalf("CreateToken = %+v, %v", tok, err)
	}
	tc := client.New(srv.URL, tok.Token)
	if _, err := tc.GetSandbox(ctx, a.ID); err != nil {
		t.Errorf("token on its sandbox: %v", err)
	}
	if _, err := tc.GetSandbox(ctx, b.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("token on another sandbox: %v; want ErrNotFound", err)
	}
}

func TestTenantsAndKeys(t *testing.T) {
	c, srv := newClient(t)
	ctx := context.Background()
	ten, err := c.CreateTenant(ctx, client.TenantRequest{Name: "acme", MaxSandboxes: 3, MaxMemoryMB: 4096})
	if err != nil || ten.Name != "acme" || ten.MaxMemoryMB != 4096 {
		t.Fatalf("CreateTenant = %+v, %v", ten, err)
	}
	if _, err := c.CreateTenant(ctx, client.TenantRequest{Name: "acme"}); !errors.Is(err, client.ErrConflict) {
		t.Errorf("second tenant acme: %v; want ErrConflict", err)
	}
	tenants, err := c.ListTenants(ctx)
	if err != nil || len(tenants) != 1 || tenants[0].ID != ten.ID {
		t.Errorf("ListTenants = %+v, %v", tenants, err)
	}
	k, err := c.CreateKey(ctx, "acme", "ci")
	if err != nil || !strings.HasPrefix(k.Key, "alk_") || k.Tenant != "acme" {
		t.Fatalf("CreateKey = %+v, %v", k, err)
	}
	user := client.New(srv.URL, k.Key)
	if _, err := user.ListTenants(ctx); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("tenant key on ListTenants: %v; want ErrForbidden", err)
	}
	keys, err := user.ListKeys(ctx)
	if err != nil || len(keys) != 1 || keys[0].ID != k.ID {
		t.Errorf("ListKeys as acme = %+v, %v; want only its key", keys, err)
	}
	if err := c.DeleteKey(ctx, k.ID); err != nil {
		t.Fatalf("DeleteKey: %v", err)
	}
	if _, err := user.ListKeys(ctx); !errors.Is(err, client.ErrUnauthenticated) {
		t.Errorf("deleted key: %v; want ErrUnauthenticated", err)
	}
}
