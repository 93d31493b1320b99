package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// TaskRequest is POST /v1/tasks: a harness run in a sandbox of its own.
type TaskRequest struct {
	Harness string `json:"harness"` // generic, codex or claude
	Prompt  string `json:"prompt,omitempty"`
	// Files are written into the workspace (/home/user/work) first:
	// relative path -> content.
	Files map[string]string `json:"files,omitempty"`
	// Repo is what the workspace starts from, before Files.
	Repo *TaskRepo `json:"repo,omitempty"`
	// Command is the generic harness's argv.
	Command   []string          `json:"command,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Allow     []string          `json:"allow,omitempty"`
	Secrets   []string          `json:"secrets,omitempty"`
	Model     *TaskModel        `json:"model,omitempty"`
	Limits    *TaskLimits       `json:"limits,omitempty"`
	TimeoutS  int64             `json:"timeout_s,omitempty"`
	Artifacts []string          `json:"artifacts,omitempty"`
	// Budget caps what the task's model calls may spend (each attempt's
	// sandbox gets it); once spent the task ends failed, its reason
	// starting "budget".
	Budget *Budget `json:"budget,omitempty"`
	// Retry tries the task again, in a new sandbox, after an
	// infrastructure failure; a harness that fails is not retried.
	Retry *TaskRetry `json:"retry,omitempty"`
	// Continue makes the task a follow-up turn of an ended one (its id)
	// that kept its workspace (KeepWorkspaceS), in the same harness.
	Continue string `json:"continue,omitempty"`
	// KeepWorkspaceS keeps the final workspace that many seconds after
	// the task ends, for a follow-up turn.
	KeepWorkspaceS int64 `json:"keep_workspace_s,omitempty"`
	// Approval makes the harness's tool calls of the categories named
	// wait for a person's decision (an approval of kind harness).
	Approval *TaskApproval `json:"approval,omitempty"`
}

// TaskApproval says which tool calls wait for a person: Tools of
// "shell", "write" and "network", or every one with All. TimeoutS is
// how long one waits (default 600; past it, denied).
type TaskApproval struct {
	Tools    []string
	All      bool
	TimeoutS int64
}

// MarshalJSON writes tools as "all" or the list.
func (a TaskApproval) MarshalJSON() ([]byte, error) {
	var tools any = a.Tools
	if a.All {
		tools = "all"
	}
	return json.Marshal(map[string]any{"tools": tools, "timeout_s": a.TimeoutS})
}

// UnmarshalJSON reads tools as "all" or a list.
func (a *TaskApproval) UnmarshalJSON(b []byte) error {
	var j struct {
		Tools    json.RawMessage `json:"tools"`
		TimeoutS int64           `json:"timeout_s"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*a = TaskApproval{TimeoutS: j.TimeoutS}
	var all string
	if json.Unmarshal(j.Tools, &all) == nil {
		a.All = all == "all"
		return nil
	}
	return json.Unmarshal(j.Tools, &a.Tools)
}

// TaskRetry bounds the retries of a task (Max 0..10, after the first
// attempt).
type TaskRetry struct {
	Max int `json:"max"`
}

