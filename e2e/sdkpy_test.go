package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestSDKPython runs the Python SDK's own tests (sdk/python/tests, stdlib
// unittest) against a real server: every area of the API, through the
// blocking and the asyncio client. They run as a tenant's key, with the
// admin key for the admin routes, decoding strictly (a field the OpenAPI
// document lacks, or a required one the server left out, fails them), and
// may write only to the temp dir they are given. Webhooks may reach the
// loopback receiver a test starts. Afterwards the tenant must have no
// sandbox left: the SDK's `with al.sandbox()` deletes what it made.
func TestSDKPython(t *testing.T) {
	py := sdkPython(t, true)
	s := startServer(t, "", "--webhooks-allow-private")
	admin := s.admin()
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "sdkpy"}))
	key := must[client.NewKey](t)(admin.CreateKey(ctx, "sdkpy", "python")).Key

	tmp := t.TempDir()
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v")
	cmd.Dir = sdkDir(t)
	cmd.Env = append(sdkEnv(tmp),
		"AIRLOCK_URL="+s.url, "AIRLOCK_API_KEY="+key, "AIRLOCK_ADMIN_KEY="+s.adminKey,
		"AIRLOCK_SDK_LIVE=1", "AIRLOCK_STRICT_DECODE=1")
	if only := os.Getenv("AIRLOCK_SDKPY_TESTS"); only != "" {
		// A developer's shortcut: the unittest names to run instead.
		cmd.Args = append([]string{py, "-m", "unittest", "-v"}, strings.Fields(only)...)
	}
	out := runPython(t, cmd, 15*time.Minute)
	m := regexp.MustCompile(`(?m)^Ran (\d+) tests? in`).FindStringSubmatch(out)
	if m == nil || m[1] == "0" {
		t.Fatalf("the Python tests ran nothing:\n%s", out)
	}
	if strings.Contains(out, "skipped=") {
		t.Errorf("Python tests skipped against a live server (every one must run here)")
	}
	c := client.New(s.url, key)
	page := must[client.Page](t)(c.ListSandboxes(ctx, client.ListOptions{State: "running"}))
	for _, sb := range page.Sandboxes {
		if sb.Metadata["sdk-test"] == "keep" {
			continue
		}
		t.Errorf("sandbox %s (metadata %v) left running by the Python tests", sb.ID, sb.Metadata)
	}
}

// TestSDKPythonExecResume: a streamed exec of the Python SDK, blocking and
// asyncio, whose server is killed (kill -9) and started again while the
// command runs, re-attaches by its exec id and ends with the command's
// whole output once and its real exit code.
func TestSDKPythonExecResume(t *testing.T) {
	py := sdkPython(t, true)
	s := startServer(t, "")
	for _, side := range []string{"sync", "async"} {
		t.Run(side, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(py, "-m", "tests.resume_exec", side)
			cmd.Dir = sdkDir(t)
			cmd.Env = append(sdkEnv(tmp), "AIRLOCK_URL="+s.url, "AIRLOCK_API_KEY="+s.adminKey, "AIRLOCK_STRICT_DECODE=1")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			var got []string
			timeout := time.After(2 * time.Minute)
		read:
			for {
				select {
				case line, ok := <-lines:
					if !ok {
						break read
					}
					got = append(got, line)
					if line == "STARTED" {
						restartServer(t, s, "kill -9", 200*time.Millisecond)
					}
				case <-timeout:
					cmd.Process.Kill()
					t.Fatalf("resume_exec.py %s did not finish; printed %q; stderr:\n%s", side, got, stderr.String())
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("resume_exec.py %s: %v; printed %q; stderr:\n%s", side, err, got, stderr.String())
			}
			want := []string{"STARTED", `OUTPUT b'first\nsecond\nthird\n'`, "EXIT 0"}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("resume_exec.py %s printed %q, want %q; stderr:\n%s", side, got, want, stderr.String())
			}
		})
	}
}

// TestSDKPythonTypes: the SDK's generated files (airlock/_types.py from
// internal/api/openapi.json, airlock/_sync from airlock/_async) are what
// sdk/python/gen.py makes now, so a field added to the document and not
// to the SDK, or the other way round, fails here. Needs only python3.
func TestSDKPythonTypes(t *testing.T) {
	py := sdkPython(t, false)
	cmd := exec.Command(py, "gen.py", "--check")
	cmd.Dir = sdkDir(t)
	cmd.Env = sdkEnv(t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sdk/python is stale against the OpenAPI document (run python3 sdk/python/gen.py):\n%s", out)
	}
}

func sdkDir(t *testing.T) string {
	d, err := filepath.Abs(filepath.Join("..", "sdk", "python"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sdkPython is the Python of Debian (python3.11, whose python3-httpx and
// python3-wsproto .ci/run installs), with the SDK's dependencies when
// deps is set; it skips (fails in CI) without one.
func sdkPython(t *testing.T, deps bool) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		if py, err = exec.LookPath("python3"); err != nil {
			linuxtest.Lacking(t, "the Python SDK test", "python3 is not installed")
		}
	}
	if deps {
		if out, err := exec.Command(py, "-c", "import httpx, wsproto").CombinedOutput(); err != nil {
			linuxtest.Lacking(t, "the Python SDK test", "its dependencies are missing (apt-get install python3-httpx python3-wsproto): "+strings.TrimSpace(string(out)))
		}
	}
	return py
}

// sdkEnv is the environment of a Python run: no proxy (every connection
// is to the loopback server), and nothing written outside tmp, bytecode
// caches included.
func sdkEnv(tmp string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "TMPDIR", "HOME", "PYTHONPATH",
			"AIRLOCK_URL", "AIRLOCK_API_KEY", "AIRLOCK_ADMIN_KEY":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TMPDIR="+tmp, "HOME="+tmp, "PYTHONDONTWRITEBYTECODE=1", "PYTHONPYCACHEPREFIX="+filepath.Join(tmp, "pycache"))
}

// runPython runs cmd to its end (killing it past limit) and returns its
// output; a failed run fails the test with it.
func runPython(t *testing.T, cmd *exec.Cmd, limit time.Duration) string {
	t.Helper()
	var out []byte
	var err error
	done := make(chan struct{})
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not finish within %v:\n%s", strings.Join(cmd.Args, " "), limit, out)
	}
	t.Logf("%s:\n%s", strings.Join(cmd.Args, " "), out)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return string(out)
}
