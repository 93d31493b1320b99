package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

// taskHarness is a generic "harness": it answers the prompt in a file and
// prints a plain line and a normalized event.
const taskHarness = `#!/bin/sh
read -r prompt || true
echo "working on: $prompt"
echo '{"type":"command","argv":["echo","fixed"],"exit_code":0}'
echo fixed > answer.txt
echo done
`

func TestTaskAPI(t *testing.T) {
	s := startServer(t, "")
	admin := s.admin()
	var keys []string
	for _, name := range []string{"task-a", "task-b"} {
		must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: name}))
		keys = append(keys, must[client.NewKey](t)(admin.CreateKey(ctx, name, "k")).Key)
	}
	a := client.New(s.url, keys[0])

	task := must[client.Task](t)(a.CreateTask(ctx, client.TaskRequest{
		Harness: "generic", Prompt: "fix it", Command: []string{"./harness.sh"},
		Files:     map[string]string{"harness.sh": taskHarness, "src/main.txt": "broken\n"},
		Artifacts: []string{"answer.txt"},
	}))
	var types []string
	if _, err := a.FollowTask(ctx, task.ID, 0, func(e client.TaskEvent) error {
		types = append(types, e.Type)
		return nil
	}); err != nil {
		t.Fatalf("follow: %v", err)
	}
	want := "task.started message command message file_change task.finished"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	got := must[client.Task](t)(a.GetTask(ctx, task.ID))
	if got.State != client.TaskSucceeded || got.Summary != "done" || got.ExitCode == nil || *got.ExitCode != 0 {
		t.Fatalf("task %+v, want succeeded with summary done", got)
	}
	// Resuming after event 2 gives the rest, and the JSON list agrees.
	var resumed []int64
	must[int64](t)(a.FollowTask(ctx, task.ID, 2, func(e client.TaskEvent) error {
		resumed = append(resumed, e.Seq)
		return nil
	}))
	if len(resumed) != len(types)-2 || resumed[0] != 3 {
		t.Errorf("resumed after 2: %v", resumed)
	}
	if evs := must[[]client.TaskEvent](t)(a.TaskEvents(ctx, task.ID, 0)); len(evs) != len(types) || evs[1].Text != "working on: fix it" {
		t.Errorf("event list %+v", evs)
	}
	arts := must[client.TaskArtifacts](t)(a.TaskArtifacts(ctx, task.ID))
	if len(arts.Artifacts) != 1 || arts.Artifacts[0].Path != "answer.txt" || arts.Diff == nil ||
		!strings.Contains(arts.Diff.Text, "+++ b/answer.txt") || !strings.Contains(arts.Diff.Text, "+fixed") {
		t.Errorf("artifacts %+v", arts)
	}
	var buf bytes.Buffer
	must[int64](t)(a.ReadTaskArtifact(ctx, task.ID, "answer.txt", &buf))
	if buf.String() != "fixed\n" {
		t.Errorf("answer.txt = %q", buf.String())
	}
	// The task's start and end are in its sandbox's audit log, chained,
	// and in the tenant's event stream.
	evs := must[[]client.AuditEvent](t)(a.AuditEvents(ctx, got.SandboxID, client.AuditQuery{Types: []string{"task.started", "task.finished"}}))
	if len(evs) != 2 || !strings.Contains(string(evs[0].Data), task.ID) || !strings.Contains(string(evs[1].Data), `"state":"succeeded"`) {
		t.Errorf("task events in the audit log: %+v", evs)
	}
	if v := must[client.AuditVerify](t)(a.VerifyAudit(ctx, got.SandboxID)); !v.OK {
		t.Errorf("audit chain: %+v", v)
	}
	var stream []string
	sctx, stop := context.WithTimeout(ctx, 10*time.Second)
	a.Events(sctx, client.EventsOptions{FromStart: true, Types: []string{"task.started", "task.finished"}}, func(e client.Event) error {
		if e.SandboxID == got.SandboxID {
			stream = append(stream, e.Type)
		}
		if len(stream) == 2 {
			stop()
		}
		return nil
	})
	stop()
	if strings.Join(stream, " ") != "task.started task.finished" {
		t.Errorf("tenant stream: %v", stream)
	}
	if sb, err := a.GetSandbox(ctx, got.SandboxID); err != nil || sb.State != "stopped" {
		t.Errorf("the task's sandbox: %+v, %v; want stopped", sb, err)
	}
	page := must[client.TaskPage](t)(a.ListTasks(ctx, client.TaskListOptions{States: []string{"succeeded"}, Harness: "generic"}))
	if len(page.Tasks) != 1 || page.Tasks[0].ID != task.ID {
		t.Errorf("list: %+v", page)
	}

	// Another tenant: every task route is 404, and its list is empty.
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/tasks/" + task.ID},
		{"GET", "/v1/tasks/" + task.ID + "/events"},
		{"POST", "/v1/tasks/" + task.ID + "/cancel"},
		{"GET", "/v1/tasks/" + task.ID + "/artifacts"},
		{"GET", "/v1/tasks/" + task.ID + "/artifacts?path=answer.txt"},
	} {
		if code, body := call(t, s, keys[1], r.method, r.path, "", ""); code != http.StatusNotFound || !strings.Contains(body, `"not_found"`) {
			t.Errorf("tenant b: %s %s = %d %s, want 404", r.method, r.path, code, body)
		}
	}
	if p := must[client.TaskPage](t)(client.New(s.url, keys[1]).ListTasks(ctx, client.TaskListOptions{})); len(p.Tasks) != 0 {
		t.Errorf("tenant b lists %d tasks", len(p.Tasks))
	}

	// Bad input: a clear 400 that names what is wrong, and no task.
	for _, tc := range []struct{ body, want string }{
		{`{"harness":"codex","prompt":"p"}`, `harness-codex`},
		{`{"harness":"claude","prompt":"p"}`, `harness-claude`},
		{`{"harness":"nope"}`, `want one of generic, codex, claude`},
		{`{"harness":"generic"}`, `needs a command`},
		{`{"harness":"generic","command":["true"],"files":{"../x":"y"}}`, `inside the workspace`},
		{`{"harness":"generic","command":["true"],"artifacts":["/etc/*"]}`, `workspace-relative`},
		{`{"harness":"generic","command":["true"],"timeout_s":-1}`, `timeout_s`},
		{`{"harness":"generic","command":["true"],"bogus":1}`, `bogus`},
		{`{"harness":"generic","command":["true"],"secrets":["NO_SUCH_SECRET"]}`, `NO_SUCH_SECRET`},
		{`{"harness":"generic","command":["true"],"repo":{"tarball":"bm90IGEgdGFy"}}`, `not a tar archive`},
	} {
		code, body := call(t, s, keys[0], "POST", "/v1/tasks", "application/json", tc.body)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("POST /v1/tasks %s = %d %s, want 400 naming %q", tc.body, code, body, tc.want)
		}
	}
	// A sandbox no host could hold: refused now, as a sandbox would be.
	if code, body := call(t, s, keys[0], "POST", "/v1/tasks", "application/json", `{"harness":"generic","command":["true"],"limits":{"cpus":1000}}`); code != http.StatusTooManyRequests || !strings.Contains(body, `"limit_exceeded"`) {
		t.Errorf("POST /v1/tasks with 1000 cpus = %d %s, want 429 limit_exceeded", code, body)
	}
	for _, path := range []string{
		"/v1/tasks?state=done", "/v1/tasks?harness=nope", "/v1/tasks?limit=0", "/v1/tasks?bogus=1",
		"/v1/tasks/" + task.ID + "/events?after=-1", "/v1/tasks/" + task.ID + "/artifacts?diff=maybe",
	} {
		if code, body := call(t, s, keys[0], "GET", path, "", ""); code != http.StatusBadRequest || !strings.Contains(body, `"invalid_argument"`) {
			t.Errorf("GET %s = %d %s, want 400", path, code, body)
		}
	}
	if p := must[client.TaskPage](t)(a.ListTasks(ctx, client.TaskListOptions{})); len(p.Tasks) != 1 {
		t.Errorf("bad requests made tasks: %d", len(p.Tasks))
	}
	var apiErr *client.Error
	if _, err := a.GetTask(ctx, "tsk_nope"); !errors.As(err, &apiErr) || apiErr.Code != "not_found" {
		t.Errorf("unknown task: %v", err)
	}
}