// TaskAttempt is one try of a task; Error says why Airlock failed it (and
// the task was tried again).
type TaskAttempt struct {
	Attempt   int       `json:"attempt"`
	SandboxID string    `json:"sandbox_id,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	Error     string    `json:"error,omitempty"`
}

// TaskUsage is what a task's model calls used over all its attempts, as
// the egress proxy counted them; Reported is what the harness said.
type TaskUsage struct {
	ModelTotals
	Reported ReportedUsage `json:"reported"`
}

// ReportedUsage is the tokens a harness said it used.
type ReportedUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// TaskRepo is exactly one of a tar archive (plain or gzip-compressed, at
// most 32 MiB) unpacked into the workspace, and a git repository the
// task's sandbox clones through its proxy (its host must be in Allow).
type TaskRepo struct {
	Tarball []byte   `json:"tarball,omitempty"`
	Git     *GitRepo `json:"git,omitempty"`
}

// GitRepo is an http(s) URL without credentials and a branch, tag or
// commit (default: the remote's HEAD).
type GitRepo struct {
	URL string `json:"url"`
	Ref string `json:"ref,omitempty"`
}

// TaskModel names the model endpoint a harness talks to.
type TaskModel struct {
	Provider string `json:"provider,omitempty"`
	BaseURL  string `json:"base_url,omitempty"`
	Name     string `json:"name,omitempty"`
}

// TaskLimits are a task sandbox's resources (zero: the defaults).
type TaskLimits struct {
	CPUs     float64 `json:"cpus,omitempty"`
	MemoryMB int64   `json:"memory_mb,omitempty"`
	Pids     int64   `json:"pids,omitempty"`
	DiskMB   int64   `json:"disk_mb,omitempty"`
}

// Task states.
const (
	TaskQueued    = "queued"
	TaskRunning   = "running"
	TaskSucceeded = "succeeded"
	TaskFailed    = "failed"
	TaskTimedOut  = "timed_out"
	TaskCancelled = "cancelled"
)

// Task is a task as the server shows it.
type Task struct {
	ID      string   `json:"id"`
	State   string   `json:"state"`
	Reason  string   `json:"reason,omitempty"`
	Harness string   `json:"harness"`
	Prompt  string   `json:"prompt"`
	Command []string `json:"command,omitempty"`
	Files   []string `json:"files"`
	// Repo is the repo the task started from: a tarball by its size.
	Repo *struct {
		TarballBytes int      `json:"tarball_bytes,omitempty"`
		Git          *GitRepo `json:"git,omitempty"`
	} `json:"repo,omitempty"`
	Env           []string   `json:"env,omitempty"`
	Allow         []string   `json:"allow,omitempty"`
	Secrets       []string   `json:"secrets,omitempty"`
	Model         *TaskModel `json:"model,omitempty"`
	Limits        TaskLimits `json:"limits"`
	TimeoutS      int64      `json:"timeout_s"`
	Artifacts     []string   `json:"artifacts,omitempty"`
	SandboxID     string     `json:"sandbox_id,omitempty"`
	ExitCode      *int       `json:"exit_code,omitempty"`
	Summary       string     `json:"summary,omitempty"`
	QueuePosition *int       `json:"queue_position,omitempty"`
	Usage         TaskUsage  `json:"usage"`
	// CostUSD is nil on a server without a price table.
	CostUSD   *Cost         `json:"cost_usd,omitempty"`
	Budget    *Budget       `json:"budget,omitempty"`
	Retry     *TaskRetry    `json:"retry,omitempty"`
	Approval  *TaskApproval `json:"approval,omitempty"`
	Attempts  []TaskAttempt `json:"attempts"`
	CreatedAt time.Time     `json:"created_at"`
	StartedAt time.Time     `json:"started_at,omitzero"`
	EndedAt   time.Time     `json:"ended_at,omitzero"`
}

// Ended reports whether the task is in a final state.
func (t Task) Ended() bool {
	return t.State != TaskQueued && t.State != TaskRunning
}

// TaskEvent is one normalized task event; only its type's fields are set.
type TaskEvent struct {
	Seq          int64           `json:"seq"`
	Type         string          `json:"type"`
	Time         time.Time       `json:"time"`
	SandboxID    string          `json:"sandbox_id,omitempty"`
	Role         string          `json:"role,omitempty"`
	Text         string          `json:"text,omitempty"`
	Name         string          `json:"name,omitempty"`
	ID           string          `json:"id,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	Output       string          `json:"output,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	Argv         []string        `json:"argv,omitempty"`
	ExitCode     *int            `json:"exit_code,omitempty"`
	Path         string          `json:"path,omitempty"`
	Kind         string          `json:"kind,omitempty"`
	InputTokens  int64           `json:"input_tokens,omitempty"`
	OutputTokens int64           `json:"output_tokens,omitempty"`
	Status       string          `json:"status,omitempty"`
	Summary      string          `json:"summary,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	Harness      string          `json:"harness,omitempty"`
	Approval     string          `json:"approval,omitempty"` // approval: its id
	// Source says who counted a usage event: "proxy" (one model call, in
	// Call) or "harness" (its own report, in the token fields).
	Source string     `json:"source,omitempty"`
	Call   *ModelCall `json:"call,omitempty"`
	// Attempt numbers the attempt an attempt event starts.
	Attempt   int    `json:"attempt,omitempty"`
	Line      string `json:"line,omitempty"`
	Stream    string `json:"stream,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// TaskArtifact is one kept file of a task (Size is the file's whole size;
// Truncated says only part was kept).
type TaskArtifact struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Truncated bool   `json:"truncated"`
}

// TaskArtifacts is a task's artifact list with its workspace diff (nil
// when the task kept none, e.g. it was cancelled).
type TaskArtifacts struct {
	Artifacts []TaskArtifact `json:"artifacts"`
	Diff      *struct {
		TaskArtifact
		Text string `json:"text"`
	} `json:"diff"`
}

// TaskListOptions selects tasks; zero fields match all.
type TaskListOptions struct {
	States  []string
	Harness string
	Limit   int
	After   string
}

// TaskPage is one page of tasks; Next, when set, is the After of the next.
type TaskPage struct {
	Tasks []Task `json:"tasks"`
	Next  string `json:"next"`
}

func taskPath(id, suffix string) string { return "/v1/tasks/" + url.PathEscape(id) + suffix }

// CreateTask submits a task; it is queued and runs when the tenant's
// concurrency allows.
func (c *Client) CreateTask(ctx context.Context, req TaskRequest) (Task, error) {
	var t Task
	err := c.doJSON(ctx, http.MethodPost, "/v1/tasks", nil, req, &t)
	return t, err
}

