package sandbox_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/store"
)

// auditEvents reads a sandbox's whole log.
func auditEvents(t *testing.T, svc *sandbox.Service, c sandbox.Caller, id string, types ...string) []audit.Event {
	t.Helper()
	var out []audit.Event
	err := svc.AuditLog(context.Background(), c, id, store.AuditFilter{Types: types}, func(e audit.Event) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func eventData(t *testing.T, e audit.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// outputOf concatenates the recorded output pieces of the events.
func outputOf(t *testing.T, events []audit.Event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		d := eventData(t, e)
		s, _ := d["data"].(string)
		if d["encoding"] == "base64" {
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatal(err)
			}
			s = string(raw)
		}
		b.WriteString(s)
	}
	return b.String()
}

// TestAuditOutputCap: past the sandbox's output allowance one marker
// says so, and commands are still recorded, without their output.
func TestAuditOutputCap(t *testing.T) {
	svc, err := sandbox.NewManager(context.Background(), shared, testRuntime(t), sandbox.Options{AuditOutputCap: 10000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{})
	run(t, svc, c, sb.ID, "head -c 6000 /dev/zero | tr '\\0' a")
	run(t, svc, c, sb.ID, "head -c 6000 /dev/zero | tr '\\0' b")
	run(t, svc, c, sb.ID, "echo after")
	events := auditEvents(t, svc, c, sb.ID)
	var capped, started, exited int
	for _, e := range events {
		switch e.Type {
		case audit.OutputCapped:
			capped++
		case audit.ExecStarted:
			started++
		case audit.ExecExited:
			exited++
		}
	}
	out := outputOf(t, auditEvents(t, svc, c, sb.ID, audit.ExecOutput))
	if capped != 1 || started != 3 || exited != 3 || len(out) > 10000 || !strings.HasPrefix(out, strings.Repeat("a", 6000)) || strings.Contains(out, "after") {
		t.Errorf("capped %d, started %d, exited %d, %d output bytes recorded", capped, started, exited, len(out))
	}
	if r, err := svc.VerifyAudit(context.Background(), c, sb.ID); err != nil || !r.OK {
		t.Errorf("verify: %+v %v", r, err)
	}
}

// TestAuditBackgroundAndTerminal: a background process's output and end,
// and what a client types into a terminal and its resizes.
func TestAuditBackgroundAndTerminal(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	sb := create(t, svc, c, sandbox.CreateRequest{})
	p, err := svc.StartBackground(ctx, c, sb.ID, sandbox.ExecRequest{Command: "echo one; sleep 0.2; echo two >&2"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.ExecID, "ex-") {
		t.Errorf("background exec id %q", p.ExecID)
	}
	ses, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{Mode: sandbox.SessionModeInteractive, Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	term, err := svc.AttachSession(ctx, c, sb.ID, ses.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	term.Write([]byte("echo typed-$((40+2))\r"))
	if err := term.Resize(100, 30); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := outputOf(t, auditEvents(t, svc, c, sb.ID, audit.SessionOutput))
		exited := auditEvents(t, svc, c, sb.ID, audit.ExecExited)
		if strings.Contains(out, "typed-42") && len(exited) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminal output recorded: %q; exits %d", out, len(exited))
		}
		time.Sleep(50 * time.Millisecond)
	}
	term.Close()
	if in := outputOf(t, auditEvents(t, svc, c, sb.ID, audit.SessionInput)); in != "echo typed-$((40+2))\r" {
		t.Errorf("terminal input recorded: %q", in)
	}
	if rs := auditEvents(t, svc, c, sb.ID, audit.SessionResized); len(rs) != 1 || eventData(t, rs[0])["cols"] != 100.0 {
		t.Errorf("resizes recorded: %v", rs)
	}
	var stdout, stderr []audit.Event
	for _, e := range auditEvents(t, svc, c, sb.ID, audit.ExecOutput) {
		if eventData(t, e)["stream"] == "stdout" {
			stdout = append(stdout, e)
		} else {
			stderr = append(stderr, e)
		}
	}
	if outputOf(t, stdout) != "one\n" || outputOf(t, stderr) != "two\n" {
		t.Errorf("background output recorded: %q %q", outputOf(t, stdout), outputOf(t, stderr))
	}
	st := auditEvents(t, svc, c, sb.ID, audit.ExecStarted)
	if len(st) != 1 || eventData(t, st[0])["background"] != true || eventData(t, st[0])["exec_id"] != p.ExecID {
		t.Errorf("background start recorded: %v", st)
	}
}

// TestAuditDeleteRecordsLiveEndsFirst: deleting a sandbox with sessions
// and a background process still running records their ends before the
// sandbox's own, every time (the followers that record them are waited
// for), so the log reads in the order things happened.
func TestAuditDeleteRecordsLiveEndsFirst(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	for i := range 5 {
		sb := create(t, svc, c, sandbox.CreateRequest{})
		if _, err := svc.StartBackground(ctx, c, sb.ID, sandbox.ExecRequest{Command: "sleep 60"}); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{sandbox.SessionModeExec, sandbox.SessionModeInteractive} {
			if _, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{Mode: mode}); err != nil {
				t.Fatal(err)
			}
		}
		if err := svc.Delete(ctx, c, sb.ID); err != nil {
			t.Fatal(err)
		}
		var tail []string
		for _, e := range auditEvents(t, svc, c, sb.ID) {
			switch e.Type {
			case audit.SessionEnded, audit.ExecExited, audit.SandboxDestroyed:
				tail = append(tail, e.Type)
			}
		}
		if len(tail) != 4 || tail[3] != audit.SandboxDestroyed {
			t.Fatalf("round %d: ends recorded in order %v, want the two sessions' and the process's before %s", i, tail, audit.SandboxDestroyed)
		}
	}
}

// TestAuditExpiry: the daemon's own doings are the system's.
func TestAuditExpiry(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 1})
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := auditEvents(t, svc, c, sb.ID, audit.SandboxExpired)
		if len(evs) == 1 {
			if evs[0].Actor != audit.ActorSystem || eventData(t, evs[0])["reason"] != "timeout" {
				t.Errorf("expiry recorded as %+v", evs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no sandbox.expired event 10 s after a 1 s timeout")
		}
		time.Sleep(100 * time.Millisecond)
	}
	all := auditEvents(t, svc, c, sb.ID)
	if all[0].Type != audit.SandboxCreated || all[0].Actor != c.KeyID {
		t.Errorf("first event: %+v", all[0])
	}
}
