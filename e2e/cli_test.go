package e2e

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// cliRun runs the airlock binary against s as admin in dir (or the
// test's), with stdin (nil: /dev/null), and returns its stdout, stderr
// and exit code.
func (s *server) cliRun(dir string, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	s.t.Helper()
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(os.Environ(), "AIRLOCK_URL="+s.url, "AIRLOCK_API_KEY="+s.adminKey, "AIRLOCK_DATA_DIR=", "AIRLOCK_RUN_LOCAL=")
	cmd.Dir, cmd.Stdin = dir, stdin
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestCLIKeepsItsWord runs the CLI as a person would against a real
// server: what it says and how it exits are what its help promises.
func TestCLIKeepsItsWord(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	t.Run("exec forwards stdin", func(t *testing.T) {
		id := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{})).ID
		out, errs, code := s.cliRun("", strings.NewReader("hi\n"), "exec", id, "--", "cat")
		if code != 0 || out != "hi\n" {
			t.Errorf("echo hi | airlock exec ID -- cat: exit %d, stdout %q, stderr %q", code, out, errs)
		}
		out, _, code = s.cliRun("", nil, "exec", id, "--", "sh", "-c", "wc -c")
		if code != 0 || strings.TrimSpace(out) != "0" {
			t.Errorf("exec with stdin from /dev/null: exit %d, stdout %q", code, out)
		}
		// A stdin that never ends (a loop's): --no-stdin does not wait
		// for its end, which comes only after 30 s.
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.WriteString("for the loop\n")
		never := time.AfterFunc(30*time.Second, func() { w.Close() })
		start := time.Now()
		out, _, code = s.cliRun("", r, "exec", "--no-stdin", id, "--", "sh", "-c", "wc -c")
		never.Stop()
		w.Close()
		r.Close()
		if code != 0 || strings.TrimSpace(out) != "0" || time.Since(start) > 20*time.Second {
			t.Errorf("exec --no-stdin: exit %d, stdout %q after %v; want 0 bytes read at once", code, out, time.Since(start))
		}
		out, _, code = s.cliRun("", strings.NewReader(strings.Repeat("<&>", 300000)), "exec", id, "--", "sh", "-c", "wc -c")
		if code != 0 || strings.TrimSpace(out) != "900000" {
			t.Errorf("exec with 900000 bytes of <&> on stdin: exit %d, stdout %q", code, out)
		}
		_, errs, code = s.cliRun("", strings.NewReader(strings.Repeat("a\n", 500000)), "exec", id, "--", "cat")
		if code != 1 || !strings.Contains(errs, "stdin (1000000 bytes) makes the exec request larger than the server takes") {
			t.Errorf("exec with stdin past the server's bound: exit %d, stderr %q", code, errs)
		}
		_, errs, code = s.cliRun("", strings.NewReader("\xff\xfe"), "exec", id, "--", "cat")
		if code != 1 || !strings.Contains(errs, "stdin is not UTF-8 text") || !strings.Contains(errs, "airlock cp - "+id+":FILE") {
			t.Errorf("exec with bytes on stdin: exit %d, stderr %q; want a refusal that says what to do", code, errs)
		}
	})
	t.Run("a sandbox that ended says when", func(t *testing.T) {
		id := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{})).ID
		if err := c.DeleteSandbox(ctx, id); err != nil {
			t.Fatal(err)
		}
		want := regexp.MustCompile(`^airlock: sandbox ` + id + ` has ended \(stopped [0-9]+s ago\)\n$`)
		for _, args := range [][]string{{"exec", id, "--", "true"}, {"timeout", id, "10m"}, {"cp", "-", id + ":f"}, {"shell", id}} {
			if _, errs, code := s.cliRun("", strings.NewReader("x"), args...); code != 1 || !want.MatchString(errs) {
				t.Errorf("airlock %s on a stopped sandbox: exit %d, stderr %q; want %s", strings.Join(args, " "), code, errs, want)
			}
		}
		exp := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Timeout: time.Second})).ID
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if sb, err := c.GetSandbox(ctx, exp); err == nil && sb.State == client.StateStopped {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the 1s sandbox never expired")
			}
		}
		want = regexp.MustCompile(`^airlock: sandbox ` + exp + ` has ended \(expired [0-9]+s ago\)\n$`)
		if _, errs, code := s.cliRun("", nil, "exec", exp, "--", "true"); code != 1 || !want.MatchString(errs) {
			t.Errorf("exec on an expired sandbox: exit %d, stderr %q; want %s", code, errs, want)
		}
	})
	t.Run("JSON output keeps angle brackets", func(t *testing.T) {
		id := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{})).ID
		must[client.ExecResult](t)(c.Exec(ctx, id, client.ExecRequest{Command: "echo '<a>&b' > /dev/null"}))
		out, errs, code := s.cliRun("", nil, "audit", id, "--json")
		if code != 0 || !strings.Contains(out, "<a>&b") || strings.Contains(out, `\u003c`) || strings.Contains(out, `\u0026`) {
			t.Errorf("audit --json: exit %d, stderr %q, stdout:\n%s", code, errs, out)
		}
		out, _, _ = s.cliRun("", nil, "audit", id)
		if !strings.Contains(out, "<a>&b") || strings.Contains(out, `\u003c`) {
			t.Errorf("audit:\n%s", out)
		}
	})
	t.Run("run on a server says nothing of embedding", func(t *testing.T) {
		out, errs, code := s.cliRun("", nil, "run", "--", "echo", "ok")
		if code != 0 || out != "ok\n" || strings.Contains(errs, "embedded") {
			t.Errorf("run: exit %d, stdout %q, stderr %q", code, out, errs)
		}
	})
	t.Run("doctor checks the server's data dir", func(t *testing.T) {
		out, errs, _ := s.cliRun("", nil, "doctor")
		if want := "data dir      " + s.dataDir + " (the data dir of the server at " + s.url + ")"; !strings.Contains(out, want) {
			t.Errorf("doctor: want %q in stdout %q (stderr %q)", want, out, errs)
		}
	})
}

