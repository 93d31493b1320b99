package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/runtime"
)

const nobody = 65534

// As root the agent must act as the sandbox user: files it creates belong to
// that user and it cannot read or write what that user cannot.
func TestActsAsSandboxUser(t *testing.T) {
	requiresRoot(t)
	root := t.TempDir()
	// The process runs on the host's tree: it must be able to reach home.
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(root, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "rootonly"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, Config{UID: nobody, GID: nobody, Root: root, Workdir: "/home"})
	ctx := context.Background()

	if _, err := c.WriteFile(ctx, "mine", strings.NewReader("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(home, "mine"), &st); err != nil || st.Uid != nobody || st.Gid != nobody {
		t.Errorf("written file owned by %d:%d (%v), want %d:%d", st.Uid, st.Gid, err, nobody, nobody)
	}
	if err := c.MkdirAll(ctx, "/home/d/e", 0); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(filepath.Join(home, "d/e"), &st); err != nil || st.Uid != nobody {
		t.Errorf("created dir owned by %d (%v), want %d", st.Uid, err, nobody)
	}

	denied := []struct {
		name string
		op   func() error
	}{
		{"read root-only file", func() error { _, err := readString(c, "/rootonly"); return err }},
		{"write in root-owned dir", func() error {
			_, err := c.WriteFile(ctx, "/new", strings.NewReader("x"), 0o644)
			return err
		}},
		{"replace root-owned file", func() error {
			_, err := c.WriteFile(ctx, "/rootonly", strings.NewReader("x"), 0o644)
			return err
		}},
		{"remove root-owned file", func() error { return c.Remove(ctx, "/rootonly", false) }},
		{"mkdir in root-owned dir", func() error { return c.MkdirAll(ctx, "/etcx", 0) }},
	}
	for _, tt := range denied {
		if err := tt.op(); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("%s: %v, want permission denied", tt.name, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "rootonly")); string(b) != "secret" {
		t.Errorf("root-only file changed: %q", b)
	}

	// The agent's own thread must be root again afterwards: a failed
	// restore would leak the user's identity into the next operation.
	var out strings.Builder
	st2, err := c.Exec(ctx, runtime.ExecRequest{Shell: "id -u; id -g; id -G", Cwd: home, Stdout: &out})
	if err != nil || st2.Code != 0 {
		t.Fatalf("exec: %+v, %v", st2, err)
	}
	if got, want := out.String(), "65534\n65534\n65534\n"; got != want {
		t.Errorf("process ids = %q, want %q", got, want)
	}
	if os.Getuid() != 0 {
		t.Errorf("test process uid changed to %d", os.Getuid())
	}
}
