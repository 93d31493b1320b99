package e2e

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

func TestLifecycle(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Metadata: map[string]string{"run": "e2e"}, Env: map[string]string{"GREETING": "hi"}}))
	if sb.State != client.StateRunning || sb.Limits.MemoryMB != 512 {
		t.Fatalf("created: %+v", sb)
	}
	res := must[client.ExecResult](t)(c.Exec(ctx, sb.ID, client.ExecRequest{Command: "echo $GREETING; echo oops >&2; exit 3"}))
	if res.ExitCode != 3 || res.Stdout != "hi\n" || res.Stderr != "oops\n" {
		t.Errorf("exec: %+v", res)
	}
	var out, errb bytes.Buffer
	res = must[client.ExecResult](t)(c.ExecStream(ctx, sb.ID, client.ExecRequest{Cmd: []string{"sh", "-c", "echo streamed; echo e >&2"}}, &out, &errb))
	if res.ExitCode != 0 || out.String() != "streamed\n" || errb.String() != "e\n" {
		t.Errorf("stream: %+v %q %q", res, out.String(), errb.String())
	}

	payload := bytes.Repeat([]byte("airlock\x00"), 1<<17)
	if n := must[int64](t)(c.WriteFile(ctx, sb.ID, "dir/in.bin", bytes.NewReader(payload), 0o640)); n != int64(len(payload)) {
		t.Errorf("wrote %d", n)
	}
	if err := c.Mkdir(ctx, sb.ID, "other", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Move(ctx, sb.ID, "dir/in.bin", "/home/user/other/moved.bin"); err != nil {
		t.Fatal(err)
	}
	var back bytes.Buffer
	must[int64](t)(c.ReadFile(ctx, sb.ID, "other/moved.bin", &back))
	if !bytes.Equal(back.Bytes(), payload) {
		t.Errorf("read back %d bytes, differ", back.Len())
	}
	entries := must[[]client.FileEntry](t)(c.ListDir(ctx, sb.ID, "other"))
	if len(entries) != 1 || entries[0].Name != "moved.bin" || entries[0].Size != int64(len(payload)) || entries[0].Type != "file" {
		t.Errorf("list: %+v", entries)
	}
	if err := c.Remove(ctx, sb.ID, "other", true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadFile(ctx, sb.ID, "other/moved.bin", &back); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("read after remove: %v", err)
	}
	page := must[client.Page](t)(c.ListSandboxes(ctx, client.ListOptions{Metadata: map[string]string{"run": "e2e"}}))
	if len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != sb.ID {
		t.Errorf("list by metadata: %+v", page)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if got := must[client.Sandbox](t)(c.GetSandbox(ctx, sb.ID)); got.State != client.StateStopped {
		t.Errorf("after delete: %+v", got)
	}
	if _, err := c.Exec(ctx, sb.ID, client.ExecRequest{Command: "true"}); err == nil {
		t.Errorf("exec in a deleted sandbox succeeded")
	}
	assertNoSandboxesLeft(t, s, sb.ID)
}

func TestExpiry(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Timeout: 30 * time.Second}))
	// Shorten it: the daemon must destroy it on time (±2 s).
	sb = must[client.Sandbox](t)(c.SetTimeout(ctx, sb.ID, 2*time.Second))
	deadline := sb.ExpiresAt.Add(2 * time.Second)
	for {
		got := must[client.Sandbox](t)(c.GetSandbox(ctx, sb.ID))
		if got.State == client.StateStopped {
			if time.Now().Before(sb.ExpiresAt.Add(-2 * time.Second)) {
				t.Errorf("destroyed before its time")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %s 2 s after it expired", got.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
	assertNoSandboxesLeft(t, s, sb.ID)
}

// assertNoSandboxesLeft checks the runtime's side: no registered id, no
// sandbox directory other than the warm pool's, and no cgroup or process of
// the given sandboxes.
func assertNoSandboxesLeft(t *testing.T, s *server, sandboxIDs ...string) {
	t.Helper()
	// A cgroup cannot be removed while a process is in it: no cgroup, no
	// process (the init included).
	for _, id := range sandboxIDs {
		if cgs, _ := filepath.Glob("/sys/fs/cgroup/*/airlock/" + id); len(cgs) > 0 {
			t.Errorf("cgroups of %s left: %v", id, cgs)
		}
	}
	ids, _ := os.ReadDir(filepath.Join(s.dataDir, "ids"))
	for _, e := range ids {
		t.Errorf("runtime still holds sandbox %s", e.Name())
	}
	dirs, _ := os.ReadDir(filepath.Join(s.dataDir, "sandboxes"))
	for _, e := range dirs {
		if !strings.HasPrefix(e.Name(), "pool-") && !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("sandbox directory left: %s", e.Name())
		}
	}
}

// procsWithEnv lists host pids whose environment holds kv.
func procsWithEnv(kv string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/environ")
		if err == nil && bytes.Contains(append([]byte{0}, b...), []byte("\x00"+kv+"\x00")) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}
