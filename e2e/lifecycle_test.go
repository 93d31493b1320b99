package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
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
		// Groups are named after the uid range, then the sandbox.
		if cgs, _ := filepath.Glob("/sys/fs/cgroup/*/airlock/*-" + id); len(cgs) > 0 {
			t.Errorf("cgroups of %s left: %v", id, cgs)
		}
	}
	ids, _ := os.ReadDir(filepath.Join(s.dataDir, "ids"))
	for _, e := range ids {
		t.Errorf("runtime still holds sandbox %s", e.Name())
	}
	// No mount of a sandbox of this data dir is left on the host (the
	// disk pool itself stays mounted while the server runs, and so do the
	// warm pool's sandboxes), and no uid range is still claimed for one.
	sandboxes := filepath.Join(s.dataDir, "sandboxes") + "/"
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(mi), "\n") {
			if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], sandboxes) && !strings.HasPrefix(f[4], sandboxes+"pool-") {
				t.Errorf("mount left: %s", f[4])
			}
		}
	}
	slots, _ := filepath.Glob("/run/airlock/slots/*")
	for _, p := range slots {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), `"dir":"`+sandboxes) && !strings.Contains(string(b), `"dir":"`+sandboxes+"pool-") {
			t.Errorf("uid range %s still claimed: %s", filepath.Base(p), b)
		}
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

