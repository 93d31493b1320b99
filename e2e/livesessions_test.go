package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// restartServer kills (kill -9) or stops (SIGTERM) s's daemon, waits
// down, and starts it again on the same data dir and address.
func restartServer(t *testing.T, s *server, how string, down time.Duration) {
	t.Helper()
	if how == "kill -9" {
		s.cmd.Process.Signal(syscall.SIGKILL)
		s.cmd.Wait()
		s.cmd = nil
	} else {
		s.stop()
	}
	time.Sleep(down)
	s.start()
}

// TestSessionsSurviveRestart: a session's shell is a job of the sandbox's
// agent, so a daemon killed or stopped and started again keeps it: an
// exec session's cwd, exported variables, functions and activated venv;
// a command it was running when the daemon went (busy until it ends); an
// interactive session's scrollback with what it printed while no daemon
// ran. A WebSocket client re-attaches from the offset it had read and
// goes on without repeats, `airlock attach` in a terminal reconnects on
// its own, and the audit log holds the downtime output once.
func TestSessionsSurviveRestart(t *testing.T) {
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			s := startServer(t, "")
			c := s.admin()
			sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
			ex := must[client.Session](t)(c.CreateSession(ctx, sb.ID, client.SessionRequest{}))
			res := must[client.SessionResult](t)(c.SessionExec(ctx, sb.ID, ex.ID, "cd /tmp; export LIVE=42; f() { echo fn-$1; }; python3 -m venv --without-pip v; . v/bin/activate", time.Minute))
			if res.ExitCode != 0 {
				t.Fatalf("setting the session up: %+v", res)
			}
			it := must[client.Session](t)(c.CreateSession(ctx, sb.ID, client.SessionRequest{Mode: "interactive", Cols: 80, Rows: 24}))
			term := must[*client.Terminal](t)(c.AttachSession(ctx, sb.ID, it.ID))
			term.Write(ctx, []byte("echo before-$((1+1))\r"))
			readUntil(t, term, "before-2")

			m := startTmux(t, "AIRLOCK_URL="+s.url, "AIRLOCK_API_KEY="+s.adminKey)
			m.run("new-session", "-d", "-s", "att", "-x", "100", "-y", "30", s.bin+" attach "+sb.ID+" "+it.ID+"; echo EXIT=$?; sleep 600")
			m.screen("att", `before-2`)

			// A command running when the daemon goes, and output printed
			// while it is down.
			cut := make(chan error, 1)
			go func() {
				_, err := c.SessionExec(ctx, sb.ID, ex.ID, "sleep 8; echo late > /tmp/late; false", time.Minute)
				cut <- err
			}()
			waitSession(t, c, sb.ID, ex.ID, "busy")
			term.Write(ctx, []byte("sleep 1; echo while-down-$((3*3))\r"))
			readUntil(t, term, `while-down-\$`) // the typed line's echo
			offset := term.Offset()
			restartServer(t, s, how, 2*time.Second)
			c = s.admin()
			// Killed, the daemon cut the request, and the command goes on
			// under the next one; stopped, it finished the request first
			// (a SIGTERM drains requests for up to 10 s).
			var cutErr error
			select {
			case cutErr = <-cut:
			case <-time.After(10 * time.Second):
				t.Fatal("the request cut by the restart never returned")
			}
			wantEx := "busy"
			if how == "kill -9" && cutErr == nil {
				t.Fatal("the command cut by kill -9 answered as if complete")
			} else if how == "SIGTERM" {
				if cutErr != nil {
					t.Fatalf("the command running at SIGTERM: %v, want its result", cutErr)
				}
				wantEx = "ready"
			}

			list := must[[]client.Session](t)(c.ListSessions(ctx, sb.ID))
			states := map[string]string{}
			for _, se := range list {
				states[se.ID] = se.State
			}
			if len(list) != 2 || states[ex.ID] != wantEx || states[it.ID] != "ready" {
				t.Fatalf("sessions after the restart: %+v", list)
			}
			if wantEx == "busy" {
				if _, err := c.SessionExec(ctx, sb.ID, ex.ID, "true", time.Minute); !errors.Is(err, client.ErrConflict) {
					t.Errorf("exec while the earlier command runs: %v, want a conflict", err)
				}
			}
			waitSession(t, c, sb.ID, ex.ID, "ready")
			res = must[client.SessionResult](t)(c.SessionExec(ctx, sb.ID, ex.ID, "pwd; echo $LIVE; which python; f x; cat /tmp/late", time.Minute))
			if want := "/tmp\n42\n/tmp/v/bin/python\nfn-x\nlate\n"; res.Output != want || res.ExitCode != 0 {
				t.Errorf("the session's state after the restart: %+v, want output %q", res, want)
			}

			// The WebSocket client goes on from where it was.
			term2 := must[*client.Terminal](t)(c.AttachSessionAt(ctx, sb.ID, it.ID, offset))
			got := readUntil(t, term2, "while-down-9")
			if strings.Contains(got, "before-2") {
				t.Errorf("re-attached from offset %d, the client got earlier output again: %q", offset, got)
			}
			term2.Write(ctx, []byte("echo after-$((2+2))\r"))
			readUntil(t, term2, "after-4")
			term2.Close()
			// A new client gets the whole scrollback.
			all := must[*client.Terminal](t)(c.AttachSession(ctx, sb.ID, it.ID))
			readUntil(t, all, `(?s)before-2.*while-down-9.*after-4`)
			all.Close()
			// airlock attach reconnected on its own.
			m.screen("att", `reconnected to session(?s:.*)after-4`)
			m.run("send-keys", "-t", "att", "echo tmux-$((6*6))", "Enter")
			m.screen("att", `\ntmux-36\n`)
			m.run("send-keys", "-t", "att", "exit 6", "Enter")
			m.screen("att", `EXIT=6`)

			// The audit log has the downtime output once, and verifies.
			if n := strings.Count(recordedOutput(t, c, sb.ID, "session.output", "session_id", it.ID), "while-down-9"); n != 1 {
				t.Errorf("the audit log has the output printed while the daemon was down %d times, want 1", n)
			}
			if v := must[client.AuditVerify](t)(c.VerifyAudit(ctx, sb.ID)); !v.OK {
				t.Errorf("audit chain: %+v", v)
			}
			if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
			assertNoSandboxesLeft(t, s, sb.ID)
		})
	}
}

