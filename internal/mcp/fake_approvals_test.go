package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/client/clienttest"
)

// approvalFake is clienttest's fake with what these tests need of the API
// and it lacks: approvals, background processes (which a 2026-07-28
// run_command runs its command as), and tasks whose prompt is such a
// command, run in a sandbox of their own. A command "ask SANDBOX HOST"
// opens an egress approval for HOST in SANDBOX (the fake's exec does not
// know which sandbox it runs in; a task's is "ask SANDBOX TASK HOST"),
// waits until it is decided, and prints the outcome, exiting 0 if allowed; "sleep" (background only) runs until it
// is killed; any other command echoes.
type approvalFake struct {
	*clienttest.Server
	t *testing.T

	mu        sync.Mutex
	approvals []*client.Approval
	changed   chan struct{} // closed and replaced at every change
	procs     map[int]*fakeProc
	started   []string // commands started in the background
	signals   []int    // pids signalled
	tasks     map[string]*fakeTask
}

type fakeTask struct {
	client.Task
	done   chan struct{}
	cancel context.CancelFunc
}

type fakeProc struct {
	out    bytes.Buffer
	exit   *int
	cancel context.CancelFunc
	done   chan struct{}
}

func newApprovalFake(t *testing.T) *approvalFake {
	f := &approvalFake{t: t, changed: make(chan struct{}), procs: map[int]*fakeProc{}, tasks: map[string]*fakeTask{}}
	f.Server = clienttest.NewServerWith(t, f.wrap)
	f.SetExec(func(argv []string, stdout, _ io.Writer) (int, int) {
		return f.run(context.Background(), argv[len(argv)-1], stdout), 0
	})
	return f
}

// run is a command: see approvalFake.
func (f *approvalFake) run(ctx context.Context, cmd string, out io.Writer) int {
	if cmd == "sleep" {
		<-ctx.Done()
		return 137
	}
	var sandbox, task, host string
	switch f := strings.Fields(cmd); {
	case len(f) == 3 && f[0] == "ask":
		sandbox, host = f[1], f[2]
	case len(f) == 4 && f[0] == "ask": // a task's
		sandbox, task, host = f[1], f[2], f[3]
	default:
		fmt.Fprintln(out, cmd)
		return 0
	}
	id := f.open(sandbox, task, host)
	for {
		f.mu.Lock()
		a := f.find(id)
		state, wake := a.State, f.changed
		f.mu.Unlock()
		if state != client.ApprovalPending {
			fmt.Fprintln(out, state)
			if state == client.ApprovalAllowed {
				return 0
			}
			return 1
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return 137
		case <-time.After(30 * time.Second):
			f.decide(id, client.ApprovalTimedOut, client.ApprovalDecision{}, "")
		}
	}
}

// open opens an egress approval of sandbox (and task) and returns its id.
func (f *approvalFake) open(sandbox, task, host string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now().UTC()
	a := &client.Approval{ID: fmt.Sprintf("apv-%d", len(f.approvals)+1), SandboxID: sandbox, Task: task, Kind: "egress",
		Egress: &client.ApprovalEgress{Host: host, Port: 80, Protocol: "http"}, State: client.ApprovalPending,
		RequestedAt: now, Deadline: now.Add(30 * time.Second)}
	f.approvals = append(f.approvals, a)
	f.wakeLocked()
	return a.ID
}

// pending waits for the first pending approval of sandbox and returns it.
func (f *approvalFake) pending(sandbox string) client.Approval {
	f.t.Helper()
	return f.await(sandbox, true)
}

// asked waits for the first approval of a sandbox in whatever state: one
// the MCP client answered at once may be decided before the test looks.
func (f *approvalFake) asked(sandbox string) client.Approval {
	f.t.Helper()
	return f.await(sandbox, false)
}

func (f *approvalFake) await(sandbox string, pendingOnly bool) client.Approval {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		for _, a := range f.approvals {
			if a.SandboxID == sandbox && (!pendingOnly || a.State == client.ApprovalPending) {
				found := *a
				f.mu.Unlock()
				return found
			}
		}
		wake := f.changed
		f.mu.Unlock()
		select {
		case <-wake:
		case <-deadline:
			f.t.Fatalf("no approval (pending only: %v) for %s", pendingOnly, sandbox)
		}
	}
}