// TestTaskRunExitCodes: `airlock task run` exits with each code its help
// lists, and keeps the artifacts in ./airlock-task-ID without --out.
func TestTaskRunExitCodes(t *testing.T) {
	s := startServer(t, "")
	work := t.TempDir()
	repo := filepath.Join(work, "repo")
	os.Mkdir(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "in.txt"), []byte("x\n"), 0o644)
	run := func(args ...string) (string, string, int) {
		return s.cliRun(work, nil, append([]string{"task", "run"}, args...)...)
	}
	taskID := regexp.MustCompile(`airlock: task (\S+) `)

	t.Run("0 and artifacts in ./airlock-task-ID", func(t *testing.T) {
		_, errs, code := run("--command", "echo made > made.txt", repo)
		m := taskID.FindStringSubmatch(errs)
		if code != 0 || m == nil {
			t.Fatalf("exit %d, stderr %q", code, errs)
		}
		dir := "airlock-task-" + m[1]
		if b, err := os.ReadFile(filepath.Join(work, dir, "made.txt")); err != nil || string(b) != "made\n" {
			t.Errorf("%s/made.txt: %q, %v", dir, b, err)
		}
		if !strings.Contains(errs, "airlock: 1 artifact and workspace.diff written to "+dir+"\n") {
			t.Errorf("stderr does not say where, in the singular: %q", errs)
		}
	})
	t.Run("N, the harness's status", func(t *testing.T) {
		if _, errs, code := run("--command", "exit 3", repo); code != 3 {
			t.Errorf("exit %d, want 3; stderr %q", code, errs)
		}
	})
	t.Run("124 past --timeout", func(t *testing.T) {
		if _, errs, code := run("--command", "sleep 30", "--timeout", "1s", repo); code != 124 {
			t.Errorf("exit %d, want 124; stderr %q", code, errs)
		}
	})
	t.Run("2 for bad usage, nothing submitted", func(t *testing.T) {
		before := len(must[client.TaskPage](t)(s.admin().ListTasks(ctx, client.TaskListOptions{})).Tasks)
		for _, args := range [][]string{
			{"--bogus"},
			{"--timeout", "48h", "--command", "true"},
			{"--timeout", "0", "--command", "true"},
			{"--command", "true", filepath.Join(work, "no-such-dir")},
			{"--command", "true", "--git", "https://example.test/r.git", repo},
			{"--command", "true", "--ref", "main"},
			{"--command", "true", repo, repo},
		} {
			if _, errs, code := run(args...); code != 2 || errs == "" {
				t.Errorf("task run %s: exit %d, stderr %q; want 2 and why", strings.Join(args, " "), code, errs)
			}
		}
		if after := len(must[client.TaskPage](t)(s.admin().ListTasks(ctx, client.TaskListOptions{})).Tasks); after != before {
			t.Errorf("bad usage submitted %d tasks", after-before)
		}
	})
	t.Run("1 when the server refuses it", func(t *testing.T) {
		if _, errs, code := run("--command", "true", "--secret", "NO_SUCH_SECRET", repo); code != 1 || !strings.HasPrefix(errs, "airlock: ") {
			t.Errorf("exit %d, stderr %q; want 1 and the server's reason", code, errs)
		}
	})
	t.Run("130 when Ctrl-C cancels it", func(t *testing.T) {
		cmd := exec.Command(s.bin, "task", "run", "--command", "sleep 60", repo)
		cmd.Env = append(os.Environ(), "AIRLOCK_URL="+s.url, "AIRLOCK_API_KEY="+s.adminKey)
		cmd.Dir = work
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		sc := bufio.NewScanner(stderr)
		id := ""
		for sc.Scan() {
			if m := taskID.FindStringSubmatch(sc.Text()); m != nil && id == "" {
				id = m[1]
			}
			if strings.Contains(sc.Text(), "started") {
				break
			}
		}
		cmd.Process.Signal(syscall.SIGINT)
		go io.Copy(io.Discard, stderr)
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("task run after SIGINT: %v, want exit 130", err)
		}
		if tk, err := s.admin().GetTask(ctx, id); err != nil || tk.State != client.TaskCancelled {
			t.Errorf("task %q after Ctrl-C: %+v, %v; want cancelled", id, tk.State, err)
		}
	})
}
