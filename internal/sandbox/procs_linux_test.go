package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// collect is a ProcStream that records what it is sent.
type collect struct {
	out     strings.Builder
	offsets []int64
	dropped int64
	exit    *sandbox.ExecResult
	next    int64
	ended   bool
	stopAt  int // return an error after this many outputs (0: never)
}

var errStop = errors.New("reader went away")

func (c *collect) Output(_ string, off int64, data []byte) error {
	c.out.Write(data)
	c.offsets = append(c.offsets, off)
	c.next = off + int64(len(data))
	if c.stopAt > 0 && len(c.offsets) >= c.stopAt {
		return errStop
	}
	return nil
}
func (c *collect) Dropped(_, n int64) error { c.dropped += n; return nil }
func (c *collect) Exit(res sandbox.ExecResult, next int64) error {
	c.exit, c.next = &res, next
	return nil
}
func (c *collect) End(next int64) error { c.ended, c.next = true, next; return nil }

func TestBackgroundProcess(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
	ctx := context.Background()

	// A process printing a line a fifth of a second; a reader leaves after
	// two lines and comes back from its offset: every line exactly once.
	p, err := svc.StartBackground(ctx, c, sb.ID, sandbox.ExecRequest{Command: "for i in 1 2 3 4 5 6; do echo line$i; sleep 0.2; done", Background: true, Tag: "ticker"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Pid < 1 || p.Tag != "ticker" {
		t.Fatalf("started %+v", p)
	}
	first := &collect{stopAt: 2}
	if err := svc.ProcessOutput(ctx, c, sb.ID, p.Pid, 0, true, first); !errors.Is(err, errStop) {
		t.Fatalf("first reader: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // output goes on while nobody reads
	second := &collect{}
	if err := svc.ProcessOutput(ctx, c, sb.ID, p.Pid, first.next, true, second); err != nil {
		t.Fatal(err)
	}
	got := first.out.String() + second.out.String()
	if got != "line1\nline2\nline3\nline4\nline5\nline6\n" || second.exit == nil || second.exit.ExitCode != 0 {
		t.Errorf("across a reconnect: %q, exit %+v", got, second.exit)
	}
	// Not following a running process ends with End; reading an ended
	// one from 0 replays everything.
	again := &collect{}
	if err := svc.ProcessOutput(ctx, c, sb.ID, p.Pid, 0, false, again); err != nil || again.out.String() != got {
		t.Errorf("replay: %q, %v", again.out.String(), err)
	}
	if err := svc.ProcessOutput(ctx, c, sb.ID, p.Pid, 1<<20, false, &collect{}); !errors.Is(err, sandbox.ErrInvalid) {
		t.Errorf("offset past the end: %v", err)
	}

	// stdin and signals reach it.
	cat, err := svc.StartBackground(ctx, c, sb.ID, sandbox.ExecRequest{Command: "trap 'echo got-usr1' USR1; while read l; do echo \"in:$l\"; done; echo eof; while :; do sleep 30 & wait; done", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.WriteStdin(ctx, c, sb.ID, cat.Pid, strings.NewReader("hello\n")); err != nil {
		t.Fatal(err)
	}
	if err := svc.CloseStdin(ctx, c, sb.ID, cat.Pid); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, svc, c, sb.ID, cat.Pid, "in:hello\neof\n")
	if err := svc.SignalProcess(ctx, c, sb.ID, cat.Pid, int(syscall.SIGUSR1)); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, svc, c, sb.ID, cat.Pid, "got-usr1\n")
	list, err := svc.ListProcesses(ctx, c, sb.ID)
	if err != nil || len(list) != 2 || list[0].State != "exited" || list[1].State != "running" {
		t.Errorf("list: %+v, %v", list, err)
	}
	// Another tenant sees none of it.
	other := tenant(t, 0, 0)
	if _, err := svc.ListProcesses(ctx, other, sb.ID); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("other tenant lists: %v", err)
	}
	if _, err := svc.WriteStdin(ctx, other, sb.ID, cat.Pid, strings.NewReader("x")); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("other tenant writes stdin: %v", err)
	}

	// Destroying the sandbox ends a follower with an error, at once.
	done := make(chan error, 1)
	go func() { done <- svc.ProcessOutput(ctx, c, sb.ID, cat.Pid, 0, true, &collect{}) }()
	time.Sleep(100 * time.Millisecond)
	if err := svc.Delete(ctx, c, sb.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("the follower ended without an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the follower still waits after the sandbox was destroyed")
	}
}

// waitOutput follows a process until its output holds want.
func waitOutput(t *testing.T, svc *sandbox.Service, c sandbox.Caller, id string, pid int, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := &watch{want: want}
	err := svc.ProcessOutput(ctx, c, id, pid, 0, true, w)
	if !errors.Is(err, errStop) {
		t.Fatalf("waiting for %q in %q: %v", want, w.out.String(), err)
	}
}

type watch struct {
	collect
	want string
}

func (w *watch) Output(s string, off int64, data []byte) error {
	w.collect.Output(s, off, data)
	if strings.Contains(w.out.String(), w.want) {
		return errStop
	}
	return nil
}