func (f *approvalFake) find(id string) *client.Approval {
	for _, a := range f.approvals {
		if a.ID == id {
			return a
		}
	}
	return nil
}

func (f *approvalFake) wakeLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// decide moves approval id out of pending; false if it was not pending.
func (f *approvalFake) decide(id, state string, d client.ApprovalDecision, by string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.find(id)
	if a == nil || a.State != client.ApprovalPending {
		return false
	}
	a.State, a.DecidedAt, a.DecidedBy, a.Reason, a.Remember = state, time.Now().UTC(), by, d.Reason, d.Remember
	if a.Remember == "" && by != "" {
		a.Remember = "once"
	}
	f.wakeLocked()
	return true
}

func (f *approvalFake) wrap(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", next)
	mux.HandleFunc("GET /v1/approvals", f.auth(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		list := []client.Approval{}
		for _, a := range f.approvals {
			if s := r.URL.Query().Get("state"); s == "" || s == a.State {
				list = append(list, *a)
			}
		}
		writeJSON(w, 200, map[string]any{"approvals": list})
	}))
	mux.HandleFunc("GET /v1/approvals/{id}", f.auth(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if a := f.find(r.PathValue("id")); a != nil {
			writeJSON(w, 200, a)
			return
		}
		fail(w, 404, "not_found", "approval "+r.PathValue("id")+" not found")
	}))
	mux.HandleFunc("POST /v1/approvals/{id}/decision", f.auth(func(w http.ResponseWriter, r *http.Request) {
		var d client.ApprovalDecision
		if err := json.NewDecoder(r.Body).Decode(&d); err != nil || d.Decision != "allow" && d.Decision != "deny" {
			fail(w, 400, "invalid_argument", "bad decision")
			return
		}
		id := r.PathValue("id")
		state := client.ApprovalDenied
		if d.Decision == "allow" {
			state = client.ApprovalAllowed
		}
		if !f.decide(id, state, d, "key-admin") {
			f.mu.Lock()
			a := f.find(id)
			f.mu.Unlock()
			if a == nil {
				fail(w, 404, "not_found", "approval "+id+" not found")
			} else {
				fail(w, 409, "conflict", "approval "+id+" is "+a.State+" already")
			}
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		writeJSON(w, 200, f.find(id))
	}))
	mux.HandleFunc("POST /v1/sandboxes/{id}/exec", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Command    string `json:"command"`
			Background bool   `json:"background"`
		}
		json.Unmarshal(body, &req)
		if !req.Background {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return
		}
		f.auth(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"pid": f.start(req.Command), "tag": "mcp"})
		})(w, r)
	})
	mux.HandleFunc("GET /v1/sandboxes/{id}/processes/{pid}/output", f.auth(f.output))
	mux.HandleFunc("POST /v1/tasks", f.auth(f.createTask))
	mux.HandleFunc("GET /v1/tasks/{id}", f.auth(func(w http.ResponseWriter, r *http.Request) {
		if t := f.task(r.PathValue("id")); t != nil {
			f.mu.Lock()
			defer f.mu.Unlock()
			writeJSON(w, 200, t.Task)
			return
		}
		fail(w, 404, "not_found", "no such task")
	}))
	mux.HandleFunc("GET /v1/tasks/{id}/events", f.auth(f.taskEvents))
	mux.HandleFunc("GET /v1/tasks/{id}/artifacts", f.auth(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"artifacts": []any{}, "diff": nil})
	}))
	mux.HandleFunc("POST /v1/tasks/{id}/cancel", f.auth(func(w http.ResponseWriter, r *http.Request) {
		if t := f.task(r.PathValue("id")); t != nil {
			t.cancel()
			<-t.done
			f.mu.Lock()
			defer f.mu.Unlock()
			writeJSON(w, 200, t.Task)
			return
		}
		fail(w, 404, "not_found", "no such task")
	}))
	mux.HandleFunc("POST /v1/sandboxes/{id}/processes/{pid}/signal", f.auth(func(w http.ResponseWriter, r *http.Request) {
		pid, _ := strconv.Atoi(r.PathValue("pid"))
		f.mu.Lock()
		p := f.procs[pid]
		f.signals = append(f.signals, pid)
		f.mu.Unlock()
		if p != nil {
			p.cancel()
		}
		writeJSON(w, 200, map[string]any{})
	}))
	return mux
}

