package e2e

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// The TypeScript SDK (sdk/typescript, @airlockhq/sdk) is tested here with
// its own node:test suite against a real `airlock serve`. Its dev
// dependencies (typescript, @types/node, ws) are pinned by its
// package-lock.json and installed by .ci/run with npm ci. Everything the
// tests build (dist/, the compiled tests) goes to a copy of the package in
// the test's temp dir, never into the clone.

const tsSDKTest = "the TypeScript SDK test"

// tsPackage finds node (20 or later) and sdk/typescript with its
// dependencies installed, or skips (fails in CI).
func tsPackage(t *testing.T) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "sdk", "typescript"))
	if err != nil {
		t.Fatal(err)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		linuxtest.Lacking(t, tsSDKTest, "node is not installed")
	}
	if v, err := exec.Command(node, "-p", "process.versions.node").Output(); err != nil || !nodeAtLeast(strings.TrimSpace(string(v)), 20) {
		linuxtest.Lacking(t, tsSDKTest, fmt.Sprintf("the SDK needs node >= 20, found %q (%v)", strings.TrimSpace(string(v)), err))
	}
	for _, pkg := range []string{"typescript", "@types/node", "ws"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
			linuxtest.Lacking(t, tsSDKTest, "sdk/typescript/node_modules lacks "+pkg+" (run npm ci in sdk/typescript)")
		}
	}
	return node, dir
}

// tsBuild copies the package (without node_modules, dist or build) into
// a temp dir, links its node_modules, and there type-checks the sources
// and tests (tsc --noEmit), builds dist/ and compiles the tests, as
// `npm run typecheck`, `npm run build` and `npm test` would. It returns
// the copy's directory.
func tsBuild(t *testing.T, node, dir string) string {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "sdk")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch rel {
		case "node_modules", "dist", "build":
			return filepath.SkipDir
		}
		dst := filepath.Join(tmp, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(tmp, "node_modules")); err != nil {
		t.Fatal(err)
	}
	tsc := filepath.Join(tmp, "node_modules", "typescript", "bin", "tsc")
	for _, cfg := range []string{"tsconfig.json", "tsconfig.build.json", "tsconfig.test.json"} {
		cmd := exec.Command(node, tsc, "-p", cfg)
		cmd.Dir = tmp
		cmd.Env = tsEnv(t, nil)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tsc -p %s: %v\n%s", cfg, err, out)
		}
	}
	return tmp
}

