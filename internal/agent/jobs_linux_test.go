package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// attached is what an attach delivered.
type attached struct {
	out     string
	dropped int64
	end     runtime.JobEnd
}

func attachAll(t *testing.T, ctx context.Context, c *Client, pid int, off int64, follow bool) (attached, error) {
	t.Helper()
	var a attached
	var buf bytes.Buffer
	next := off
	mode := runtime.AttachRead
	if follow {
		mode = runtime.AttachFollow
	}
	end, err := c.Attach(ctx, pid, off, mode, func(o runtime.JobOutput) error {
		if o.Dropped > 0 {
			a.dropped += o.Dropped
			next = o.Offset
			return nil
		}
		if o.Offset != next {
			return fmt.Errorf("output at %d, want %d", o.Offset, next)
		}
		buf.Write(o.Data)
		next += int64(len(o.Data))
		return nil
	})
	a.out, a.end = buf.String(), end
	return a, err
}

// A job keeps running and keeping its output after the connection that
// started it is gone, and its exit status until it is forgotten: what lets
// a daemon restart without losing the sandbox's live work.
func TestJobOutlivesItsClient(t *testing.T) {
	for mode, c := range servers(t, t.TempDir()) {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			info, err := c.Spawn(ctx, runtime.ExecRequest{Shell: `i=0; while [ $i -lt 30 ]; do echo $i; i=$((i+1)); sleep 0.02; done; echo oops >&2; exit 7`}, runtime.JobOptions{Meta: json.RawMessage(`{"tag":"counter"}`)})
			cancel() // the client goes away at once
			if err != nil {
				t.Fatal(err)
			}
			if !info.Running || info.Pid <= 0 {
				t.Fatalf("spawned: %+v", info)
			}
			var want strings.Builder
			for i := range 30 {
				fmt.Fprintf(&want, "%d\n", i)
			}
			want.WriteString("oops\n")
			for _, round := range []string{"following", "after the exit"} {
				a, err := attachAll(t, context.Background(), c, info.Pid, 0, true)
				if err != nil {
					t.Fatalf("%s: %v", round, err)
				}
				if a.out != want.String() || a.dropped != 0 || a.end.Exit == nil || a.end.Exit.Code != 7 {
					t.Fatalf("%s: output %q dropped %d end %+v", round, a.out, a.dropped, a.end)
				}
			}
			// From an offset: the rest, exactly.
			a, err := attachAll(t, context.Background(), c, info.Pid, int64(len("0\n1\n")), false)
			if err != nil || a.out != strings.TrimPrefix(want.String(), "0\n1\n") {
				t.Fatalf("from offset 4: %q, %v", a.out, err)
			}
			jobs, err := c.Jobs(context.Background())
			if err != nil || len(jobs) != 1 || jobs[0].Running || jobs[0].Exit == nil || jobs[0].Exit.Code != 7 || jobs[0].Output != int64(want.Len()) || string(jobs[0].Meta) != `{"tag":"counter"}` {
				t.Fatalf("jobs: %+v, %v", jobs, err)
			}
			if err := c.Forget(context.Background(), info.Pid); err != nil {
				t.Fatal(err)
			}
			if _, err := attachAll(t, context.Background(), c, info.Pid, 0, false); !errors.Is(err, runtime.ErrNotFound) {
				t.Errorf("attach to a forgotten job: %v", err)
			}
			if jobs, _ := c.Jobs(context.Background()); len(jobs) != 0 {
				t.Errorf("jobs after forget: %+v", jobs)
			}
		})
	}
}

