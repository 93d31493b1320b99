package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/runtime"
)

// execResult is what a user of Exec sees.
type execResult struct {
	Code     int
	Signal   int
	TimedOut bool
	Stdout   string
	Stderr   string
}

func run(t *testing.T, c *Client, req runtime.ExecRequest) (execResult, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	req.Stdout, req.Stderr = &stdout, &stderr
	st, err := c.Exec(context.Background(), req)
	return execResult{st.Code, st.Signal, st.TimedOut, stdout.String(), stderr.String()}, err
}

// servers returns a plain (per-pid wait) and a reaping (PID 1 style)
// agent, both with workdir as their default cwd.
func servers(t *testing.T, workdir string) map[string]*Client {
	return map[string]*Client{
		"plain": startServer(t, Config{UID: -1, GID: -1, Root: "/", Workdir: workdir,
			Env: []string{"PATH=/usr/bin:/bin", "BASE=base", "FOO=base"}}),
		"reap": startReaper(t, workdir),
	}
}

func TestExec(t *testing.T) {
	work := t.TempDir()
	bin := t.TempDir()
	script := "#!/bin/sh\necho hello from path\n"
	if err := os.WriteFile(filepath.Join(bin, "hello"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("0123456789abcdef", 200_000) // 3.2 MB, many frames each way
	tests := []struct {
		name  string
		req   runtime.ExecRequest
		stdin string
		want  execResult
	}{
		{"exit zero", runtime.ExecRequest{Argv: []string{"true"}}, "", execResult{}},
		{"exit code", runtime.ExecRequest{Shell: "exit 3"}, "", execResult{Code: 3}},
		{"separate streams", runtime.ExecRequest{Argv: []string{"sh", "-c", "echo out; echo err >&2"}}, "",
			execResult{Stdout: "out\n", Stderr: "err\n"}},
		{"killed by signal", runtime.ExecRequest{Shell: "kill -TERM $$"}, "",
			execResult{Code: 128 + 15, Signal: 15}},
		{"stdin streamed", runtime.ExecRequest{Argv: []string{"cat"}}, big, execResult{Stdout: big}},
		{"stdin eof when nil", runtime.ExecRequest{Argv: []string{"wc", "-c"}}, "", execResult{Stdout: "0\n"}},
		{"env merged, request wins", runtime.ExecRequest{Shell: "echo $FOO $BASE $NEW", Env: map[string]string{"FOO": "req", "NEW": "new"}}, "",
			execResult{Stdout: "req base new\n"}},
		{"default cwd is workdir", runtime.ExecRequest{Argv: []string{"pwd"}}, "", execResult{Stdout: work + "\n"}},
		{"cwd", runtime.ExecRequest{Argv: []string{"pwd"}, Cwd: bin}, "", execResult{Stdout: bin + "\n"}},
		{"PATH from request env", runtime.ExecRequest{Argv: []string{"hello"}, Env: map[string]string{"PATH": bin}}, "",
			execResult{Stdout: "hello from path\n"}},
		{"own session", runtime.ExecRequest{Shell: "test $(ps -o sid= -p $$) -eq $$ && echo leader"}, "",
			execResult{Stdout: "leader\n"}},
		{"only fds 0-2 inherited", runtime.ExecRequest{Argv: []string{"ls", "/proc/self/fd"}}, "",
			execResult{Stdout: "0\n1\n2\n3\n"}}, // 3 is the fd ls reads the directory with
	}
	for mode, c := range servers(t, work) {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				req := tt.req
				if tt.stdin != "" {
					req.Stdin = strings.NewReader(tt.stdin)
				}
				got, err := run(t, c, req)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("exec (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestExecErrors(t *testing.T) {
	c := startServer(t, Config{UID: -1, GID: -1, Root: "/", Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}})
	tests := []struct {
		name string
		req  runtime.ExecRequest
		is   error
	}{
		{"not in PATH", runtime.ExecRequest{Argv: []string{"no-such-program-airlock"}}, runtime.ErrNotFound},
		{"missing cwd", runtime.ExecRequest{Argv: []string{"true"}, Cwd: "/no/such/dir"}, runtime.ErrNotFound},
		{"no command", runtime.ExecRequest{}, runtime.ErrInvalid},
		{"argv and shell", runtime.ExecRequest{Argv: []string{"true"}, Shell: "true"}, runtime.ErrInvalid},
		{"bad env name", runtime.ExecRequest{Argv: []string{"true"}, Env: map[string]string{"A=B": "c"}}, runtime.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Exec(context.Background(), tt.req)
			if !errors.Is(err, tt.is) {
				t.Errorf("Exec error = %v, want %v", err, tt.is)
			}
		})
	}
}

// TestExecLeftoversDieWithIt: a command's tree lives as long as the
// command. A child it left running (here one holding its stdout, or one
// in a session of its own) neither holds the exec open nor outlives it: a
// fork bomb, whose root returns at once, used to keep every pid of the
// sandbox after its exec ended. The same where the agent reaps: its
// orphans come back to it, and it must not take an exec that ended for
// one that left nothing behind.
func TestExecLeftoversDieWithIt(t *testing.T) {
	for name, c := range servers(t, t.TempDir()) {
		t.Run(name, func(t *testing.T) {
			if _, err := run(t, c, runtime.ExecRequest{Argv: []string{"true"}}); err != nil {
				t.Fatal(err)
			}
			for _, shell := range []string{"sleep 1000 & echo $!", "(setsid sleep 1000 & echo $!)"} {
				got, err := run(t, c, runtime.ExecRequest{Shell: shell})
				if err != nil {
					t.Fatal(err)
				}
				pid, _ := strconv.Atoi(strings.TrimSpace(got.Stdout))
				if pid <= 0 || got.Code != 0 {
					t.Fatalf("exec %q = %+v, want exit 0 and a pid", shell, got)
				}
				p := procOf(pid)
				defer p.kill()
				if !p.dead() {
					t.Errorf("%q: child %d outlived the exec that started it", shell, pid)
				}
			}
		})
	}
}

func TestTimeoutKillsTree(t *testing.T) {
	tests := []struct {
		name  string
		shell string
	}{
		// setsid leaves the process group: only the parent link finds it.
		{"setsid grandchild", `setsid sh -c 'echo $$ > "$PIDFILE"; exec sleep 1000' & wait`},
		// The middle process exits, so the grandchild is re-parented away;
		// the tracker saw its lineage while the middle process lived.
		{"double-forked setsid daemon", `(setsid sh -c 'echo $$ > "$PIDFILE"; exec sleep 1000' & sleep 1); sleep 1000`},
		// Bounded: pid_max is small on shared test machines.
		{"forking tree", `sleep 1000 & echo $! > "$PIDFILE"; i=0; while [ $i -lt 100 ]; do sh -c 'sleep 1000 & sleep 1000' & i=$((i+1)); done; wait`},
	}
	for mode, c := range servers(t, t.TempDir()) {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				pidfile := filepath.Join(t.TempDir(), "pid")
				proc, err := c.Start(context.Background(), runtime.ExecRequest{
					Shell:   tt.shell,
					Env:     map[string]string{"PIDFILE": pidfile},
					Timeout: 3 * time.Second,
				})
				if err != nil {
					t.Fatal(err)
				}
				p := readPid(t, pidfile)
				defer p.kill()
				st, err := proc.Wait()
				if err != nil {
					t.Fatal(err)
				}
				got := execResult{Code: st.Code, Signal: st.Signal, TimedOut: st.TimedOut}
				want := execResult{Code: 128 + 9, Signal: 9, TimedOut: true}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("exec (-want +got):\n%s", diff)
				}
				if !p.dead() {
					t.Errorf("descendant %d still running (state %c) after timeout", p.pid, p.state())
				}
			})
		}
	}
}