// TestTaskCLI: `airlock task run` uploads a folder (binary files and
// modes too), streams the events,
// writes the artifacts and the diff, and exits with the task's status.
func TestTaskCLI(t *testing.T) {
	s := startServer(t, "")
	dir, out := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "input.txt"), []byte("question\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	blob := []byte{0, 1, 2, 0xff, 0xfe, '\n', 0x80}
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	if os.WriteFile(filepath.Join(dir, "bin", "blob.bin"), blob, 0o644) != nil || os.WriteFile(filepath.Join(dir, "bin", "tool"), []byte("#!/bin/sh\necho tool ran\n"), 0o755) != nil {
		t.Fatal("write dir")
	}
	run := func(args ...string) (string, int) {
		return s.cli(s.adminKey, append([]string{"task", "run"}, args...)...)
	}
	text, code := run("--harness", "generic", "--prompt", "hi", "--artifact", "answer.txt", "--artifact", "copy.bin", "--out", out,
		"--command", `cat input.txt > answer.txt; echo "$AIRLOCK_TASK_PROMPT" >> answer.txt; bin/tool; cp bin/blob.bin copy.bin; echo ok`, dir)
	if code != 0 || !strings.Contains(text, "[assistant] ok") || !strings.Contains(text, "[assistant] tool ran") || !strings.Contains(text, "added answer.txt") {
		t.Fatalf("task run exited %d:\n%s", code, text)
	}
	if b, err := os.ReadFile(filepath.Join(out, "answer.txt")); err != nil || string(b) != "question\nhi\n" {
		t.Errorf("answer.txt: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "copy.bin")); err != nil || !bytes.Equal(b, blob) {
		t.Errorf("copy.bin: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "workspace.diff")); err != nil || !strings.Contains(string(b), "+hi") {
		t.Errorf("workspace.diff: %q, %v", b, err)
	}
	if text, code := run("--command", "exit 3", dir); code != 3 || !strings.Contains(text, "failed") {
		t.Errorf("a failing task: exit %d, want 3:\n%s", code, text)
	}
	if text, code := run("--command", "sleep 30", "--timeout", "1s", dir); code != 124 || !strings.Contains(text, "timed_out") {
		t.Errorf("a task past its timeout: exit %d, want 124:\n%s", code, text)
	}
}

// mcpTask: task_run runs a generic task to its end and hands back its
// outcome and diff; a harness this server cannot run is a tool error that
// names the missing template.
func mcpTask(t *testing.T, cs *mcpsdk.ClientSession) {
	out := mcpCall[struct {
		TaskID string   `json:"task_id"`
		State  string   `json:"state"`
		Events []string `json:"events"`
		Diff   string   `json:"diff"`
	}](t, cs, "task_run", map[string]any{"harness": "generic", "prompt": "p",
		"command": []string{"sh", "-c", "echo fixed > answer.txt; echo done"}})
	if out.State != client.TaskSucceeded || !strings.Contains(out.Diff, "+fixed") ||
		!slices.Contains(out.Events, "added answer.txt") || !slices.Contains(out.Events, "assistant: done") {
		t.Errorf("task_run: %+v", out)
	}
	if msg := mcpToolError(t, cs, "task_run", map[string]any{"harness": "codex", "prompt": "p"}); !strings.Contains(msg, "harness-codex") {
		t.Errorf("task_run codex: %s", msg)
	}
}

// TestTaskRestart kills (kill -9) or stops (SIGTERM) the daemon while one
// task runs and another waits behind the tenant's quota of one: the
// running task goes on while no daemon runs and ends succeeded with what
// its harness printed before, during and after the restart, once each; a
// client following it across the restart resumes from its last event;
// the queued one runs after it; no sandbox is left.
func TestTaskRestart(t *testing.T) {
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			s := startServer(t, "")
			admin := s.admin()
			must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "task-r", MaxSandboxes: 1}))
			key := must[client.NewKey](t)(admin.CreateKey(ctx, "task-r", "k")).Key
			c := client.New(s.url, key)
			running := must[client.Task](t)(c.CreateTask(ctx, client.TaskRequest{Harness: "generic",
				Command: []string{"sh", "-c", "echo up; sleep 4; echo while-down; sleep 2; echo fixed > answer.txt; echo after"}, Artifacts: []string{"answer.txt"}}))
			queued := must[client.Task](t)(c.CreateTask(ctx, client.TaskRequest{Harness: "generic", Command: []string{"echo", "second"}}))
			// A follower that goes on across the restart.
			var seen []string
			followed := make(chan error, 1)
			up := make(chan struct{})
			go func() {
				_, err := c.FollowTask(ctx, running.ID, 0, func(e client.TaskEvent) error {
					if e.Type == "message" {
						seen = append(seen, e.Text)
						if e.Text == "up" {
							close(up)
						}
					}
					return nil
				})
				followed <- err
			}()
			select {
			case <-up:
			case <-time.After(time.Minute):
				t.Fatal("the first task never printed up")
			}
			if q := must[client.Task](t)(c.GetTask(ctx, queued.ID)); q.State != client.TaskQueued || q.QueuePosition == nil || *q.QueuePosition != 0 {
				t.Fatalf("the second task is %s (position %v), want queued first in line", q.State, q.QueuePosition)
			}
			restartServer(t, s, how, 2*time.Second)
			c = client.New(s.url, key)
			if err := <-followed; err != nil {
				t.Fatalf("following the task across the restart: %v", err)
			}
			if want := []string{"up", "while-down", "after"}; !slices.Equal(seen, want) {
				t.Errorf("the follower saw messages %q, want %q", seen, want)
			}
			got := must[client.Task](t)(c.GetTask(ctx, running.ID))
			if got.State != client.TaskSucceeded || got.Summary != "after" {
				t.Errorf("the task cut by the restart: %s (%q), summary %q, want succeeded", got.State, got.Reason, got.Summary)
			}
			var buf bytes.Buffer
			if _, err := c.ReadTaskArtifact(ctx, running.ID, "answer.txt", &buf); err != nil || buf.String() != "fixed\n" {
				t.Errorf("answer.txt: %q, %v", buf.String(), err)
			}
			evs := must[[]client.TaskEvent](t)(c.TaskEvents(ctx, running.ID, 0))
			for i, e := range evs {
				if e.Seq != int64(i+1) {
					t.Fatalf("event %d has seq %d: %+v", i, e.Seq, evs)
				}
			}
			must[int64](t)(c.FollowTask(ctx, queued.ID, 0, func(client.TaskEvent) error { return nil }))
			if q := must[client.Task](t)(c.GetTask(ctx, queued.ID)); q.State != client.TaskSucceeded {
				t.Errorf("the queued task after the restart: %s (%q)", q.State, q.Reason)
			}
			if v := must[client.AuditVerify](t)(c.VerifyAudit(ctx, got.SandboxID)); !v.OK {
				t.Errorf("audit chain of the task's sandbox: %+v", v)
			}
			if p := must[client.Page](t)(c.ListSandboxes(ctx, client.ListOptions{State: client.StateRunning})); len(p.Sandboxes) != 0 {
				t.Errorf("sandboxes left running: %+v", p.Sandboxes)
			}
			assertNoSandboxesLeft(t, s, got.SandboxID)
		})
	}
}