// waitSession waits until a session is in state.
func waitSession(t *testing.T, c *client.Client, id, sid, state string) {
	t.Helper()
	var list []client.Session
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		list = must[[]client.Session](t)(c.ListSessions(ctx, id))
		for _, se := range list {
			if se.ID == sid && se.State == state {
				return
			}
		}
	}
	t.Fatalf("session %s never %s: %+v", sid, state, list)
}

// TestDeadlinesSurviveRestart: a sandbox's lifetime and idle timer go on
// counting while no daemon runs. One whose deadline passed meanwhile is
// destroyed at start and recorded as expired at its deadline; one whose
// idle timeout passed is stopped as idle at once, not a whole timeout
// after the start; one still within both keeps running.
func TestDeadlinesSurviveRestart(t *testing.T) {
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			s := startServer(t, "")
			c := s.admin()
			short := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Timeout: 3 * time.Second}))
			idle := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{IdleTimeoutS: 5}))
			kept := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{IdleTimeoutS: 60}))
			for _, id := range []string{idle.ID, kept.ID} {
				if _, err := c.Exec(ctx, id, client.ExecRequest{Command: "true"}); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(2500 * time.Millisecond) // the idle timers are saved every 2 s
			restartServer(t, s, how, 4*time.Second)
			c = s.admin()
			started := time.Now()

			got := must[client.Sandbox](t)(c.GetSandbox(ctx, short.ID))
			if got.State != "stopped" || got.Reason != "expired" || !got.EndedAt.Equal(short.ExpiresAt) {
				t.Errorf("expired while down: %s %q ended %s, want stopped, expired, at its deadline %s", got.State, got.Reason, got.EndedAt, short.ExpiresAt)
			}
			for {
				got = must[client.Sandbox](t)(c.GetSandbox(ctx, idle.ID))
				if got.State != "running" || time.Since(started) > 2500*time.Millisecond {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if got.State != "stopped" || got.Reason != "idle" {
				t.Errorf("idle past its timeout while down, %s after the start: %s %q", time.Since(started).Round(time.Millisecond), got.State, got.Reason)
			}
			if got := must[client.Sandbox](t)(c.GetSandbox(ctx, kept.ID)); got.State != "running" {
				t.Errorf("within its idle timeout: %s %q", got.State, got.Reason)
			}
			if err := c.DeleteSandbox(ctx, kept.ID); err != nil {
				t.Fatal(err)
			}
			assertNoSandboxesLeft(t, s, short.ID, idle.ID, kept.ID)
		})
	}
}

