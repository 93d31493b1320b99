package sandbox_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
)

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func TestFiles(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{})
	ctx := context.Background()

	if err := svc.Mkdir(ctx, c, sb.ID, "notes/deep", 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := svc.WriteFile(ctx, c, sb.ID, "notes/a.txt", stringsReader("hello"), 0o640)
	if err != nil || n != 5 {
		t.Fatalf("write: %d, %v", n, err)
	}
	if res := run(t, svc, c, sb.ID, "cat /home/user/notes/a.txt; stat -c %a /home/user/notes/a.txt"); res.Stdout != "hello640\n" {
		t.Errorf("the process sees %q", res.Stdout)
	}
	fi, err := svc.Stat(ctx, c, sb.ID, "/home/user/notes/./a.txt")
	if err != nil || fi.Size != 5 || fi.IsDir {
		t.Errorf("stat: %+v, %v", fi, err)
	}
	l, err := svc.ListDir(ctx, c, sb.ID, "notes")
	if err != nil || len(l) != 2 {
		t.Errorf("list notes: %+v, %v", l, err)
	}
	if err := svc.Move(ctx, c, sb.ID, "notes/a.txt", "notes/deep/b.txt"); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := svc.ReadFile(ctx, c, sb.ID, "notes/deep/b.txt", &buf); err != nil || buf.String() != "hello" {
		t.Errorf("read moved file: %q, %v", buf.String(), err)
	}
	_, err = svc.ReadFile(ctx, c, sb.ID, "notes/a.txt", io.Discard)
	wantKind(t, "read the moved-away file", err, sandbox.ErrNotFound)
	if err == nil || !strings.Contains(err.Error(), "no such file: /home/user/notes/a.txt") {
		t.Errorf("not-found message: %v", err)
	}
	wantKind(t, "remove a non-empty dir", svc.Remove(ctx, c, sb.ID, "notes", false), sandbox.ErrConflict)
	if err := svc.Remove(ctx, c, sb.ID, "notes", true); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Stat(ctx, c, sb.ID, "notes")
	wantKind(t, "stat removed dir", err, sandbox.ErrNotFound)
	_, err = svc.WriteFile(ctx, c, sb.ID, "/etc/passwd", stringsReader("x"), 0o644)
	wantKind(t, "write /etc/passwd as the sandbox user", err, sandbox.ErrInvalid)
	for _, bad := range []string{"", "a\x00b"} {
		_, err = svc.ReadFile(ctx, c, sb.ID, bad, io.Discard)
		wantKind(t, "read path "+bad, err, sandbox.ErrInvalid)
	}
}

// TestFilePathTraversal: ../ climbs only to the sandbox's root: reading
// ../../etc/passwd gives the sandbox's passwd (with its user 1000), never
// the host's.
func TestFilePathTraversal(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{})
	host, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../../etc/passwd", "../../../../../../etc/passwd", "/../../etc/passwd"} {
		var buf bytes.Buffer
		if _, err := svc.ReadFile(context.Background(), c, sb.ID, p, &buf); err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		if !strings.Contains(buf.String(), "user:x:1000") || bytes.Equal(buf.Bytes(), host) {
			t.Errorf("%s read a passwd that is not the sandbox's:\n%s", p, buf.String())
		}
	}
	if _, err := svc.WriteFile(context.Background(), c, sb.ID, "../../tmp/escape", stringsReader("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/tmp/escape"); err == nil {
		t.Error("a write to ../../tmp/escape landed on the host")
	}
	if res := run(t, svc, c, sb.ID, "cat /tmp/escape"); res.Stdout != "x" {
		t.Errorf("the sandbox's /tmp/escape holds %q", res.Stdout)
	}
}