func (f *approvalFake) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+f.AdminKey {
			fail(w, 401, "unauthenticated", "unknown key")
			return
		}
		h(w, r)
	}
}

// start runs cmd as a background process and returns its pid.
func (f *approvalFake) start(cmd string) int {
	ctx, cancel := context.WithCancel(context.Background())
	p := &fakeProc{cancel: cancel, done: make(chan struct{})}
	f.mu.Lock()
	pid := 100 + len(f.procs)
	f.procs[pid] = p
	f.started = append(f.started, cmd)
	f.mu.Unlock()
	f.t.Cleanup(cancel)
	go func() {
		var out bytes.Buffer
		code := f.run(ctx, cmd, &out)
		f.mu.Lock()
		p.out.Write(out.Bytes())
		p.exit = &code
		f.mu.Unlock()
		close(p.done)
	}()
	return pid
}

// createTask runs the prompt as a command in a sandbox of the task's own.
func (f *approvalFake) createTask(w http.ResponseWriter, r *http.Request) {
	var req client.TaskRequest
	json.NewDecoder(r.Body).Decode(&req)
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(cancel)
	f.mu.Lock()
	n := len(f.tasks) + 1
	t := &fakeTask{Task: client.Task{ID: fmt.Sprintf("task-%d", n), State: "running", Harness: req.Harness, Prompt: req.Prompt,
		SandboxID: fmt.Sprintf("sb-task-%d", n)}, done: make(chan struct{}), cancel: cancel}
	f.tasks[t.ID] = t
	task := t.Task
	f.mu.Unlock()
	go func() {
		var out bytes.Buffer
		cmd := strings.Replace(req.Prompt, "ask ", "ask "+task.SandboxID+" "+task.ID+" ", 1)
		code := f.run(ctx, cmd, &out)
		f.mu.Lock()
		t.State, t.ExitCode, t.Summary = "succeeded", &code, strings.TrimSpace(out.String())
		if ctx.Err() != nil {
			t.State = "cancelled"
		}
		f.mu.Unlock()
		close(t.done)
	}()
	writeJSON(w, 201, task)
}

func (f *approvalFake) task(id string) *fakeTask {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tasks[id]
}

// taskEvents follows a task: its one event, task.finished, once it ended.
func (f *approvalFake) taskEvents(w http.ResponseWriter, r *http.Request) {
	t := f.task(r.PathValue("id"))
	if t == nil {
		fail(w, 404, "not_found", "no such task")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	http.NewResponseController(w).Flush()
	select {
	case <-t.done:
	case <-r.Context().Done():
		return
	}
	f.mu.Lock()
	ev, _ := json.Marshal(client.TaskEvent{Seq: 1, Type: "task.finished", Status: t.State, Summary: t.Summary})
	f.mu.Unlock()
	fmt.Fprintf(w, "id: 1\nevent: task.finished\ndata: %s\n\n", ev)
}

// output follows a background process: its output once it ended, then
// the exit event.
func (f *approvalFake) output(w http.ResponseWriter, r *http.Request) {
	pid, _ := strconv.Atoi(r.PathValue("pid"))
	f.mu.Lock()
	p := f.procs[pid]
	f.mu.Unlock()
	if p == nil {
		fail(w, 404, "not_found", "no such process")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	http.NewResponseController(w).Flush()
	select {
	case <-p.done:
	case <-r.Context().Done():
		return
	}
	f.mu.Lock()
	out, code := p.out.Bytes(), *p.exit
	f.mu.Unlock()
	fmt.Fprintf(w, "event: stdout\ndata: {\"data\":%q,\"offset\":0}\n\n", base64.StdEncoding.EncodeToString(out))
	fmt.Fprintf(w, "event: exit\ndata: {\"exit_code\":%d,\"signal\":0,\"offset\":%d}\n\n", code, len(out))
}

func fail(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