// TestTaskEnvSealed: a task's env values reach its harness but are stored
// sealed: the database does not hold them.
func TestTaskEnvSealed(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	value := "env-value-" + randHex(16)
	task := must[client.Task](t)(c.CreateTask(ctx, client.TaskRequest{
		// Its digest only: what a harness prints is recorded.
		Harness: "generic", Command: []string{"sh", "-c", `printf %s "$GREETING" | sha256sum | cut -c1-64`}, Env: map[string]string{"GREETING": value},
	}))
	var said []string
	must[int64](t)(c.FollowTask(ctx, task.ID, 0, func(e client.TaskEvent) error {
		if e.Type == "message" {
			said = append(said, e.Text)
		}
		return nil
	}))
	if got := must[client.Task](t)(c.GetTask(ctx, task.ID)); got.State != client.TaskSucceeded || strings.Join(said, "") != fmt.Sprintf("%x", sha256.Sum256([]byte(value))) || !slices.Equal(got.Env, []string{"GREETING"}) {
		t.Fatalf("task %+v said %q", got, said)
	}
	// The database and its write-ahead log (the pool image beside them is
	// sandboxes' disks, 64 GiB sparse).
	files, _ := filepath.Glob(filepath.Join(s.dataDir, "airlock.db*"))
	if len(files) == 0 {
		t.Fatal("no database files")
	}
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(value)) {
			t.Errorf("%s holds the task's env value", p)
		}
	}
}