// TestLifecycleHTTP is TestLifecycle with nothing but net/http, as a client
// in another language would speak to the API: every route of a sandbox's
// life, JSON and SSE exec, files up, down, listed, moved and deleted.
func TestLifecycleHTTP(t *testing.T) {
	s := startServer(t, "")
	do := func(method, path, ctype, accept, body string, want int) (http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.adminKey)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
		}
		return resp.Header, b
	}
	jsonDo := func(method, path, body string, want int, out any) http.Header {
		t.Helper()
		h, b := do(method, path, "application/json", "", body, want)
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s %s: %v in %s", method, path, err, b)
			}
		}
		return h
	}
	type sandboxJSON struct {
		ID, State, Template  string
		CreatedAt, ExpiresAt time.Time `json:"-"`
		Expires              string    `json:"expires_at"`
		Limits               struct {
			CPUs     float64 `json:"cpus"`
			MemoryMB int64   `json:"memory_mb"`
			Pids     int64   `json:"pids"`
			DiskMB   int64   `json:"disk_mb"`
		}
		Metadata map[string]string
	}

	var sb sandboxJSON
	h := jsonDo("POST", "/v1/sandboxes", `{"metadata":{"run":"http"},"env":{"GREETING":"hi"},"timeout_s":120}`, 201, &sb)
	if sb.State != "running" || sb.Template != "base" || sb.Limits.CPUs != 1 || sb.Limits.MemoryMB != 512 ||
		sb.Limits.Pids != 256 || sb.Limits.DiskMB != 1024 || sb.Metadata["run"] != "http" {
		t.Fatalf("created: %+v", sb)
	}
	if h.Get("Location") != "/v1/sandboxes/"+sb.ID {
		t.Errorf("Location %q", h.Get("Location"))
	}
	base := "/v1/sandboxes/" + sb.ID
	var got sandboxJSON
	jsonDo("GET", base, "", 200, &got)
	if got.ID != sb.ID || got.State != "running" {
		t.Errorf("get: %+v", got)
	}
	var page struct {
		Sandboxes []sandboxJSON
		Next      string
	}
	jsonDo("GET", "/v1/sandboxes?metadata.run=http&state=running", "", 200, &page)
	if len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != sb.ID || page.Next != "" {
		t.Errorf("list: %+v", page)
	}

	var res struct {
		ExitCode       int `json:"exit_code"`
		Stdout, Stderr string
		TimedOut       bool `json:"timed_out"`
		Truncated      bool
	}
	jsonDo("POST", base+"/exec", `{"command":"echo $GREETING; cat; echo e >&2; exit 3","stdin":"in"}`, 200, &res)
	if res.ExitCode != 3 || res.Stdout != "hi\nin" || res.Stderr != "e\n" || res.TimedOut || res.Truncated {
		t.Errorf("exec: %+v", res)
	}
	h, body := do("POST", base+"/exec", "application/json", "text/event-stream", `{"cmd":["sh","-c","echo a; echo b >&2; exit 4"]}`, 200)
	if h.Get("Content-Type") != "text/event-stream" {
		t.Errorf("stream Content-Type %q", h.Get("Content-Type"))
	}
	var names []string
	var stdout, stderr []byte
	exit := -1
	for _, block := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
		name, data, ok := strings.Cut(block, "\ndata: ")
		name, ok2 := strings.CutPrefix(name, "event: ")
		if !ok || !ok2 {
			t.Fatalf("malformed event %q", block)
		}
		names = append(names, name)
		var ev struct {
			Data     []byte `json:"data"`
			ExitCode int    `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %s: %v", name, err)
		}
		switch name {
		case "stdout":
			stdout = append(stdout, ev.Data...)
		case "stderr":
			stderr = append(stderr, ev.Data...)
		case "exit":
			exit = ev.ExitCode
		}
	}
	if names[0] != "start" || names[len(names)-1] != "exit" || string(stdout) != "a\n" || string(stderr) != "b\n" || exit != 4 {
		t.Errorf("stream: events %v, stdout %q, stderr %q, exit %d", names, stdout, stderr, exit)
	}

	payload := strings.Repeat("airlock\x00", 1<<15)
	var put struct {
		Path string
		Size int64
	}
	_, b := do("PUT", base+"/files?path=dir/a.bin&mode=0600", "application/octet-stream", "", payload, 200)
	if err := json.Unmarshal(b, &put); err != nil || put.Path != "dir/a.bin" || put.Size != int64(len(payload)) {
		t.Errorf("put: %s (%v)", b, err)
	}
	h, b = do("GET", base+"/files?path=/home/user/dir/a.bin", "", "", "", 200)
	if string(b) != payload || h.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("get: %d bytes as %q", len(b), h.Get("Content-Type"))
	}
	var list struct {
		Entries []struct{ Name, Path, Type, Mode string }
	}
	jsonDo("GET", base+"/files?path=dir&list=1", "", 200, &list)
	if len(list.Entries) != 1 || list.Entries[0].Name != "a.bin" || list.Entries[0].Type != "file" || list.Entries[0].Mode != "0600" {
		t.Errorf("list: %+v", list)
	}
	jsonDo("POST", base+"/files/mkdir", `{"path":"other"}`, 204, nil)
	jsonDo("POST", base+"/files/move", `{"from":"dir/a.bin","to":"other/b.bin"}`, 204, nil)
	if _, b := do("GET", base+"/files?path=other/b.bin", "", "", "", 200); string(b) != payload {
		t.Errorf("moved file differs")
	}
	do("GET", base+"/files?path=dir/a.bin", "", "", "", 404)
	do("DELETE", base+"/files?path=other&recursive=1", "", "", "", 204)
	do("GET", base+"/files?path=other/b.bin", "", "", "", 404)

	before := time.Now()
	jsonDo("POST", base+"/timeout", `{"timeout_s":60}`, 200, &got)
	exp, err := time.Parse(time.RFC3339Nano, got.Expires)
	if err != nil || exp.Before(before.Add(59*time.Second)) || exp.After(time.Now().Add(61*time.Second)) {
		t.Errorf("timeout: expires_at %q (%v)", got.Expires, err)
	}

	do("DELETE", base, "", "", "", 204)
	jsonDo("GET", base, "", 200, &got)
	if got.State != "stopped" {
		t.Errorf("after delete: %+v", got)
	}
	jsonDo("POST", base+"/exec", `{"cmd":["true"]}`, 409, nil)
	do("DELETE", base, "", "", "", 204) // again: not an error
	assertNoSandboxesLeft(t, s, sb.ID)
}