// TestUpgradeInPlace: a newer airlock binary started on the data dir an
// older one ran (two builds, two version strings) re-attaches the older
// one's sandbox with everything alive in it: its background process (same
// pid, output unbroken), its session's shell state and its terminal; the
// server and airlock doctor say which version runs and which agent
// protocol the sandbox speaks; the audit chain verifies across both.
func TestUpgradeInPlace(t *testing.T) {
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			older := linuxtest.BuildVersion(t, "v0.1.0-old")
			newer := linuxtest.BuildVersion(t, "v0.2.0-new")
			s := startServerBin(t, older, "")
			c := s.admin()
			if si := must[client.ServerInfo](t)(c.ServerInfo(ctx)); si.Version != "v0.1.0-old" {
				t.Fatalf("the older server says it is %q", si.Version)
			}
			sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
			counter := must[client.Process](t)(c.StartProcess(ctx, sb.ID, client.ExecRequest{Command: "i=0; while :; do echo $i; i=$((i+1)); sleep 0.1; done"}, "counter"))
			ex := must[client.Session](t)(c.CreateSession(ctx, sb.ID, client.SessionRequest{}))
			if res := must[client.SessionResult](t)(c.SessionExec(ctx, sb.ID, ex.ID, "cd /tmp && export UP=old", time.Minute)); res.ExitCode != 0 {
				t.Fatalf("session setup: %+v", res)
			}
			it := must[client.Session](t)(c.CreateSession(ctx, sb.ID, client.SessionRequest{Mode: "interactive"}))
			term := must[*client.Terminal](t)(c.AttachSession(ctx, sb.ID, it.ID))
			term.Write(ctx, []byte("echo first-$((2*2))\r"))
			readUntil(t, term, "first-4")
			waitFor(t, c, sb.ID, counter.Pid, "\n5\n")

			s.bin = newer
			restartServer(t, s, how, time.Second)
			c = s.admin()
			si := must[client.ServerInfo](t)(c.ServerInfo(ctx))
			if si.Version != "v0.2.0-new" || si.SandboxAgents[strconv.Itoa(si.AgentProtocol)] != 1 {
				t.Errorf("the newer server: %+v", si)
			}
			if got := must[client.Sandbox](t)(c.GetSandbox(ctx, sb.ID)); got.State != "running" || got.AgentVersion != si.AgentProtocol {
				t.Errorf("the sandbox after the upgrade: %s, agent %d", got.State, got.AgentVersion)
			}
			out, code := s.cli(s.adminKey, "doctor")
			if !strings.Contains(out, "server        v0.2.0-new") || !strings.Contains(out, fmt.Sprintf("running sandboxes by agent protocol: %d: 1", si.AgentProtocol)) {
				t.Errorf("airlock doctor (exit %d) does not say the version and agents:\n%s", code, out)
			}

			procs := must[[]client.Process](t)(c.ListProcesses(ctx, sb.ID))
			if len(procs) != 1 || procs[0].Pid != counter.Pid || procs[0].State != "running" {
				t.Fatalf("processes after the upgrade: %+v", procs)
			}
			waitFor(t, c, sb.ID, counter.Pid, "\n30\n")
			var buf strings.Builder
			if _, _, _, err := c.ProcessOutput(ctx, sb.ID, counter.Pid, 0, false, &buf, nil); err != nil {
				t.Fatal(err)
			}
			for i, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
				if l != strconv.Itoa(i) {
					t.Fatalf("the counter's line %d is %q after the upgrade", i, l)
				}
			}
			res := must[client.SessionResult](t)(c.SessionExec(ctx, sb.ID, ex.ID, "pwd; echo $UP", time.Minute))
			if res.Output != "/tmp\nold\n" {
				t.Errorf("the session after the upgrade: %+v", res)
			}
			term2 := must[*client.Terminal](t)(c.AttachSessionAt(ctx, sb.ID, it.ID, term.Offset()))
			term2.Write(ctx, []byte("echo second-$((3*3))\r"))
			readUntil(t, term2, "second-9")
			term2.Close()
			// A sandbox the newer binary starts works beside it.
			fresh := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
			if r := must[client.ExecResult](t)(c.Exec(ctx, fresh.ID, client.ExecRequest{Command: "echo fresh"})); r.Stdout != "fresh\n" {
				t.Errorf("a new sandbox after the upgrade: %+v", r)
			}
			if v := must[client.AuditVerify](t)(c.VerifyAudit(ctx, sb.ID)); !v.OK {
				t.Errorf("audit chain across the upgrade: %+v", v)
			}
			for _, id := range []string{sb.ID, fresh.ID} {
				if err := c.DeleteSandbox(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			assertNoSandboxesLeft(t, s, sb.ID, fresh.ID)
		})
	}
}

