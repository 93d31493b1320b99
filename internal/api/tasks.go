package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tasks"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

var errNoTasks = errf(http.StatusServiceUnavailable, codeUnavailable, "this server does not run tasks")

// maxTaskBody bounds POST /v1/tasks: its files and repo tarball (base64)
// travel in the body.
const maxTaskBody = tasks.MaxTarball*4/3 + 16<<20

// taskJSON is a task as the API shows it: the request but its files
// (listed by path) and env (names only: values may be credentials).
type taskJSON struct {
	ID        string        `json:"id"`
	State     string        `json:"state"`
	Reason    string        `json:"reason,omitempty"`
	Harness   string        `json:"harness"`
	Prompt    string        `json:"prompt"`
	Command   []string      `json:"command,omitempty"`
	Files     []string      `json:"files"`
	Repo      *taskRepoJSON `json:"repo,omitempty"`
	Env       []string      `json:"env,omitempty"`
	Allow     []string      `json:"allow,omitempty"`
	Secrets   []string      `json:"secrets,omitempty"`
	Model     *tasks.Model  `json:"model,omitempty"`
	Limits    tasks.Limits  `json:"limits"`
	TimeoutS  int64         `json:"timeout_s"`
	Artifacts []string      `json:"artifacts,omitempty"`
	SandboxID string        `json:"sandbox_id,omitempty"`
	ExitCode  *int          `json:"exit_code,omitempty"`
	Summary   string        `json:"summary,omitempty"`
	Usage     tasks.Usage   `json:"usage"`
	// CostUSD is left out when the server has no price table.
	CostUSD  *sandbox.Cost   `json:"cost_usd,omitempty"`
	Budget   *sandbox.Budget `json:"budget,omitempty"`
	Retry    *tasks.Retry    `json:"retry,omitempty"`
	Approval *tasks.Approval `json:"approval,omitempty"`
	// Continue and KeepWorkspaceS: a follow-up turn and its kept
	// workspace (tasks' continuation.go).
	Continue       string          `json:"continue,omitempty"`
	KeepWorkspaceS int64           `json:"keep_workspace_s,omitempty"`
	Attempts       []tasks.Attempt `json:"attempts"`
	Position       *int            `json:"queue_position,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	StartedAt      time.Time       `json:"started_at,omitzero"`
	EndedAt        time.Time       `json:"ended_at,omitzero"`
}

// taskRepoJSON is the repo a task started from: a tarball by its size.
type taskRepoJSON struct {
	TarballBytes int            `json:"tarball_bytes,omitempty"`
	Git          *tasks.GitRepo `json:"git,omitempty"`
}

func (s *server) taskToJSON(t tasks.Task) taskJSON {
	r := t.Request
	out := taskJSON{
		ID: t.ID, State: t.State, Reason: t.Reason, Harness: t.Harness, Prompt: r.Prompt, Command: r.Command,
		Files: make([]string, 0, len(r.Files)), Allow: r.Allow, Secrets: r.Secrets, Model: r.Model, Limits: r.Limits,
		TimeoutS: r.TimeoutS, Artifacts: r.Artifacts, SandboxID: t.SandboxID, Summary: t.Summary,
		Usage: t.Usage, CostUSD: t.Usage.CostUSD, Budget: r.Budget, Retry: r.Retry, Attempts: t.Attempts,
		Approval: r.Approval, Continue: r.Continue, KeepWorkspaceS: r.KeepWorkspaceS,
		CreatedAt: t.CreatedAt, StartedAt: t.StartedAt, EndedAt: t.EndedAt,
	}
	for p := range r.Files {
		out.Files = append(out.Files, p)
	}
	slices.Sort(out.Files)
	for k := range r.Env {
		out.Env = append(out.Env, k)
	}
	slices.Sort(out.Env)
	if t.HasExit {
		out.ExitCode = &t.ExitCode
	}
	if t.State == taskrec.Queued {
		if p := s.tasks.Position(t); p >= 0 {
			out.Position = &p
		}
	}
	if r.Repo != nil {
		out.Repo = &taskRepoJSON{TarballBytes: len(r.Repo.Tarball), Git: r.Repo.Git}
	}
	if out.Attempts == nil {
		out.Attempts = []tasks.Attempt{}
	}
	out.Usage.Reported = tasks.ReportedUsage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens}
	return out
}

func (s *server) createTask(w http.ResponseWriter, r *http.Request) {
	if s.tasks == nil {
		s.fail(w, r, errNoTasks)
		return
	}
	var req tasks.Request
	if err := readJSON(w, r, max(s.maxJSON, maxTaskBody), &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.tasks.Submit(r.Context(), callerOf(r), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/tasks/"+t.ID)
	writeJSON(w, http.StatusCreated, s.taskToJSON(t))
}

var taskStates = []string{taskrec.Queued, taskrec.Running, taskrec.Succeeded, taskrec.Failed, taskrec.TimedOut, taskrec.Cancelled}

func (s *server) listTasks(w http.ResponseWriter, r *http.Request) {
	if s.tasks == nil {
		s.fail(w, r, errNoTasks)
		return
	}
	if err := checkQuery(r, []string{"state", "harness", "limit", "after"}); err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	var f taskrec.Filter
	if v := q.Get("state"); v != "" {
		for _, st := range strings.Split(v, ",") {
			if !slices.Contains(taskStates, st) {
				s.fail(w, r, invalidf("query parameter state=%q: want some of %s", v, strings.Join(taskStates, ", ")))
				return
			}
			f.States = append(f.States, st)
		}
	}
	if v := q.Get("harness"); v != "" {
		if _, ok := tasks.Lookup(v); !ok {
			s.fail(w, r, invalidf("query parameter harness=%q: want one of %s", v, strings.Join(tasks.HarnessNames(), ", ")))
			return
		}
		f.Harness = v
	}
	page, err := pageSize(q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f.After, f.Limit = q.Get("after"), page+1
	list, err := s.tasks.List(r.Context(), callerOf(r), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, next := pageOf(list, page, func(t tasks.Task) string { return t.ID })
	out := struct {
		Tasks []taskJSON `json:"tasks"`
		Next  string     `json:"next"`
	}{Tasks: make([]taskJSON, 0, len(list)), Next: next}
	for _, t := range list {
		out.Tasks = append(out.Tasks, s.taskToJSON(t))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) getTask(w http.ResponseWriter, r *http.Request) {
	if s.tasks == nil {
		s.fail(w, r, errNoTasks)
		return
	}
	t, err := s.tasks.Get(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.taskToJSON(t))
}

func (s *server) cancelTask(w http.ResponseWriter, r *http.Request) {
	if s.tasks == nil {
		s.fail(w, r, errNoTasks)
		return
	}
	t, err := s.tasks.Cancel(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.taskToJSON(t))
}

// taskEvents answers the task's events: as SSE (Accept:
// text/event-stream), following them to task.finished, each with its
// sequence number as the id so Last-Event-ID resumes; else as one JSON
// list of what is stored now.
func (s *server) taskEvents(w http.ResponseWriter, r *http.Request) {
	if s.tasks == nil {
		s.fail(w, r, errNoTasks)
		return
	}
	if err := checkQuery(r, []string{"after", "limit"}); err != nil {
		s.fail(w, r, err)
		return
	}
	after, err := afterParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, id := callerOf(r), r.PathValue("id")
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		limit := 1000
		if v := r.URL.Query().Get("limit"); v != "" {
			if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 1000 {
				s.fail(w, r, invalidf("query parameter limit=%q: want an integer from 1 to 1000", v))
				return
			}
		}
		evs, err := s.tasks.Events(r.Context(), c, id, after, limit)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, struct {
			Events []tasks.Event `json:"events"`
		}{evs})
		return
	}
	st := &sseStream{w: w, rc: http.NewResponseController(w)}
	stop := st.keepAlive(s.keepAlive)
	defer stop()
	err = s.tasks.Follow(r.Context(), c, id, after, func() { st.begin() }, func(e tasks.Event) error {
		return st.idEvent(strconv.FormatInt(e.Seq, 10), e.Type, e)
	})
	st.mu.Lock()
	begun := st.begun
	st.mu.Unlock()
	switch {
	case r.Context().Err() != nil:
	case !begun && err != nil:
		s.fail(w, r, err)
	case err != nil:
		s.log.Error("task event stream failed", "task", id, "err", err)
		_, code, msg := statusOf(err)
		st.event("error", errorDetail{Code: code, Message: msg})
	}
}

// afterParam reads where an event list starts: Last-Event-ID wins over
// ?after=; neither is 0 (from the first event).
func afterParam(r *http.Request) (int64, error) {
	var after int64
	for _, src := range []struct{ what, v string }{
		{"query parameter after", r.URL.Query().Get("after")},
		{"header Last-Event-ID", r.Header.Get("Last-Event-ID")},
	} {
		if src.v == "" {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(src.v), 10, 64)
		if err != nil || n < 0 {
			return 0, invalidf("%s %q: want an event number (0 or more)", src.what, src.v)
		}
		after = n
	}
	return after, nil
}

// idEvent writes one SSE event with an id and flushes it.
func (st *sseStream) idEvent(id, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", name, err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.beginLocked()
	if _, err := fmt.Fprintf(st.w, "id: %s\nevent: %s\ndata: %s\n\n", id, name, data); err != nil {
		return fmt.Errorf("write %s event: %w", name, err)
	}
	return st.rc.Flush()
}

// artifactJSON is one entry of a task's artifact list.
type artifactJSON struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Truncated bool   `json:"truncated"`
}

// taskArtifacts lists the task's artifacts and its workspace diff
// (inline); with ?path=P it answers that file's bytes, with ?diff=1 the
// diff's.
func (s *server) taskArtifacts(w http.ResponseWriter, r *http.Request) {
	if s.tasks == nil {
		s.fail(w, r, errNoTasks)
		return
	}
	if err := checkQuery(r, []string{"path", "diff"}); err != nil {
		s.fail(w, r, err)
		return
	}
	c, id := callerOf(r), r.PathValue("id")
	rawDiff, err := queryBool(r, "diff")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if p := r.URL.Query().Get("path"); p != "" || rawDiff {
		kind, name := "file", p
		if rawDiff {
			kind, name = "diff", "workspace.diff"
		}
		a, err := s.tasks.Artifact(r.Context(), c, id, kind, name)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		if rawDiff {
			h.Set("Content-Type", "text/x-diff; charset=utf-8")
		}
		h.Set("Content-Length", strconv.Itoa(len(a.Content)))
		h.Set("X-Airlock-Truncated", strconv.FormatBool(a.Truncated))
		w.WriteHeader(http.StatusOK)
		w.Write(a.Content)
		return
	}
	list, err := s.tasks.Artifacts(r.Context(), c, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Artifacts []artifactJSON `json:"artifacts"`
		Diff      *struct {
			artifactJSON
			Text string `json:"text"`
		} `json:"diff"`
	}{Artifacts: []artifactJSON{}}
	for _, a := range list {
		j := artifactJSON{Path: a.Name, Size: a.Size, SHA256: a.SHA256, Truncated: a.Truncated}
		if a.Kind == "file" {
			out.Artifacts = append(out.Artifacts, j)
			continue
		}
		d, err := s.tasks.Artifact(r.Context(), c, id, "diff", a.Name)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out.Diff = &struct {
			artifactJSON
			Text string `json:"text"`
		}{j, string(d.Content)}
	}
	writeJSON(w, http.StatusOK, out)
}

// listHarnesses answers the harness table: what each harness installs,
// whether this server has its template, and how an admin builds it.
func (s *server) listHarnesses(w http.ResponseWriter, r *http.Request) {
	if s.tasks == nil {
		s.fail(w, r, errNoTasks)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Harnesses []tasks.Info `json:"harnesses"`
	}{s.tasks.Harnesses()})
}
