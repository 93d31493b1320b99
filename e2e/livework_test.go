package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// TestBackgroundSurvivesRestart: background processes are the agent's
// jobs, so a daemon killed (kill -9) or stopped (SIGTERM) and started
// again loses none of them: the same pids run, the output from offset 0
// is the unbroken sequence including what was printed while no daemon
// ran, stdin and exits work as before, and the audit log holds the
// output produced while the daemon was down and still verifies.
func TestBackgroundSurvivesRestart(t *testing.T) {
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			s := startServer(t, "")
			c := s.admin()
			sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
			counter := must[client.Process](t)(c.StartProcess(ctx, sb.ID, client.ExecRequest{Command: "i=0; while :; do echo $i; i=$((i+1)); sleep 0.1; done"}, "counter"))
			reader := must[client.Process](t)(c.StartProcess(ctx, sb.ID, client.ExecRequest{Command: "read l; echo got:$l; read m; echo eof:$m; exit 3"}, "reader"))
			waitFor(t, c, sb.ID, counter.Pid, "\n5\n")

			down := time.Now()
			restartServer(t, s, how, 5*time.Second) // ~50 lines with no daemon
			c = s.admin()

			list := must[[]client.Process](t)(c.ListProcesses(ctx, sb.ID))
			tags := map[string]client.Process{}
			for _, p := range list {
				tags[p.Tag] = p
			}
			if p := tags["counter"]; p.Pid != counter.Pid || p.State != "running" || p.ExecID != counter.ExecID {
				t.Fatalf("counter after the restart: %+v (was %+v)", p, counter)
			}
			if p := tags["reader"]; p.Pid != reader.Pid || p.State != "running" {
				t.Fatalf("reader after the restart: %+v", p)
			}
			waitFor(t, c, sb.ID, counter.Pid, "\n80\n")
			var out bytes.Buffer
			if _, _, dropped, err := c.ProcessOutput(ctx, sb.ID, counter.Pid, 0, false, &out, nil); err != nil || dropped != 0 {
				t.Fatalf("output from 0: dropped %d, %v", dropped, err)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			for i, l := range lines {
				if l != strconv.Itoa(i) {
					t.Fatalf("line %d is %q: the sequence broke (%d lines)", i, l, len(lines))
				}
			}

			// The reader's stdin, through the new daemon.
			if err := c.WriteStdin(ctx, sb.ID, reader.Pid, strings.NewReader("after\n")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, c, sb.ID, reader.Pid, "got:after\n")
			if err := c.CloseStdin(ctx, sb.ID, reader.Pid); err != nil {
				t.Fatal(err)
			}
			var rest bytes.Buffer
			_, exit, _, err := c.ProcessOutput(ctx, sb.ID, reader.Pid, 0, true, &rest, nil)
			if err != nil || exit == nil || exit.ExitCode != 3 || rest.String() != "got:after\neof:\n" {
				t.Fatalf("reader's end: %q %+v %v", rest.String(), exit, err)
			}

			// The audit log: the counter's lines printed while the daemon
			// was down are there, once each, and the chain verifies.
			if err := c.SignalProcess(ctx, sb.ID, counter.Pid, "TERM"); err != nil {
				t.Fatal(err)
			}
			_, exit, _, err = c.ProcessOutput(ctx, sb.ID, counter.Pid, 0, true, nil, nil)
			if err != nil || exit == nil {
				t.Fatalf("counter's end: %+v %v", exit, err)
			}
			recorded := auditedOutput(t, c, sb.ID, counter.ExecID)
			var want strings.Builder
			for i := range recordedLines(recorded) {
				fmt.Fprintf(&want, "%d\n", i)
			}
			if recorded != want.String() || recordedLines(recorded) < 50 {
				t.Errorf("audited output of the counter (down at %s): %d lines, not the sequence:\n%.300s", down.Format(time.TimeOnly), recordedLines(recorded), recorded)
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

func recordedLines(s string) int { return strings.Count(s, "\n") }

// auditedOutput is the stdout a sandbox's audit log recorded for a
// command, in order.
func auditedOutput(t *testing.T, c *client.Client, id, execID string) string {
	return recordedOutput(t, c, id, "exec.output", "exec_id", execID)
}

// recordedOutput is the output (stdout, or a terminal's) that events of
// type typ in a sandbox's audit log recorded where field key is value, in
// order.
func recordedOutput(t *testing.T, c *client.Client, id, typ, key, value string) string {
	t.Helper()
	events := must[[]client.AuditEvent](t)(c.AuditEvents(ctx, id, client.AuditQuery{Types: []string{typ}}))
	var out strings.Builder
	for _, e := range events {
		var d map[string]any
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		data, _ := d["data"].(string)
		stream, _ := d["stream"].(string)
		if d[key] != value || !slices.Contains([]string{"stdout", ""}, stream) {
			continue
		}
		if d["encoding"] == "base64" {
			b, _ := base64.StdEncoding.DecodeString(data)
			data = string(b)
		}
		out.WriteString(data)
	}
	return out.String()
}

// Closing the stdin of a process that has ended (and whose job the agent
// has forgotten) is done, as closing a pipe twice is; writing to it is a
// conflict. The E2B SDK's commands.run closes stdin right after the start,
// when a short command may be over already.
func TestEndedProcessStdin(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	p := must[client.Process](t)(c.StartProcess(ctx, sb.ID, client.ExecRequest{Command: "echo hi"}, ""))
	_, exit, _, err := c.ProcessOutput(ctx, sb.ID, p.Pid, 0, true, nil, nil)
	if err != nil || exit == nil {
		t.Fatalf("end: %+v %v", exit, err)
	}
	if err := c.CloseStdin(ctx, sb.ID, p.Pid); err != nil {
		t.Errorf("close the stdin of an ended process: %v", err)
	}
	if err := c.WriteStdin(ctx, sb.ID, p.Pid, strings.NewReader("late")); !errors.Is(err, client.ErrConflict) {
		t.Errorf("write to the stdin of an ended process: %v, want a conflict", err)
	}
}

// TestAcknowledgedAuditSurvivesKill: an event the API has answered for is
// in the store before the answer leaves, so a kill -9 right after it loses
// none: each exec's start, output and exit and each file written are in
// the audit log under the next daemon, and the chain verifies.
func TestAcknowledgedAuditSurvivesKill(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	var execs []string
	for i := range 3 {
		res := must[client.ExecResult](t)(c.Exec(ctx, sb.ID, client.ExecRequest{Command: fmt.Sprintf("echo ack-%d", i), Timeout: time.Minute}))
		execs = append(execs, res.ExecID)
		must[int64](t)(c.WriteFile(ctx, sb.ID, fmt.Sprintf("/tmp/ack-%d", i), strings.NewReader("x"), 0o644))
		// No pause: the kill lands within the batch's linger.
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
		s.start()
		c = s.admin()
	}
	events := must[[]client.AuditEvent](t)(c.AuditEvents(ctx, sb.ID, client.AuditQuery{}))
	have := map[string]bool{}
	for _, e := range events {
		var d struct {
			ExecID string `json:"exec_id"`
			Path   string `json:"path"`
			Data   string `json:"data"`
		}
		json.Unmarshal(e.Data, &d)
		have[e.Type+" "+d.ExecID+d.Path+strings.TrimSpace(d.Data)] = true
	}
	for i, id := range execs {
		for _, want := range []string{"exec.started " + id, "exec.output " + id + fmt.Sprintf("ack-%d", i), "exec.exited " + id,
			fmt.Sprintf("file.written /tmp/ack-%d", i)} {
			if !have[want] {
				t.Errorf("acknowledged, then killed: no %q in the audit log", want)
			}
		}
	}
	if v := must[client.AuditVerify](t)(c.VerifyAudit(ctx, sb.ID)); !v.OK {
		t.Errorf("audit chain: %+v", v)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	assertNoSandboxesLeft(t, s, sb.ID)
}

// TestOutputWhileDownIsBounded: ~39 MB printed by a background process
// while no daemon runs is kept by the agent up to the output bound: after
// the restart the output from offset 0 says how much was dropped, the
// bytes kept are exactly the newest ones, and the agent's memory grew by
// far less than what was printed.
func TestOutputWhileDownIsBounded(t *testing.T) {
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			s := startServer(t, "")
			c := s.admin()
			sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
			// The flood starts 3 s later, when no daemon runs.
			p := must[client.Process](t)(c.StartProcess(ctx, sb.ID, client.ExecRequest{Command: "sleep 3; seq 1 5000000; echo end"}, "flood"))
			agent := initPid(t, s, sb.ID)
			before := vmHWM(t, agent)
			restartServer(t, s, how, 8*time.Second)
			c = s.admin()
			var out bytes.Buffer
			_, exit, dropped, err := c.ProcessOutput(ctx, sb.ID, p.Pid, 0, true, &out, nil)
			if err != nil || exit == nil || exit.ExitCode != 0 {
				t.Fatalf("the flood's end: %+v %v", exit, err)
			}
			var want bytes.Buffer
			for i := 1; i <= 5000000; i++ {
				fmt.Fprintf(&want, "%d\n", i)
			}
			want.WriteString("end\n")
			if dropped+int64(out.Len()) != int64(want.Len()) || out.Len() > 4<<20 || out.Len() < 4<<20-64<<10 {
				t.Fatalf("kept %d bytes and dropped %d of %d, want the newest 4 MiB kept and the rest dropped", out.Len(), dropped, want.Len())
			}
			if !bytes.Equal(out.Bytes(), want.Bytes()[dropped:]) {
				t.Fatalf("the bytes kept are not the newest %d printed", out.Len())
			}
			if grew := vmHWM(t, agent) - before; grew > 24<<20 {
				t.Errorf("the agent's peak memory grew by %d MiB for %d MiB printed", grew>>20, want.Len()>>20)
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

// vmHWM is a process's peak resident memory in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	return rssKB(t, pid, "VmHWM") << 10
}
