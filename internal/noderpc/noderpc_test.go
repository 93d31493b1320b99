package noderpc_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/internal/noderpc"
	"github.com/airlockhq/airlock/internal/runtime"
)

// The runtime's methods answer through the hop as the node's runtime
// answers beside it.
func TestRuntimeCalls(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := newID()
	sb := e.create(t, e.c, runtime.Spec{ID: id})
	if sb.ID() != id {
		t.Errorf("created %q, want %q", sb.ID(), id)
	}
	got, err := e.c.Get(ctx, id)
	if err != nil || got.ID() != id {
		t.Fatalf("get: %v, %v", got, err)
	}
	want, _ := e.rt.List(ctx)
	ids, err := e.c.List(ctx)
	if diff := cmp.Diff(want, ids); err != nil || diff != "" || len(ids) != 1 {
		t.Errorf("list: %v (-node +client)\n%s", err, diff)
	}
	if diff := cmp.Diff(e.rt.Protections(), e.c.Protections()); diff != "" {
		t.Errorf("protections (-node +client)\n%s", diff)
	}
	mustSh(t, sb, "head -c 1000000 /dev/zero > /home/user/f")
	st, err := sb.Stats(ctx)
	if err != nil || st.MemoryBytes <= 0 || st.DiskBytes < 1000000 || st.CPUSeconds <= 0 {
		t.Errorf("stats: %+v, %v", st, err)
	}
	v, err := sb.(runtime.AgentVersioner).AgentVersion(ctx)
	lv, _ := e.local(t, sb).(runtime.AgentVersioner).AgentVersion(ctx)
	if err != nil || v != lv || v < 1 {
		t.Errorf("agent version %d, %v; the node says %d", v, err, lv)
	}
	for i := range 2 { // idempotent
		if err := sb.Destroy(ctx); err != nil {
			t.Fatalf("destroy %d: %v", i, err)
		}
	}
	_, err = e.c.Get(ctx, id)
	_, lerr := e.rt.Get(ctx, id)
	if !errors.Is(err, runtime.ErrNotFound) || lerr == nil || err.Error() != lerr.Error() {
		t.Errorf("get after destroy: %v, want %v", err, lerr)
	}
	if _, err := sb.Stat(ctx, "/"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("stat in a destroyed sandbox: %v", err)
	}
}