func TestDisconnectKillsTree(t *testing.T) {
	for mode, c := range servers(t, t.TempDir()) {
		t.Run(mode, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pid")
			ctx, cancel := context.WithCancel(context.Background())
			p, err := c.Start(ctx, runtime.ExecRequest{
				Shell: `setsid sleep 1000 & echo $! > "$PIDFILE"; wait`,
				Env:   map[string]string{"PIDFILE": pidfile},
			})
			if err != nil {
				t.Fatal(err)
			}
			child := readPid(t, pidfile)
			defer child.kill()
			root := procOf(p.Pid())
			cancel()
			if _, err := p.Wait(); !errors.Is(err, context.Canceled) {
				t.Errorf("Wait error = %v, want context.Canceled", err)
			}
			waitFor(t, "process tree to die after disconnect", func() bool { return root.dead() && child.dead() })
		})
	}
}

func TestSignal(t *testing.T) {
	for mode, c := range servers(t, t.TempDir()) {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			p, err := c.Start(ctx, runtime.ExecRequest{Argv: []string{"sleep", "1000"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Signal(ctx, p.Pid(), int(syscall.SIGTERM), false); err != nil {
				t.Fatal(err)
			}
			st, err := p.Wait()
			if err != nil || st.Code != 143 || st.Signal != 15 {
				t.Errorf("after SIGTERM: %+v, %v; want code 143 signal 15", st, err)
			}

			p, err = c.Start(ctx, runtime.ExecRequest{Shell: "sleep 1000 & wait"})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Signal(ctx, p.Pid(), int(syscall.SIGKILL), true); err != nil {
				t.Fatal(err)
			}
			if st, err := p.Wait(); err != nil || st.Code != 137 {
				t.Errorf("after group SIGKILL: %+v, %v; want code 137", st, err)
			}

			for _, pid := range []int{0, 1, -1} {
				if err := c.Signal(ctx, pid, int(syscall.SIGTERM), false); !errors.Is(err, runtime.ErrInvalid) {
					t.Errorf("Signal(%d) = %v, want ErrInvalid", pid, err)
				}
			}
		})
	}
}

// As PID 1 the agent must reap orphans, or the sandbox fills with zombies:
// a grandchild whose parent exited is reparented to it and, when it exits
// while the command still runs, must not be left a zombie.
func TestReapOrphans(t *testing.T) {
	c := startReaper(t, t.TempDir())
	pr, pw := io.Pipe()
	p, err := c.Start(context.Background(), runtime.ExecRequest{Shell: "(sleep 0.2 >/dev/null 2>&1 & echo $!); exec sleep 30", Stdout: pw})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Signal(context.Background(), p.Pid(), int(syscall.SIGKILL), false)
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	go io.Copy(io.Discard, br)
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		t.Fatalf("no orphan pid: %q %v", line, err)
	}
	orphan := procOf(pid)
	defer orphan.kill()
	waitFor(t, "orphan to be reaped (not left a zombie)", func() bool { return orphan.state() == 0 })
}

// TestResizeWithoutTerminal: a resize sent for a process that has no
// terminal changes nothing, and above all is not its input.
func TestResizeWithoutTerminal(t *testing.T) {
	c := startServer(t, Config{UID: -1, GID: -1, Root: "/", Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}})
	pr, pw := io.Pipe()
	var out bytes.Buffer
	p, err := c.Start(context.Background(), runtime.ExecRequest{Argv: []string{"cat"}, Stdin: pr, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("before "))
	if err := p.Resize(runtime.TTYSize{Cols: 100, Rows: 30}); err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("after"))
	pw.Close()
	if st, err := p.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("cat: %+v %v", st, err)
	}
	if out.String() != "before after" {
		t.Errorf("cat read %q: the resize reached its stdin", out.String())
	}
}