// tsEnv is the environment of the SDK's node processes: temp files in
// the test's temp dir, no proxy (loopback only), and extra.
func tsEnv(t *testing.T, extra []string) []string {
	openapi, err := filepath.Abs(filepath.Join("..", "internal", "api", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "TMPDIR="+t.TempDir(), "AIRLOCK_OPENAPI="+openapi,
		"HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=", "NO_COLOR=1")
	return append(env, extra...)
}

// TestSDKTypeScriptTypes: the SDK's generated types (src/types.gen.ts)
// are what its generator makes of internal/api/openapi.json; run
// `npm run gen` in sdk/typescript after changing the document. This needs
// node only, no server.
func TestSDKTypeScriptTypes(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		linuxtest.Lacking(t, tsSDKTest, "node is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("..", "sdk", "typescript"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "scripts/gen-types.mjs", "--check")
	cmd.Dir = dir
	cmd.Env = tsEnv(t, nil)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sdk/typescript/src/types.gen.ts differs from internal/api/openapi.json (run npm run gen in sdk/typescript): %v\n%s", err, out)
	}
}

// TestSDKTypeScript runs every test of sdk/typescript/test with node:test
// against a real server and its admin key: sandboxes, typed errors, exec
// (one-shot, streamed, background, re-attached), files, sessions and
// terminals, processes, network, secrets, templates, tasks, approvals,
// audit, metering, events, the README's quick start, the route coverage
// map and the generated types' drift check. Then no sandbox of the suite
// is left running.
func TestSDKTypeScript(t *testing.T) {
	node, dir := tsPackage(t)
	s := startServer(t, "")
	pkg := tsBuild(t, node, dir)
	tests, err := filepath.Glob(filepath.Join(pkg, "build", "test", "*.test.js"))
	if err != nil || len(tests) < 10 {
		t.Fatalf("compiled tests: %v (%v)", tests, err)
	}
	args := []string{"--test", "--test-reporter=spec", "--test-reporter-destination=stdout"}
	// Node 20 has a global WebSocket (the browsers' API, which terminals
	// also run on) behind this flag; later ones have it anyway.
	if exec.Command(node, "--experimental-websocket", "-e", "if (typeof WebSocket !== 'function') process.exit(1)").Run() == nil {
		args = append(args, "--experimental-websocket")
	}
	cmd := exec.Command(node, append(args, tests...)...)
	cmd.Dir = pkg
	cmd.Env = tsEnv(t, []string{"AIRLOCK_URL=" + s.url, "AIRLOCK_API_KEY=" + s.adminKey})
	out := runTS(t, cmd, 8*time.Minute, nil)
	// The spec reporter's summary: every test the files define ran and
	// passed (none skipped, no file without tests taken for a pass).
	var total, passed int
	fmt.Sscanf(tsAfterLine(out, "ℹ tests "), "%d", &total)
	fmt.Sscanf(tsAfterLine(out, "ℹ pass "), "%d", &passed)
	if want := tsCountTests(t, pkg); total != want || passed != want {
		t.Errorf("node --test: %d tests, %d passed; the files define %d", total, passed, want)
	}
	left := must[client.Page](t)(s.admin().ListSandboxes(ctx, client.ListOptions{Metadata: map[string]string{"suite": "sdkts"}}))
	for _, sb := range left.Sandboxes {
		if sb.State != client.StateStopped {
			t.Errorf("sandbox %s of the SDK's tests is left %s", sb.ID, sb.State)
		}
	}
}

// tsCountTests counts the top-level test(...) calls of the package's test files.
func tsCountTests(t *testing.T, pkg string) int {
	files, err := filepath.Glob(filepath.Join(pkg, "test", "*.test.ts"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += len(regexp.MustCompile(`(?m)^test\(`).FindAll(b, -1))
	}
	return n
}

// tsAfterLine returns what follows prefix on the last line of out that starts with it.
func tsAfterLine(out, prefix string) string {
	found := ""
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			found = rest
		}
	}
	return found
}

// TestSDKTypeScriptExecSurvivesRestart: a command streamed through the
// SDK's execStream outlives a restart of the server (killed, or stopped),
// and the stream follows it again by its exec id: every line once, and
// the command's own exit (sdk/typescript/test/restart.ts).
func TestSDKTypeScriptExecSurvivesRestart(t *testing.T) {
	node, dir := tsPackage(t)
	pkg := tsBuild(t, node, dir)
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			s := startServer(t, "")
			cmd := exec.Command(node, filepath.Join("build", "test", "restart.js"))
			cmd.Dir = pkg
			cmd.Env = tsEnv(t, []string{"AIRLOCK_URL=" + s.url, "AIRLOCK_API_KEY=" + s.adminKey})
			restarted := false
			out := runTS(t, cmd, 3*time.Minute, func(line string) {
				if line == "RESTART" && !restarted {
					restarted = true
					restartServer(t, s, how, 500*time.Millisecond)
				}
			})
			if !restarted || !strings.Contains(out, "resumed exec ") {
				t.Errorf("restart.js did not stream across a restart:\n%s", out)
			}
		})
	}
}

// runTS runs a node command for at most limit, calling onLine (if not
// nil) on the test's goroutine with each line of its output as it comes,
// and fails the test unless it exits 0. It returns the output.
func runTS(t *testing.T, cmd *exec.Cmd, limit time.Duration, onLine func(string)) string {
	t.Helper()
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	// Its own process group: node --test runs each file in a child.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, pr)
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	var out strings.Builder
	timeout := time.After(limit)
	var err error
	for lines != nil {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			out.WriteString(line + "\n")
			if onLine != nil {
				onLine(line)
			}
		case <-timeout:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = fmt.Errorf("did not finish in %v", limit)
			timeout = nil
		}
	}
	if werr := <-done; err == nil {
		err = werr
	}
	t.Logf("node %s:\n%s", strings.Join(cmd.Args[1:], " "), out.String())
	if err != nil {
		t.Fatalf("node %s: %v", filepath.Base(cmd.Args[len(cmd.Args)-1]), err)
	}
	return out.String()
}