// A template built in a sandbox through the hop is kept on the node, and
// sandboxes made from it have what the build put in /usr/local.
func TestTemplates(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	build := e.create(t, e.c, runtime.Spec{Build: true})
	mustSh(t, build, `mkdir -p /usr/local/bin && printf '#!/bin/sh\necho hello from the template\n' > /usr/local/bin/hello && chmod 755 /usr/local/bin/hello`)
	info, err := e.c.CommitTemplate(ctx, build.ID(), runtime.TemplateInfo{Name: "nrpc-t", Description: "test", Labels: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := build.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	want, _ := e.rt.Template(ctx, "nrpc-t")
	got, err := e.c.Template(ctx, "nrpc-t")
	if diff := cmp.Diff(want, got); err != nil || diff != "" || info.SizeBytes == 0 {
		t.Errorf("template: %v (-node +client)\n%s", err, diff)
	}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("commit's answer (-node +client)\n%s", diff)
	}
	wantList, _ := e.rt.Templates(ctx)
	list, err := e.c.Templates(ctx)
	if diff := cmp.Diff(wantList, list); err != nil || diff != "" || len(list) != 2 {
		t.Errorf("templates: %v (-node +client)\n%s", err, diff)
	}
	sb := e.create(t, e.c, runtime.Spec{Template: "nrpc-t"})
	if out := mustSh(t, sb, "hello"); out != "hello from the template\n" {
		t.Errorf("a sandbox from the template runs %q", out)
	}
	if err := e.c.DeleteTemplate(ctx, "nrpc-t"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Template(ctx, "nrpc-t"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("a deleted template: %v", err)
	}
}

// Exec's request and status cross exactly: the same request gives the
// same status through the hop as beside the runtime.
func TestExec(t *testing.T) {
	e := newEnv(t)
	sb := e.create(t, e.c, runtime.Spec{Env: map[string]string{"FROM_SPEC": "spec"}})
	hog := e.create(t, e.c, runtime.Spec{Limits: runtime.Limits{MemoryMB: 64, TmpMB: 16}})
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB: many frames
	for _, tc := range []struct {
		name           string
		sb             runtime.Sandbox
		req            runtime.ExecRequest
		stdout, stderr string
		st             runtime.ExitStatus
	}{
		{"streams, env, cwd", sb, runtime.ExecRequest{Shell: `cat; echo "$FOO $FROM_SPEC $(pwd)" >&2; exit 3`,
			Stdin: strings.NewReader("hello"), Env: map[string]string{"FOO": "foo"}, Cwd: "/tmp"},
			"hello", "foo spec /tmp\n", runtime.ExitStatus{Code: 3}},
		{"argv", sb, runtime.ExecRequest{Argv: []string{"printf", "%s|", "a b", "c"}}, "a b|c|", "", runtime.ExitStatus{}},
		{"large stdin", sb, runtime.ExecRequest{Argv: []string{"cat"}, Stdin: strings.NewReader(big)}, big, "", runtime.ExitStatus{}},
		{"no stdin", sb, runtime.ExecRequest{Shell: "cat; echo end"}, "end\n", "", runtime.ExitStatus{}},
		{"timeout", sb, runtime.ExecRequest{Shell: "sleep 30", Timeout: 300 * time.Millisecond}, "", "",
			runtime.ExitStatus{Code: 137, Signal: 9, TimedOut: true}},
		{"signal", sb, runtime.ExecRequest{Shell: "kill -TERM $$"}, "", "", runtime.ExitStatus{Code: 143, Signal: 15}},
		{"oom", hog, runtime.ExecRequest{Shell: `python3 -c 'a = b"a" * (512 << 20)'`}, "", "",
			runtime.ExitStatus{Code: 137, OOMKilled: true}}, // the shell reports the kill as exit 137
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if s, ok := req.Stdin.(*strings.Reader); ok {
				s.Seek(0, io.SeekStart)
			}
			r := run(t, tc.sb, req)
			if r.stdout != tc.stdout || (tc.name != "oom" && r.stderr != tc.stderr) {
				t.Errorf("stdout %.100q stderr %.100q, want %.100q, %.100q", r.stdout, r.stderr, tc.stdout, tc.stderr)
			}
			if diff := cmp.Diff(tc.st, r.st, cmpopts.IgnoreFields(runtime.ExitStatus{}, "Duration")); diff != "" {
				t.Errorf("status (-want +got)\n%s", diff)
			}
			if r.st.Duration <= 0 || r.st.Duration > time.Minute {
				t.Errorf("duration %v", r.st.Duration)
			}
			if tc.name == "timeout" && r.st.Duration < 300*time.Millisecond {
				t.Errorf("timed out after %v, before its timeout", r.st.Duration)
			}
			// Beside the runtime, the same request ends the same way.
			if s, ok := req.Stdin.(*strings.Reader); ok {
				s.Seek(0, io.SeekStart)
			}
			l := run(t, e.local(t, tc.sb), req)
			if diff := cmp.Diff(l.st, r.st, cmpopts.IgnoreFields(runtime.ExitStatus{}, "Duration")); diff != "" {
				t.Errorf("status (-node +client)\n%s", diff)
			}
		})
	}
	t.Run("bad request", func(t *testing.T) {
		_, err := sb.Exec(context.Background(), runtime.ExecRequest{Shell: "true", Timeout: -1})
		_, lerr := e.local(t, sb).Exec(context.Background(), runtime.ExecRequest{Shell: "true", Timeout: -1})
		if !errors.Is(err, runtime.ErrInvalid) || lerr == nil || err.Error() != lerr.Error() {
			t.Errorf("negative timeout: %v, the node says %v", err, lerr)
		}
	})
}

