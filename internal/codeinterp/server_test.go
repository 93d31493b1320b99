package codeinterp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/testenv"
)

// startServer runs server.py as the template's start command would, on a
// free loopback port, with its home and temporary files in the test's
// own directory, and returns its base URL.
func startServer(t *testing.T) string {
	t.Helper()
	if err := exec.Command(Python, "-c", "import jupyter_client, ipykernel, matplotlib, pandas, numpy").Run(); err != nil {
		testenv.Lacking(t, "the code interpreter needs "+Python+" with "+Packages)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "server.py")
	if err := os.WriteFile(src, Server(), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o755)
	cmd := exec.Command(Python, src, "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--workdir", home)
	// Nothing of it is written outside the test's directory.
	cmd.Env = append(os.Environ(), "HOME="+home, "TMPDIR="+dir, "PYTHONDONTWRITEBYTECODE=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its kernels end with it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if t.Failed() {
			t.Logf("server.py wrote:\n%s", out.String())
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if res, err := http.Get(base + "/health"); err == nil {
			res.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("server.py did not listen:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// execute runs code and returns the NDJSON lines it answered with.
func execute(t *testing.T, base string, body map[string]any) []map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(base+"/execute", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		t.Fatalf("execute %v: %d %s", body, res.StatusCode, msg)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		delete(m, "timestamp")
		lines = append(lines, m)
	}
	return lines
}

// TestServer drives server.py's routes as the SDKs call them (run on the
// host here: in a sandbox it is the same program).
func TestServer(t *testing.T) {
	base := startServer(t)

	got := execute(t, base, map[string]any{"code": "x = 41\nprint('hi')\nx + 1"})
	want := []map[string]any{
		{"type": "number_of_executions", "execution_count": 1.0},
		{"type": "stdout", "text": "hi\n"},
		{"type": "result", "is_main_result": true, "text": "42"},
		{"type": "end_of_execution"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first execution (-want +got):\n%s", diff)
	}
	got = execute(t, base, map[string]any{"code": "import os\nos.environ.get('K'), x", "env_vars": map[string]string{"K": "v"}})
	if got[1]["text"] != "('v', 41)" {
		t.Errorf("state and env: %v", got)
	}
	got = execute(t, base, map[string]any{"code": "print(os.environ.get('K'))\nraise KeyError('k')"})
	if got[1]["text"] != "None\n" || got[2]["type"] != "error" || got[2]["name"] != "KeyError" || got[2]["value"] != "'k'" ||
		!strings.Contains(got[2]["traceback"].(string), "raise KeyError('k')") {
		t.Errorf("env after the call, and an error: %v", got)
	}

	// A call's env is unset after it even when its code failed, and the
	// call right after an error runs (the kernel aborts nothing).
	execute(t, base, map[string]any{"code": "raise ValueError('v')", "env_vars": map[string]string{"K2": "w"}})
	if got := execute(t, base, map[string]any{"code": "print(os.environ.get('K2'))"}); len(got) < 2 || got[1]["text"] != "None\n" {
		t.Errorf("env after a failed call: %v", got)
	}

	// A kernel that dies says so, and the next call gets a new one.
	got = execute(t, base, map[string]any{"code": "import os\nos._exit(1)"})
	if types := fmt.Sprint(got); !strings.Contains(types, "unexpected_end_of_execution") || !strings.Contains(types, "KernelDied") {
		t.Errorf("a kernel that died: %v", got)
	}
	if got := execute(t, base, map[string]any{"code": "1 + 1"}); len(got) < 2 || got[1]["text"] != "2" {
		t.Errorf("after the kernel died: %v", got)
	}

	// A context of its own, in its own directory.
	res, err := http.Post(base+"/contexts", "application/json", strings.NewReader(`{"language":"python","cwd":"/tmp"}`))
	if err != nil {
		t.Fatal(err)
	}
	var ctx map[string]string
	json.NewDecoder(res.Body).Decode(&ctx)
	res.Body.Close()
	if ctx["id"] == "" || ctx["cwd"] != "/tmp" || ctx["language"] != "python" {
		t.Fatalf("context: %v", ctx)
	}
	if got := execute(t, base, map[string]any{"code": "import os\nos.getcwd()", "context_id": ctx["id"]}); got[1]["text"] != "'/tmp'" {
		t.Errorf("in the context: %v", got)
	}
	del, _ := http.NewRequest(http.MethodDelete, base+"/contexts/"+ctx["id"], nil)
	if res, err := http.DefaultClient.Do(del); err != nil || res.StatusCode != http.StatusNoContent {
		t.Errorf("delete context: %v %v", res, err)
	}

	// What is refused, and how: the SDKs show a 404's body.
	for _, tc := range []struct{ path, body, want string }{
		{"/execute", `{"code":"1","language":"javascript"}`, `language "javascript" is not available in this sandbox: no Jupyter kernel for it is installed (available: python)`},
		{"/contexts", `{"language":"bash"}`, `language "bash" is not available in this sandbox`},
		{"/execute", `{"code":"1","context_id":"nope"}`, "context nope not found"},
	} {
		res, err := http.Post(base+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || !strings.Contains(string(msg), tc.want) {
			t.Errorf("POST %s %s: %d %q, want 404 with %q", tc.path, tc.body, res.StatusCode, msg, tc.want)
		}
	}
}

// TestServerInterrupt: a client that goes away (the SDK's timeoutMs)
// interrupts what it ran, and the context goes on with its state.
func TestServerInterrupt(t *testing.T) {
	base := startServer(t)
	execute(t, base, map[string]any{"code": "y = 1"})
	c := &http.Client{Timeout: time.Second}
	res, err := c.Post(base+"/execute", "application/json", strings.NewReader(`{"code":"import time\nwhile True:\n    time.sleep(0.05)"}`))
	if err == nil {
		io.Copy(io.Discard, res.Body) // times out
		res.Body.Close()
	}
	done := make(chan []map[string]any, 1)
	go func() { done <- execute(t, base, map[string]any{"code": "y + 1"}) }()
	select {
	case got := <-done:
		if len(got) < 2 || got[1]["text"] != "2" {
			t.Errorf("after the interrupt: %v", got)
		}
	case <-time.After(time.Minute):
		t.Fatal("the loop was not interrupted: the next execution still waits")
	}
}

// TestBuild: the recipe copies the service in and starts it on the SDKs'
// port.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	b, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "server.py")); !bytes.Equal(got, Server()) {
		t.Error("server.py not written")
	}
	if b.Name != Template || b.Start == nil || b.Start.ReadyPort != Port || !strings.Contains(b.Start.Command, Dir+"/server.py") {
		t.Errorf("recipe: %+v, start %+v", b, b.Start)
	}
}