// TestStreamingExecSurvivesRestart: a command streamed to a client runs as
// a job, so the daemon going away (kill -9, or SIGTERM past its 10 s
// drain) cuts the client's stream but not the command. The client (the Go
// SDK's ExecStream) re-attaches by the exec id of the stream's start event
// and gets the rest of the output, once, and the real exit status; GET
// .../execs/{exec_id} says it runs, then how it ended; the audit log has
// its end and its output once.
func TestStreamingExecSurvivesRestart(t *testing.T) {
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			s := startServer(t, "")
			c := s.admin()
			sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
			wait := 4
			if how == "SIGTERM" {
				wait = 13 // past the drain, which a shorter command would finish in
			}
			type result struct {
				res client.ExecResult
				out string
				err error
			}
			done := make(chan result, 1)
			var out lockedBuffer
			go func() {
				res, err := c.ExecStream(ctx, sb.ID, client.ExecRequest{Command: fmt.Sprintf("echo begun; sleep %d; echo done; exit 7", wait)}, &out, nil)
				done <- result{res, out.String(), err}
			}()
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "begun"); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the command never began")
				}
			}
			restartServer(t, s, how, time.Second)
			c = s.admin()
			var execID string
			for _, e := range must[[]client.AuditEvent](t)(c.AuditEvents(ctx, sb.ID, client.AuditQuery{Types: []string{"exec.started"}})) {
				var d struct {
					ExecID string `json:"exec_id"`
				}
				json.Unmarshal(e.Data, &d)
				execID = d.ExecID
			}
			if in := must[client.ExecInfo](t)(c.GetExec(ctx, sb.ID, execID)); in.State != "running" || !in.OutputKept {
				t.Errorf("the command after the restart: %+v", in)
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(time.Duration(wait+15) * time.Second):
				t.Fatal("the re-attached client never got the end")
			}
			if r.err != nil || r.res.ExitCode != 7 || r.out != "begun\ndone\n" || r.res.ExecID != execID {
				t.Fatalf("the client across the restart: %+v %q %v (exec %s)", r.res, r.out, r.err, execID)
			}
			in := must[client.ExecInfo](t)(c.GetExec(ctx, sb.ID, execID))
			if in.State != "exited" || in.Exit == nil || in.Exit.ExitCode != 7 {
				t.Errorf("the command's end: %+v", in)
			}
			if got := auditedOutput(t, c, sb.ID, execID); got != "begun\ndone\n" {
				t.Errorf("audited output %q", got)
			}
			exits := 0
			for _, e := range must[[]client.AuditEvent](t)(c.AuditEvents(ctx, sb.ID, client.AuditQuery{Types: []string{"exec.exited"}})) {
				if strings.Contains(string(e.Data), execID) {
					exits++
					if !strings.Contains(string(e.Data), `"exit_code":7`) {
						t.Errorf("exec.exited: %s", e.Data)
					}
				}
			}
			if exits != 1 {
				t.Errorf("%d exec.exited events for %s, want 1", exits, execID)
			}
			if v := must[client.AuditVerify](t)(c.VerifyAudit(ctx, sb.ID)); !v.OK {
				t.Errorf("audit chain: %+v", v)
			}
			if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
			assertNoSandboxesLeft(t, s, sb.ID)
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMCPExecSurvivesRestart: a command an MCP client runs through
// `airlock mcp` (stdio, speaking to the server through the Go client)
// goes on while the server is killed or stopped, and the tool's result is
// the command's real end: its output and exit code.
func TestMCPExecSurvivesRestart(t *testing.T) {
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			s := startServer(t, "")
			c := s.admin()
			cs := mcpStdio(t, s.bin, s.url, s.adminKey, nil)
			id := mcpCreate(t, cs, map[string]any{"timeout_s": 300})
			wait := 4
			if how == "SIGTERM" {
				wait = 13 // past the drain, which a shorter command would finish in
			}
			done := make(chan mcpRun, 1)
			go func() {
				done <- mcpCall[mcpRun](t, cs, "run_command", map[string]any{"sandbox_id": id,
					"command": fmt.Sprintf("touch /tmp/begun; sleep %d; echo done; exit 7", wait)})
			}()
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if _, err := c.ReadFile(ctx, id, "/tmp/begun", io.Discard); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the command never began")
				}
			}
			restartServer(t, s, how, time.Second)
			select {
			case r := <-done:
				if r.ExitCode == nil || *r.ExitCode != 7 || r.Stdout != "done\n" {
					t.Errorf("run_command across the restart: %+v, want done and exit 7", r)
				}
			case <-time.After(time.Minute):
				t.Fatal("run_command never returned")
			}
		})
	}
}