// A process on a terminal is one (a TTY, its size), typed input reaches
// it, and a resize while it runs changes its size.
func TestExecTTY(t *testing.T) {
	e := newEnv(t)
	sb := e.create(t, e.c, runtime.Spec{})
	in, typed := io.Pipe()
	defer typed.Close()
	var out lockedBuf
	p, err := sb.Start(context.Background(), runtime.ExecRequest{
		Argv: []string{"/bin/sh", "-i"}, Stdin: in, Stdout: &out, TTY: &runtime.TTYSize{Cols: 100, Rows: 30},
	})
	if err != nil {
		t.Fatal(err)
	}
	shows := func(s string) func() bool { return func() bool { return strings.Contains(out.String(), s) } }
	io.WriteString(typed, "stty size; test -t 0 && echo IS-A-TTY\n")
	waitFor(t, "the first size", shows("30 100"))
	waitFor(t, "a terminal", shows("IS-A-TTY"))
	r := p.(runtime.Resizer)
	if err := r.Resize(runtime.TTYSize{Cols: 132, Rows: 43}); err != nil {
		t.Fatal(err)
	}
	io.WriteString(typed, "stty size\n")
	waitFor(t, "the new size", shows("43 132"))
	if err := r.Resize(runtime.TTYSize{}); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("resize to 0x0: %v", err)
	}
	io.WriteString(typed, "exit 3\n")
	st, err := p.Wait()
	if err != nil || st.Code != 3 {
		t.Errorf("exit: %+v, %v", st, err)
	}
	if err := r.Resize(runtime.TTYSize{Cols: 80, Rows: 24}); err == nil {
		t.Error("resized a process that has ended")
	}
	plain, err := sb.Start(context.Background(), runtime.ExecRequest{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.(runtime.Resizer); ok {
		t.Error("a process without a terminal offers Resize")
	}
	plain.Wait()
}

// Start returns with the process running; Signal reaches it by its pid;
// Wait says how it ended.
func TestStartWaitSignal(t *testing.T) {
	e := newEnv(t)
	sb := e.create(t, e.c, runtime.Spec{})
	var out lockedBuf
	p, err := sb.Start(context.Background(), runtime.ExecRequest{Shell: "echo $$; exec sleep 60", Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pid", func() bool { return strings.HasSuffix(out.String(), "\n") })
	if pid, _ := strconv.Atoi(strings.TrimSpace(out.String())); pid != p.Pid() || pid <= 0 {
		t.Errorf("Pid %d, the process says %q", p.Pid(), out.String())
	}
	if err := sb.Signal(context.Background(), p.Pid(), int(syscall.SIGTERM)); err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait()
	if err != nil || st.Signal != 15 || st.Code != 143 {
		t.Errorf("after SIGTERM: %+v, %v", st, err)
	}
	if st2, err2 := p.Wait(); st2 != st || err2 != err {
		t.Errorf("a second Wait: %+v, %v", st2, err2)
	}
	err = sb.Signal(context.Background(), 99999, 9)
	lerr := e.local(t, sb).Signal(context.Background(), 99999, 9)
	if err == nil || lerr == nil || err.Error() != lerr.Error() || errors.Is(err, runtime.ErrNotFound) != errors.Is(lerr, runtime.ErrNotFound) {
		t.Errorf("signal to no process: %v, the node says %v", err, lerr)
	}
}

// The file methods act as beside the runtime, errors included.
func TestFiles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(t, e.c, runtime.Spec{})
	local := e.local(t, sb)
	if n, err := sb.WriteFile(ctx, "/home/user/a.txt", strings.NewReader("hello"), 0o640); err != nil || n != 5 {
		t.Fatalf("write: %d, %v", n, err)
	}
	var b bytes.Buffer
	if n, err := sb.ReadFile(ctx, "/home/user/a.txt", &b); err != nil || n != 5 || b.String() != "hello" {
		t.Fatalf("read: %d %q, %v", n, b.String(), err)
	}
	if err := sb.MkdirAll(ctx, "/home/user/d/e", 0o750); err != nil {
		t.Fatal(err)
	}
	if err := sb.Rename(ctx, "/home/user/a.txt", "/home/user/d/b.txt"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/home/user/d/b.txt", "/home/user/d/e"} {
		want, _ := local.Stat(ctx, p)
		got, err := sb.Stat(ctx, p)
		if diff := cmp.Diff(want, got); err != nil || diff != "" {
			t.Errorf("stat %s: %v (-node +client)\n%s", p, err, diff)
		}
	}
	if fi, _ := sb.Stat(ctx, "/home/user/d/b.txt"); fi.Mode.Perm() != 0o640 || fi.Size != 5 {
		t.Errorf("written file: %+v", fi)
	}
	want, _ := local.ListDir(ctx, "/home/user/d")
	list, err := sb.ListDir(ctx, "/home/user/d")
	if diff := cmp.Diff(want, list); err != nil || diff != "" || len(list) != 2 {
		t.Errorf("list: %v (-node +client)\n%s", err, diff)
	}
	sameError(t, "remove a full directory", sb.Remove(ctx, "/home/user/d", false), local.Remove(ctx, "/home/user/d", false))
	if err := sb.Remove(ctx, "/home/user/d", true); err != nil {
		t.Fatal(err)
	}
	_, err = sb.Stat(ctx, "/home/user/d")
	_, lerr := local.Stat(ctx, "/home/user/d")
	sameError(t, "stat what was removed", err, lerr)
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("stat what was removed: %v", err)
	}

	boom := errors.New("boom")
	_, err = sb.WriteFile(ctx, "/home/user/half", io.MultiReader(strings.NewReader("part"), iotestErr{boom}), 0)
	if !errors.Is(err, boom) {
		t.Errorf("write from a failing reader: %v", err)
	}
	if _, err := sb.Stat(ctx, "/home/user/half"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("a failed write left a file: %v", err)
	}
	mustSh(t, sb, "printf 0123456789 > /home/user/ten")
	if n, err := sb.ReadFile(ctx, "/home/user/ten", failingWriter{boom}); !errors.Is(err, boom) || n != 0 {
		t.Errorf("read into a failing writer: %d, %v", n, err)
	}
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// sameError fails t unless the client's error reads as the node's and is
// of the same kinds.
func sameError(t *testing.T, what string, got, want error) {
	t.Helper()
	if got == nil || want == nil || got.Error() != want.Error() {
		t.Errorf("%s: %v, the node says %v", what, got, want)
		return
	}
	for _, k := range errorKinds {
		if errors.Is(got, k) != errors.Is(want, k) {
			t.Errorf("%s: %v: errors.Is %v is %v through the hop, %v on the node", what, got, k, errors.Is(got, k), errors.Is(want, k))
		}
	}
	var nre *runtime.NotRegularError
	var re *runtime.RangeError
	if errors.As(got, &nre) != errors.As(want, new(*runtime.NotRegularError)) || errors.As(got, &re) != errors.As(want, new(*runtime.RangeError)) {
		t.Errorf("%s: %v: typed errors differ from the node's", what, got)
	}
}

var errorKinds = []error{
	runtime.ErrNotFound, runtime.ErrInvalid, runtime.ErrUnavailable, runtime.ErrUnsupported, runtime.ErrConflict,
	runtime.ErrPidLimit, runtime.ErrChanged, fs.ErrNotExist, fs.ErrPermission, fs.ErrExist, fs.ErrInvalid,
	syscall.ENOTDIR, syscall.EISDIR, syscall.ENOSPC, syscall.EDQUOT, syscall.ECONNREFUSED,
}

// A 200 MB file goes up and comes back whole, in bounded memory: neither
// side holds more than a few frames.
func TestBigFileBoundedMemory(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(t, e.c, runtime.Spec{})
	const size = 200 << 20
	src := rand.NewChaCha8([32]byte{1})
	up := sha256.New()
	var ms goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var top uint64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			top = max(top, ms.HeapAlloc)
			select {
			case <-stop:
				peak <- top
				return
			case <-t.C:
			}
		}
	}()
	n, err := sb.WriteFile(ctx, "/home/user/big", io.TeeReader(io.LimitReader(src, size), up), 0o600)
	if err != nil || n != size {
		t.Fatalf("write: %d, %v", n, err)
	}
	down := sha256.New()
	n, err = sb.ReadFile(ctx, "/home/user/big", down)
	close(stop)
	top := <-peak
	if err != nil || n != size {
		t.Fatalf("read: %d, %v", n, err)
	}
	if !bytes.Equal(up.Sum(nil), down.Sum(nil)) {
		t.Error("the file came back different")
	}
	if grew := int64(top) - int64(base); grew > 64<<20 {
		t.Errorf("the heap grew by %d MiB during the transfer", grew>>20)
	}
	t.Logf("heap grew by at most %.1f MiB", float64(int64(top)-int64(base))/(1<<20))
}