// A job that writes more than its buffer keeps the newest bytes, exactly
// the bound, and a reader from offset 0 is told how many it missed.
func TestJobOutputIsBounded(t *testing.T) {
	c := startReaper(t, t.TempDir())
	const bound = 64 << 10
	info, err := c.Spawn(context.Background(), runtime.ExecRequest{Shell: `head -c 1048576 /dev/zero | tr '\0' a; echo END`}, runtime.JobOptions{Buffer: bound})
	if err != nil {
		t.Fatal(err)
	}
	// Read once it has ended (a follower that keeps up gets it all).
	waitFor(t, "the job to end", func() bool {
		jobs, err := c.Jobs(context.Background())
		return err == nil && len(jobs) == 1 && !jobs[0].Running
	})
	a, err := attachAll(t, context.Background(), c, info.Pid, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(1048576 + len("END\n"))
	if int64(len(a.out)) != bound || a.dropped != total-bound || !strings.HasSuffix(a.out, "aaaaEND\n") {
		t.Fatalf("kept %d bytes, dropped %d, ends %q", len(a.out), a.dropped, a.out[max(0, len(a.out)-8):])
	}
	jobs, err := c.Jobs(context.Background())
	if err != nil || len(jobs) != 1 || jobs[0].Dropped != total-bound || jobs[0].Output != total {
		t.Fatalf("jobs: %+v, %v", jobs, err)
	}
}

// Input reaches the job's stdin from any connection; a follower that
// detaches leaves the job running; closing stdin ends a reader.
func TestJobInputAndDetach(t *testing.T) {
	c := startReaper(t, t.TempDir())
	info, err := c.Spawn(context.Background(), runtime.ExecRequest{Argv: []string{"cat"}}, runtime.JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Input(context.Background(), info.Pid, strings.NewReader("hello\n"), false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "cat to echo its input", func() bool {
		a, err := attachAll(t, context.Background(), c, info.Pid, 0, false)
		return err == nil && a.out == "hello\n" && a.end.Info != nil && a.end.Info.Running
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := attachAll(t, ctx, c, info.Pid, 6, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a follower of a running job: %v", err)
	}
	if err := c.Input(context.Background(), info.Pid, strings.NewReader("again\n"), true); err != nil {
		t.Fatal(err)
	}
	a, err := attachAll(t, context.Background(), c, info.Pid, 6, true)
	if err != nil || a.out != "again\n" || a.end.Exit == nil || a.end.Exit.Code != 0 {
		t.Fatalf("after stdin closed: %q %+v %v", a.out, a.end, err)
	}
	if err := c.Input(context.Background(), info.Pid, strings.NewReader("late"), false); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("input to an ended job: %v", err)
	}
}

func TestJobTimeoutKillsIt(t *testing.T) {
	c := startReaper(t, t.TempDir())
	info, err := c.Spawn(context.Background(), runtime.ExecRequest{Argv: []string{"sleep", "1000"}, Timeout: 200 * time.Millisecond}, runtime.JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := attachAll(t, context.Background(), c, info.Pid, 0, true)
	if err != nil || a.end.Exit == nil || !a.end.Exit.TimedOut || a.end.Exit.Signal != 9 {
		t.Fatalf("end %+v, %v", a.end, err)
	}
}

func TestJobRefusals(t *testing.T) {
	c := startReaper(t, t.TempDir())
	if v, err := c.Version(context.Background()); err != nil || v != ProtocolVersion {
		t.Errorf("version %d, %v", v, err)
	}
	if _, err := c.Spawn(context.Background(), runtime.ExecRequest{Argv: []string{"true"}}, runtime.JobOptions{Buffer: MaxJobBuffer + 1}); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("a buffer over the bound: %v", err)
	}
	info, err := c.Spawn(context.Background(), runtime.ExecRequest{Argv: []string{"sleep", "1000"}}, runtime.JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Signal(context.Background(), info.Pid, 9, false)
	if _, err := attachAll(t, context.Background(), c, info.Pid, 1, false); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("an offset past the output: %v", err)
	}
	if err := c.Forget(context.Background(), info.Pid); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("forget a running job: %v", err)
	}
	big := json.RawMessage(`"` + strings.Repeat("m", MaxJobMeta) + `"`)
	if _, err := c.Spawn(context.Background(), runtime.ExecRequest{Argv: []string{"true"}}, runtime.JobOptions{Meta: big}); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("meta over the bound: %v", err)
	}
	if err := c.Forget(context.Background(), 99999); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("forget no job: %v", err)
	}
	if err := c.Input(context.Background(), 99999, strings.NewReader("x"), false); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("input to no job: %v", err)
	}
}

// A terminal job's input held open, as a session's is: typed lines and
// resizes reach the shell, and the job's end ends the input op (a version
// 2 agent held the job's stdin, and with it the job, until the client let
// go).
func TestJobTerminalInputHeldOpen(t *testing.T) {
	for mode, c := range servers(t, t.TempDir()) {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			info, err := c.Spawn(ctx, runtime.ExecRequest{Argv: []string{"/bin/sh", "-i"}, TTY: &runtime.TTYSize{Cols: 80, Rows: 24}}, runtime.JobOptions{})
			if err != nil {
				t.Fatal(err)
			}
			in, err := c.OpenInput(ctx, info.Pid)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			if err := in.Resize(runtime.TTYSize{Cols: 132, Rows: 50}); err != nil {
				t.Fatal(err)
			}
			if _, err := in.Write([]byte("stty size; exit 3\n")); err != nil {
				t.Fatal(err)
			}
			done := make(chan attached, 1)
			go func() {
				a, err := attachAll(t, ctx, c, info.Pid, 0, true)
				if err != nil {
					t.Error(err)
				}
				done <- a
			}()
			select {
			case a := <-done:
				if !strings.Contains(a.out, "50 132") || a.end.Exit == nil || a.end.Exit.Code != 3 {
					t.Fatalf("output %q end %+v", a.out, a.end)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the job did not end while its input was open")
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, err := in.Write([]byte("x"))
				if err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("writes to an ended job's input still succeed")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := c.Forget(ctx, info.Pid); err != nil {
				t.Fatal(err)
			}
		})
	}
}