// GetTask returns a task.
func (c *Client) GetTask(ctx context.Context, id string) (Task, error) {
	var t Task
	err := c.doJSON(ctx, http.MethodGet, taskPath(id, ""), nil, nil, &t)
	return t, err
}

// ListTasks returns one page of the caller's tasks.
func (c *Client) ListTasks(ctx context.Context, opts TaskListOptions) (TaskPage, error) {
	q := url.Values{}
	if len(opts.States) > 0 {
		q.Set("state", strings.Join(opts.States, ","))
	}
	if opts.Harness != "" {
		q.Set("harness", opts.Harness)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.After != "" {
		q.Set("after", opts.After)
	}
	var p TaskPage
	err := c.doJSON(ctx, http.MethodGet, "/v1/tasks", q, nil, &p)
	return p, err
}

// CancelTask cancels a task and returns it as it ended.
func (c *Client) CancelTask(ctx context.Context, id string) (Task, error) {
	var t Task
	err := c.doJSON(ctx, http.MethodPost, taskPath(id, "/cancel"), nil, nil, &t)
	return t, err
}

// TaskEvents returns the task's stored events numbered above after.
func (c *Client) TaskEvents(ctx context.Context, id string, after int64) ([]TaskEvent, error) {
	var r struct {
		Events []TaskEvent `json:"events"`
	}
	err := c.doJSON(ctx, http.MethodGet, taskPath(id, "/events"), url.Values{"after": {strconv.FormatInt(after, 10)}}, nil, &r)
	return r.Events, err
}

// FollowTask calls fn with each of the task's events numbered above after,
// as they come, until task.finished (then it returns nil), ctx ends or fn
// fails. It returns the number of the last event fn got, to resume from.
// A stream that breaks (the server restarted, say: the task goes on) is
// followed again from there, for up to a minute without an event.
func (c *Client) FollowTask(ctx context.Context, id string, after int64, fn func(TaskEvent) error) (last int64, err error) {
	last = after
	deadline := time.Now().Add(resumeFor)
	wait := 100 * time.Millisecond
	for {
		var fnErr error
		hdr := http.Header{"Last-Event-ID": {strconv.FormatInt(last, 10)}}
		err = c.followSSE(ctx, taskPath(id, "/events"), nil, hdr, "task events", func(ev sseEvent) (bool, error) {
			var e TaskEvent
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				fnErr = fmt.Errorf("decode task event: %w", err)
				return true, fnErr
			}
			if fnErr = fn(e); fnErr != nil {
				return true, fnErr
			}
			last = e.Seq
			deadline, wait = time.Now().Add(resumeFor), 100*time.Millisecond
			return e.Type == "task.finished", nil
		})
		if err == nil || fnErr != nil || ctx.Err() != nil || !brokenStream(err) || time.Now().After(deadline) {
			return last, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return last, ctx.Err()
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// brokenStream says err is a stream cut by the server's going away (or
// refused while it is away), not an answer: worth following again.
func brokenStream(err error) bool {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Status == http.StatusServiceUnavailable || ce.Status == http.StatusBadGateway || ce.Code == "unavailable"
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// TaskArtifacts lists the task's artifacts and returns its diff.
func (c *Client) TaskArtifacts(ctx context.Context, id string) (TaskArtifacts, error) {
	var a TaskArtifacts
	err := c.doJSON(ctx, http.MethodGet, taskPath(id, "/artifacts"), nil, nil, &a)
	return a, err
}

// ReadTaskArtifact copies one artifact (its workspace path) to w.
func (c *Client) ReadTaskArtifact(ctx context.Context, id, path string, w io.Writer) (int64, error) {
	resp, err := c.do(ctx, http.MethodGet, taskPath(id, "/artifacts"), url.Values{"path": {path}}, nil, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("read artifact %s: %w", path, err)
	}
	return n, nil
}

// ReadTaskDiff copies the task's workspace diff (git format, binary
// patches included) to w.
func (c *Client) ReadTaskDiff(ctx context.Context, id string, w io.Writer) (int64, error) {
	resp, err := c.do(ctx, http.MethodGet, taskPath(id, "/artifacts"), url.Values{"diff": {"1"}}, nil, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("read diff: %w", err)
	}
	return n, nil
}

// Harness is a row of the harness table (GET /v1/harnesses).
type Harness struct {
	Name      string   `json:"name"`
	Package   string   `json:"package,omitempty"`
	Version   string   `json:"version,omitempty"`
	Template  string   `json:"template"`
	Built     bool     `json:"built"`
	BuildHint string   `json:"build_hint,omitempty"`
	KeyEnv    string   `json:"key_env,omitempty"`
	Hosts     []string `json:"hosts"`
}

// Harnesses lists the harnesses this server runs tasks with, and whether
// it has each one's template.
func (c *Client) Harnesses(ctx context.Context) ([]Harness, error) {
	var out struct {
		Harnesses []Harness `json:"harnesses"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/v1/harnesses", nil, nil, &out)
	return out.Harnesses, err
}
