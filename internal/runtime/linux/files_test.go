package linux_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/runtime"
)

// TestFileOpsStayInside plants symlinks that point out of the workspace and
// at secrets, and uses the file API through them.
func TestFileOpsStayInside(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	ctx := context.Background()
	mustSh(t, sb, "ln -s /etc/shadow /home/user/shadow && ln -s ../../.. /home/user/up && ln -s /usr/bin /home/user/bin && ln -s /proc/1/root /home/user/initroot")

	var buf bytes.Buffer
	if _, err := sb.ReadFile(ctx, "/home/user/shadow", &buf); err == nil {
		t.Errorf("read through a symlink to /etc/shadow succeeded: %q", buf.String())
	}
	if _, err := sb.ReadFile(ctx, "/home/user/initroot/etc/passwd", io.Discard); err == nil {
		t.Errorf("read through /proc/1/root succeeded")
	}
	// ../../.. from /home/user is /, and / of the sandbox: never the host's.
	buf.Reset()
	if _, err := sb.ReadFile(ctx, "/home/user/up/etc/passwd", &buf); err == nil && strings.Contains(buf.String(), "root:x:0:0:root:/root") && !strings.Contains(buf.String(), "user:x:1000") {
		t.Errorf("read through ../../.. reached a passwd that is not the sandbox's")
	}
	// Writes through a symlink to a read-only place fail.
	if _, err := sb.WriteFile(ctx, "/home/user/bin/evil", strings.NewReader("x"), 0o755); err == nil {
		t.Errorf("write through a symlink into /usr/bin succeeded")
	}
	// Writing to a path that is a symlink replaces the link, not its target.
	if _, err := sb.WriteFile(ctx, "/home/user/shadow", strings.NewReader("mine"), 0o600); err != nil {
		t.Fatalf("write over a symlink: %v", err)
	}
	if out := mustSh(t, sb, "test -L /home/user/shadow || cat /home/user/shadow"); out != "mine" {
		t.Errorf("after writing over the symlink: %q", out)
	}
	// Files written by the API belong to the sandbox user.
	if out := mustSh(t, sb, "stat -c '%u %a' /home/user/shadow"); out != "1000 600\n" {
		t.Errorf("owner and mode: %q", out)
	}
	if _, err := sb.WriteFile(ctx, "/etc/passwd", strings.NewReader("x"), 0o644); err == nil {
		t.Errorf("file API wrote /etc/passwd")
	}
	if _, err := sb.ReadFile(ctx, "/home/user/missing", io.Discard); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want not exist", err)
	}
	if err := sb.MkdirAll(ctx, "a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sb.Rename(ctx, "a/b/c", "/home/user/c2"); err != nil {
		t.Fatal(err)
	}
	list, err := sb.ListDir(ctx, "/home/user")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, fi := range list {
		names[fi.Name] = true
	}
	if !names["c2"] || !names["a"] || !names["up"] {
		t.Errorf("listing: %v", names)
	}
	if err := sb.Remove(ctx, "/home/user/a", true); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Stat(ctx, "/home/user/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat after remove: %v", err)
	}
}

// pattern is a reader of n deterministic bytes that holds no buffer.
type pattern struct{ n, off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	for i := range b {
		b[i] = byte((p.off + int64(i)) * 7 >> 3)
	}
	p.off += int64(len(b))
	return len(b), nil
}

// TestLargeFileStreams writes and reads back 1 GiB through the file API in a
// sandbox whose memory limit is 128 MiB: an agent that buffered the file
// would be OOM-killed, and the host side must not buffer it either.
func TestLargeFileStreams(t *testing.T) {
	const size = 1 << 30
	sb := newSandbox(t, runtime.Limits{MemoryMB: 128, TmpMB: 16, DiskMB: 1200})
	ctx := context.Background()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	want := sha256.New()
	n, err := sb.WriteFile(ctx, "big", io.TeeReader(&pattern{n: size}, want), 0o644)
	if err != nil || n != size {
		t.Fatalf("write 1 GiB: n=%d err=%v", n, err)
	}
	got := sha256.New()
	n, err = sb.ReadFile(ctx, "big", got)
	if err != nil || n != size {
		t.Fatalf("read 1 GiB back: n=%d err=%v", n, err)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Errorf("content differs after the round trip")
	}
	st, err := sb.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.OOMKills != 0 {
		t.Errorf("the agent hit its memory limit %d times", st.OOMKills)
	}
}
