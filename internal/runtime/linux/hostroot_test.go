package linux_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestHostRoot: a node in a container sees the host's / at --host-root
// (the Helm chart mounts it at /host) and builds the base template from
// there: the sandbox's /usr is that root's /usr and its /etc entries
// are that root's, not the container's.
func TestHostRoot(t *testing.T) {
	linuxtest.Require(t)
	// The sandbox init, root only in its user namespace, must reach it.
	root := t.TempDir()
	os.Chmod(filepath.Dir(root), 0o755)
	os.Chmod(root, 0o755)
	if err := os.Mkdir(filepath.Join(root, "usr"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("/usr", filepath.Join(root, "usr"), "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(filepath.Join(root, "usr"), unix.MNT_DETACH) })
	for _, d := range []string{"bin", "lib", "lib64", "sbin"} {
		if target, err := os.Readlink("/" + d); err == nil {
			os.Symlink(target, filepath.Join(root, d))
		} else if err := os.Symlink("usr/"+d, filepath.Join(root, d)); err != nil {
			t.Fatal(err)
		}
	}
	const marker = "PRETTY_NAME=\"host root of TestHostRoot\"\n"
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "os-release"), []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	state, err := os.MkdirTemp("", "airlock-hostroot-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(state, 0o711)
	r, err := linux.New(linux.Config{StateDir: state, Binary: linuxtest.Init(t), DiskPoolBytes: 1 << 30, HostRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Teardown(); err != nil {
			t.Errorf("teardown: %v", err)
		}
		os.RemoveAll(state)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := r.Create(ctx, runtime.Spec{ID: fmt.Sprintf("hr%d", os.Getpid())})
	if err != nil {
		t.Fatalf("create on a host root: %v", err)
	}
	defer sb.Destroy(context.Background())
	got := execIn(t, sb, runtime.ExecRequest{Shell: "cat /etc/os-release; test -x /bin/sh && echo sh-ok; touch /usr/x 2>/dev/null || echo usr-ro"})
	if got.st.Code != 0 || !strings.Contains(got.stdout, "host root of TestHostRoot") || !strings.Contains(got.stdout, "sh-ok") || !strings.Contains(got.stdout, "usr-ro") {
		t.Errorf("sandbox on --host-root: %+v", got)
	}
}