// Jobs: their output reaches the callback piece by piece with the fields
// the node's runtime gives it, in every attach mode; input reaches them
// by Input and by a held stdin.
func TestJobs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rsb := e.create(t, e.c, runtime.Spec{})
	sb, local := rsb.(runtime.JobRunner), e.local(t, rsb).(runtime.JobRunner)
	info, err := sb.Spawn(ctx, runtime.ExecRequest{
		Shell: `i=0; while [ $i -lt 50 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done; read x; echo "got $x"; exit 4`,
	}, runtime.JobOptions{Meta: json.RawMessage(`{"tag":"t"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Running || info.Pid <= 0 || string(info.Meta) != `{"tag":"t"}` {
		t.Errorf("spawned: %+v", info)
	}
	waitFor(t, "the job's output", func() bool {
		jobs, err := sb.Jobs(ctx)
		return err == nil && len(jobs) == 1 && jobs[0].Output >= 500
	})
	wantJobs, _ := local.Jobs(ctx)
	jobs, err := sb.Jobs(ctx)
	if diff := cmp.Diff(wantJobs, jobs); err != nil || diff != "" {
		t.Errorf("jobs: %v (-node +client)\n%s", err, diff)
	}
	// A read of a running job: what it kept, then its info.
	got, gotEnd, err := attach(sb, info.Pid, 0, runtime.AttachRead)
	want, wantEnd, _ := attach(local, info.Pid, 0, runtime.AttachRead)
	sameAttach(t, "read", got, gotEnd, err, want, wantEnd)
	if gotEnd.Info == nil || !gotEnd.Info.Running || len(got) == 0 {
		t.Errorf("read of a running job ended %+v after %d pieces", gotEnd, len(got))
	}

	in, err := sb.OpenInput(ctx, info.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := in.Write([]byte("world\n")); err != nil || n != 6 {
		t.Fatalf("write to the held stdin: %d, %v", n, err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	got, gotEnd, err = attach(sb, info.Pid, gotEnd.Next, runtime.AttachFollow)
	if err != nil || gotEnd.Exit == nil || gotEnd.Exit.Code != 4 || string(joined(got)) != "got world\n" {
		t.Fatalf("follow to the end: %q %+v, %v", joined(got), gotEnd, err)
	}
	for _, mode := range []runtime.AttachMode{runtime.AttachRead, runtime.AttachFollow, runtime.AttachHold} {
		got, gotEnd, err := attach(sb, info.Pid, 0, mode)
		want, wantEnd, _ := attach(local, info.Pid, 0, mode)
		sameAttach(t, fmt.Sprintf("mode %d", mode), got, gotEnd, err, want, wantEnd)
	}
	if err := sb.Forget(ctx, info.Pid); err != nil {
		t.Fatal(err)
	}
	sameError(t, "forget again", sb.Forget(ctx, info.Pid), local.Forget(ctx, info.Pid))

	// A job that wrote past its buffer: the news of what was dropped.
	info, err = sb.Spawn(ctx, runtime.ExecRequest{Shell: `head -c 100000 /dev/zero | tr '\0' a; echo END`}, runtime.JobOptions{Buffer: 4096})
	if err != nil {
		t.Fatal(err)
	}
	got, gotEnd, err = attach(sb, info.Pid, 0, runtime.AttachFollow)
	if err != nil || gotEnd.Exit == nil {
		t.Fatalf("follow: %+v, %v", gotEnd, err)
	}
	got, gotEnd, err = attach(sb, info.Pid, 0, runtime.AttachRead)
	want, wantEnd, _ = attach(local, info.Pid, 0, runtime.AttachRead)
	sameAttach(t, "dropped", got, gotEnd, err, want, wantEnd)
	if len(got) == 0 || got[0].Dropped != 100004-4096 || got[0].Offset != 100004-4096 {
		t.Errorf("first piece of a job that dropped output: %+v", got[:min(1, len(got))])
	}
	if jobs, _ := sb.Jobs(ctx); len(jobs) != 1 || jobs[0].Meta != nil {
		t.Errorf("a job without metadata: %+v", jobs)
	}

	// Input, closing stdin after.
	info, err = sb.Spawn(ctx, runtime.ExecRequest{Argv: []string{"cat"}}, runtime.JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Input(ctx, info.Pid, strings.NewReader("abc"), true); err != nil {
		t.Fatal(err)
	}
	got, gotEnd, err = attach(sb, info.Pid, 0, runtime.AttachFollow)
	if err != nil || gotEnd.Exit == nil || gotEnd.Exit.Code != 0 || string(joined(got)) != "abc" {
		t.Errorf("cat of its input: %q %+v, %v", joined(got), gotEnd, err)
	}
	sameError(t, "input to an ended job", sb.Input(ctx, info.Pid, strings.NewReader("x"), false),
		local.Input(ctx, info.Pid, strings.NewReader("x"), false))
}

// A job on a terminal, driven through a held stdin: writes are typed,
// resizes change its size, and once it ended a write fails.
func TestJobTerminal(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(t, e.c, runtime.Spec{}).(runtime.JobRunner)
	info, err := sb.Spawn(ctx, runtime.ExecRequest{Argv: []string{"/bin/sh", "-i"}, TTY: &runtime.TTYSize{Cols: 80, Rows: 24}}, runtime.JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuf
	ended := make(chan runtime.JobEnd, 1)
	go func() {
		end, err := sb.Attach(ctx, info.Pid, 0, runtime.AttachFollow, func(o runtime.JobOutput) error {
			out.Write(o.Data)
			return nil
		})
		if err != nil {
			t.Errorf("follow: %v", err)
		}
		ended <- end
	}()
	in, err := sb.OpenInput(ctx, info.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	shows := func(s string) func() bool { return func() bool { return strings.Contains(out.String(), s) } }
	io.WriteString(in, "stty size\n")
	waitFor(t, "the first size", shows("24 80"))
	if err := in.Resize(runtime.TTYSize{Cols: 100, Rows: 40}); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "stty size\n")
	waitFor(t, "the new size", shows("40 100"))
	if err := in.Resize(runtime.TTYSize{}); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("resize to 0x0: %v", err)
	}
	io.WriteString(in, "exit 5\n")
	if end := <-ended; end.Exit == nil || end.Exit.Code != 5 {
		t.Errorf("end: %+v", end)
	}
	waitFor(t, "a write to fail once the job ended", func() bool {
		_, err := in.Write([]byte("x"))
		return err != nil
	})
}

// attach collects what an attach hands its callback (its data copied).
func attach(jr runtime.JobRunner, pid int, offset int64, mode runtime.AttachMode) ([]runtime.JobOutput, runtime.JobEnd, error) {
	var got []runtime.JobOutput
	end, err := jr.Attach(context.Background(), pid, offset, mode, func(o runtime.JobOutput) error {
		o.Data = bytes.Clone(o.Data)
		got = append(got, o)
		return nil
	})
	return got, end, err
}

func joined(outs []runtime.JobOutput) []byte {
	var b []byte
	for _, o := range outs {
		b = append(b, o.Data...)
	}
	return b
}

func sameAttach(t *testing.T, what string, got []runtime.JobOutput, gotEnd runtime.JobEnd, err error, want []runtime.JobOutput, wantEnd runtime.JobEnd) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s: output pieces (-node +client)\n%s", what, diff)
	}
	if diff := cmp.Diff(wantEnd, gotEnd); diff != "" {
		t.Errorf("%s: end (-node +client)\n%s", what, diff)
	}
}

// Every error kind the runtime has comes back as itself, with the node's
// message: from the real runtime where a call makes it, and for each kind
// from a sandbox that fails with it.
func TestErrorKinds(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(t, e.c, runtime.Spec{})
	local := e.local(t, sb)
	mustSh(t, sb, "mkfifo /home/user/fifo; touch /home/user/file")
	for _, tc := range []struct {
		name string
		call func(rt runtime.Runtime, sb runtime.Sandbox) error
	}{
		{"no such sandbox", func(rt runtime.Runtime, _ runtime.Sandbox) error {
			_, err := rt.Get(ctx, "nrpc-missing")
			return err
		}},
		{"ids no path can name", func(rt runtime.Runtime, _ runtime.Sandbox) error {
			var errs []error
			for _, id := range []string{"", ".", "..", "../x", "a/b"} {
				_, err := rt.Get(ctx, id)
				errs = append(errs, err)
			}
			return errors.Join(errs...)
		}},
		{"template names no path can name", func(rt runtime.Runtime, _ runtime.Sandbox) error {
			_, err := rt.(runtime.Templater).Template(ctx, "..")
			return err
		}},
		{"bad id", func(rt runtime.Runtime, _ runtime.Sandbox) error {
			_, err := rt.Create(ctx, runtime.Spec{ID: "Bad ID"})
			return err
		}},
		{"limit out of range", func(rt runtime.Runtime, _ runtime.Sandbox) error {
			_, err := rt.Create(ctx, runtime.Spec{ID: "nrpc-range", Limits: runtime.Limits{Pids: 1}})
			return err
		}},
		{"id taken", func(rt runtime.Runtime, sb runtime.Sandbox) error {
			_, err := rt.Create(ctx, runtime.Spec{ID: sb.ID()})
			return err
		}},
		{"no such file", func(_ runtime.Runtime, sb runtime.Sandbox) error {
			_, err := sb.Stat(ctx, "/home/user/missing")
			return err
		}},
		{"not a regular file", func(_ runtime.Runtime, sb runtime.Sandbox) error {
			_, err := sb.ReadFile(ctx, "/home/user/fifo", io.Discard)
			return err
		}},
		{"not a directory", func(_ runtime.Runtime, sb runtime.Sandbox) error {
			return sb.MkdirAll(ctx, "/home/user/file/sub", 0)
		}},
		{"permission", func(_ runtime.Runtime, sb runtime.Sandbox) error {
			_, err := sb.WriteFile(ctx, "/proc/version", strings.NewReader("x"), 0)
			return err
		}},
		{"nothing listens", func(_ runtime.Runtime, sb runtime.Sandbox) error {
			_, err := sb.(runtime.Dialer).Dial(ctx, "tcp", "127.0.0.1:1")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, lerr := tc.call(e.c, sb), tc.call(e.rt, local)
			sameError(t, tc.name, err, lerr)
			var nre, lnre *runtime.NotRegularError
			if errors.As(err, &nre) && (!errors.As(lerr, &lnre) || *nre != *lnre) {
				t.Errorf("NotRegularError %+v, the node's %+v", nre, lnre)
			}
			var re, lre *runtime.RangeError
			if errors.As(err, &re) && (!errors.As(lerr, &lre) || *re != *lre) {
				t.Errorf("RangeError %+v, the node's %+v", re, lre)
			}
		})
	}

	// Each kind, from a sandbox that fails with it.
	failing := &failRuntime{Runtime: e.rt}
	c := client(t, serve(t, failing))
	fsb, err := c.Get(ctx, sb.ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []error{runtime.ErrNotFound, runtime.ErrInvalid, runtime.ErrUnavailable, runtime.ErrUnsupported,
		runtime.ErrConflict, runtime.ErrPidLimit, runtime.ErrChanged,
		&runtime.NotRegularError{Path: "/dev/zero", What: "a device"},
		&runtime.RangeError{Field: "pids", Value: "1", Range: "8 to 4194304"}} {
		failing.err = fmt.Errorf("stat /x in sandbox %s: %w", sb.ID(), kind)
		_, err := fsb.Stat(ctx, "/x")
		sameError(t, kind.Error(), err, failing.err)
		if !errors.Is(err, kind) {
			var nre *runtime.NotRegularError
			var re *runtime.RangeError
			switch k := kind.(type) {
			case *runtime.NotRegularError:
				if !errors.As(err, &nre) || *nre != *k {
					t.Errorf("%v: not the NotRegularError %+v", err, k)
				}
			case *runtime.RangeError:
				if !errors.As(err, &re) || *re != *k {
					t.Errorf("%v: not the RangeError %+v", err, k)
				}
			default:
				t.Errorf("%v is not %v", err, kind)
			}
		}
	}
	// What the node's runtime does not offer is unsupported.
	for name, call := range map[string]func() error{
		"templates": func() error { _, err := c.Templates(ctx); return err },
		"spawn": func() error {
			_, err := fsb.(runtime.JobRunner).Spawn(ctx, runtime.ExecRequest{Argv: []string{"true"}}, runtime.JobOptions{})
			return err
		},
		"jobs": func() error { _, err := fsb.(runtime.JobRunner).Jobs(ctx); return err },
		"attach": func() error {
			_, err := fsb.(runtime.JobRunner).Attach(ctx, 1, 0, runtime.AttachRead, func(runtime.JobOutput) error { return nil })
			return err
		},
		"open input":    func() error { _, err := fsb.(runtime.JobRunner).OpenInput(ctx, 1); return err },
		"agent version": func() error { _, err := fsb.(runtime.AgentVersioner).AgentVersion(ctx); return err },
		"dial":          func() error { _, err := fsb.(runtime.Dialer).Dial(ctx, "tcp", "127.0.0.1:1"); return err },
		"listen":        func() error { _, err := fsb.(runtime.Listener).Listen(ctx, "tcp", "127.0.0.1:0"); return err },
	} {
		if err := call(); !errors.Is(err, runtime.ErrUnsupported) {
			t.Errorf("%s where the node's runtime lacks it: %v", name, err)
		}
	}
}

// failRuntime is a runtime without templates whose sandboxes have none of
// the optional interfaces, and whose Stat fails with err.
type failRuntime struct {
	runtime.Runtime
	err error
}

func (f *failRuntime) Get(ctx context.Context, id string) (runtime.Sandbox, error) {
	sb, err := f.Runtime.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return failSandbox{sb, f}, nil
}

type failSandbox struct {
	runtime.Sandbox
	f *failRuntime
}

func (s failSandbox) Stat(context.Context, string) (runtime.FileInfo, error) {
	return runtime.FileInfo{}, s.f.err
}

// A node that goes away, mid-stream or before a call, is reported
// unreachable; a stream cut on the node's side ends what it carried.
func TestNodeGoneMidStream(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(t, e.c, runtime.Spec{})
	local := e.local(t, sb)
	var out lockedBuf
	done := make(chan error, 1)
	go func() {
		_, err := sb.Exec(ctx, runtime.ExecRequest{Shell: "while :; do echo tick; sleep 0.05; done", Stdout: &out})
		done <- err
	}()
	jr := sb.(runtime.JobRunner)
	job, err := jr.Spawn(ctx, runtime.ExecRequest{Shell: "while :; do echo tock; sleep 0.05; done"}, runtime.JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	attached := make(chan struct{})
	attachDone := make(chan error, 1)
	go func() {
		var once bool
		_, err := jr.Attach(ctx, job.Pid, 0, runtime.AttachFollow, func(runtime.JobOutput) error {
			if !once {
				once = true
				close(attached)
			}
			return nil
		})
		attachDone <- err
	}()
	waitFor(t, "the exec's output", func() bool { return strings.Contains(out.String(), "tick") })
	<-attached
	e.srv.CloseClientConnections()
	e.srv.Close()
	for name, ch := range map[string]chan error{"exec": done, "attach": attachDone} {
		if err := <-ch; !errors.Is(err, runtime.ErrUnavailable) || !strings.Contains(err.Error(), "could not be reached") {
			t.Errorf("%s when the node went away: %v", name, err)
		}
	}
	if _, err := e.c.Get(ctx, sb.ID()); !errors.Is(err, runtime.ErrUnavailable) || !strings.Contains(err.Error(), "could not be reached") {
		t.Errorf("a call to a node that is gone: %v", err)
	}
	// The exec's call ended on the node too: its process tree was killed.
	waitFor(t, "the exec's process to be killed", func() bool {
		return !strings.Contains(mustSh(t, local, `cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' '`), "echo tick")
	})
}

// A caller that cancels cancels the node's call: the exec's process tree
// is killed, an attach detaches (the job goes on), an upload is dropped.
func TestCancel(t *testing.T) {
	e := newEnv(t)
	sb := e.create(t, e.c, runtime.Spec{})
	local := e.local(t, sb)
	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuf
	done := make(chan error, 1)
	go func() {
		_, err := sb.Exec(ctx, runtime.ExecRequest{Shell: "echo $$; exec sleep 60", Stdout: &out})
		done <- err
	}()
	waitFor(t, "the pid", func() bool { return strings.HasSuffix(out.String(), "\n") })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled exec: %v", err)
	}
	pid := strings.TrimSpace(out.String())
	waitFor(t, "the process to be killed", func() bool {
		return run(t, local, runtime.ExecRequest{Shell: "kill -0 " + pid}).st.Code != 0
	})

	jr := sb.(runtime.JobRunner)
	job, err := jr.Spawn(context.Background(), runtime.ExecRequest{Shell: "echo started; exec sleep 60"}, runtime.JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	_, err = jr.Attach(ctx, job.Pid, 0, runtime.AttachFollow, func(runtime.JobOutput) error {
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled attach: %v", err)
	}
	if jobs, err := jr.Jobs(context.Background()); err != nil || len(jobs) != 1 || !jobs[0].Running {
		t.Errorf("the job after its follower left: %+v, %v", jobs, err)
	}
	sb.Signal(context.Background(), job.Pid, 9)

	ctx, cancel = context.WithCancel(context.Background())
	stuck, unstick := io.Pipe()
	defer unstick.Close()
	go func() {
		unstick.Write(make([]byte, 100<<10))
		cancel()
	}()
	if _, err := sb.WriteFile(ctx, "/home/user/upload", stuck, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled upload: %v", err)
	}
	if _, err := sb.Stat(context.Background(), "/home/user/upload"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("a cancelled upload left a file: %v", err)
	}
}

// A request of another protocol version, or none, is refused, saying
// both versions; the status route is not this package's.
func TestProtocolHeader(t *testing.T) {
	srv := httptest.NewUnstartedServer(noderpc.NewServer(nil))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	for _, v := range []string{"", "2"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/node/v1/sandboxes", nil)
		if v != "" {
			req.Header.Set(noderpc.ProtocolHeader, v)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := v
		if v == "" {
			want = "none"
		}
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "protocol "+want) || !strings.Contains(string(b), "protocol 1") {
			t.Errorf("protocol %q: %s %s", v, resp.Status, b)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/node/v1/status", nil)
	req.Header.Set(noderpc.ProtocolHeader, "1")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /node/v1/status: %s", resp.Status)
	}
}

// The calls that return once work over plain HTTP/1.1 too.
func TestUnaryOverHTTP1(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	srv := httptest.NewServer(noderpc.NewServer(e.rt))
	defer srv.Close()
	c := noderpc.NewClient(srv.Client(), srv.URL)
	sb := e.create(t, c, runtime.Spec{})
	if _, err := c.Get(ctx, sb.ID()); err != nil {
		t.Fatal(err)
	}
	if n, err := sb.WriteFile(ctx, "/home/user/f", strings.NewReader("over h1"), 0); err != nil || n != 7 {
		t.Fatalf("write: %d, %v", n, err)
	}
	if fi, err := sb.Stat(ctx, "/home/user/f"); err != nil || fi.Size != 7 {
		t.Errorf("stat: %+v, %v", fi, err)
	}
	if list, err := sb.ListDir(ctx, "/home/user"); err != nil || len(list) != 1 {
		t.Errorf("list: %+v, %v", list, err)
	}
	if _, err := sb.Stat(ctx, "/nope"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("stat of nothing: %v", err)
	}
	if err := sb.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
}

// Finished and cancelled calls of every kind leave no goroutine behind,
// on either side.
func TestNoGoroutineLeaks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(t, e.c, runtime.Spec{})
	jr := sb.(runtime.JobRunner)
	mustSh(t, sb, "true") // the HTTP/2 connection is up, and stays
	base := goruntime.NumGoroutine()

	run(t, sb, runtime.ExecRequest{Argv: []string{"cat"}, Stdin: strings.NewReader("in")})
	sb.WriteFile(ctx, "/home/user/f", strings.NewReader("data"), 0)
	sb.ReadFile(ctx, "/home/user/f", io.Discard)
	sb.ReadFile(ctx, "/home/user/missing", io.Discard)
	cctx, cancel := context.WithCancel(ctx)
	p, err := sb.Start(cctx, runtime.ExecRequest{Argv: []string{"sleep", "60"}, Stdin: strings.NewReader("")})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	p.Wait()
	tty, err := sb.Start(ctx, runtime.ExecRequest{Argv: []string{"true"}, TTY: &runtime.TTYSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	tty.Wait()
	job, err := jr.Spawn(ctx, runtime.ExecRequest{Argv: []string{"cat"}}, runtime.JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := jr.OpenInput(ctx, job.Pid)
	if err != nil {
		t.Fatal(err)
	}
	in.Write([]byte("x"))
	in.Close()
	jr.Input(ctx, job.Pid, strings.NewReader("y"), true)
	attach(jr, job.Pid, 0, runtime.AttachFollow)
	cctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
	jr.Attach(cctx, 99999, 0, runtime.AttachFollow, func(runtime.JobOutput) error { return nil })
	cancel()

	ln, err := sb.(runtime.Listener).Listen(ctx, "tcp", "127.0.0.1:7100")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.Copy(c, c)
			c.Close()
		}
		accepted <- err
	}()
	if out := mustSh(t, sb, pyEcho("127.0.0.1", 7100, "leak")); out != "leak" {
		t.Errorf("echo through the listener: %q", out)
	}
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	go ln.Accept() // pending when the listener closes
	time.Sleep(50 * time.Millisecond)
	ln.Close()
	c, err := sb.(runtime.Dialer).Dial(ctx, "tcp", "127.0.0.1:1")
	if err == nil {
		c.Close()
	}
	checkGoroutines(t, base)
}

// pyEcho is a script that connects to host:port inside the sandbox,
// sends msg, half-closes, and prints what comes back.
func pyEcho(host string, port int, msg string) string {
	return fmt.Sprintf(`python3 -c '
import socket, sys
s = socket.create_connection((%q, %d), timeout=20)
s.sendall(b%q)
s.shutdown(socket.SHUT_WR)
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
'`, host, port, msg)
}
