package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

type taskIn struct {
	Harness   string            `json:"harness" jsonschema:"generic (runs command), codex or claude"`
	Prompt    string            `json:"prompt,omitempty" jsonschema:"the task; the harness gets it on stdin and in $AIRLOCK_TASK_PROMPT"`
	Command   []string          `json:"command,omitempty" jsonschema:"argv of the generic harness, e.g. [\"sh\", \"-c\", \"...\"]"`
	Files     map[string]string `json:"files,omitempty" jsonschema:"workspace files: relative path -> text content"`
	Allow     []string          `json:"allow,omitempty" jsonschema:"domains the task may reach (none by default)"`
	Secrets   []string          `json:"secrets,omitempty" jsonschema:"stored secrets the egress proxy injects (the task never sees their values)"`
	TimeoutS  int64             `json:"timeout_s,omitempty" jsonschema:"seconds the harness may run (default 600)"`
	Artifacts []string          `json:"artifacts,omitempty" jsonschema:"workspace globs of files to keep (e.g. out/**); default: the files the task added or changed"`
}

type taskOut struct {
	TaskID    string        `json:"task_id"`
	SandboxID string        `json:"sandbox_id,omitempty" jsonschema:"the sandbox it ran in (destroyed; its audit log is kept)"`
	State     string        `json:"state" jsonschema:"succeeded, failed, timed_out or cancelled"`
	Reason    string        `json:"reason,omitempty"`
	ExitCode  *int          `json:"exit_code,omitempty"`
	Summary   string        `json:"summary,omitempty" jsonschema:"the harness's final answer"`
	Events    []string      `json:"events" jsonschema:"the task's events, one line each (the last ones if there were many)"`
	Diff      string        `json:"diff" jsonschema:"unified diff of the workspace against its start (cut at 64 KiB)"`
	Artifacts []string      `json:"artifacts,omitempty" jsonschema:"kept files, readable over the API"`
	Note      string        `json:"note,omitempty"`
	Approvals []approvalOut `json:"approvals,omitempty" jsonschema:"approvals the task's sandbox asked for (a harness's tool call, a connection) and how each ended"`
}

// Bounds of what task_run hands a model.
const (
	maxTaskEvents = 200
	maxTaskDiff   = 64 << 10
)

func (b *bridge) addTaskTools(s *mcpsdk.Server) {
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "task_run", Description: "Run an agent harness (or any command, harness generic) on a prompt and files " +
		"in a fresh sandbox of its own, wait for it, and return its state, summary, events and the diff of its workspace. " +
		"The sandbox is destroyed at the end; cancelling the call cancels the task."}, b.taskRun)
}

func (b *bridge) taskRun(ctx context.Context, req *mcpsdk.CallToolRequest, in taskIn) (*mcpsdk.CallToolResult, taskOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, taskOut{}, err
	}
	if req.Params.RequestState != "" || askModeOf(req) == askInput {
		return b.taskRounds(ctx, req, c, in)
	}
	t, err := c.CreateTask(ctx, taskRequest(in))
	if err != nil {
		return nil, taskOut{}, toolError(ctx, c, "", err)
	}
	s := startSentry(ctx, req, c, target{task: t.ID})
	var lines []string
	_, err = c.FollowTask(ctx, t.ID, 0, collectLines(&lines))
	approvals, notes := s.finish(ctx)
	if ctx.Err() != nil {
		return nil, taskOut{}, cancelTask(ctx, c, t.ID)
	}
	if err != nil {
		return nil, taskOut{}, toolError(ctx, c, "", err)
	}
	out, err := taskOutcome(ctx, c, t.ID, lines)
	if err != nil {
		return nil, taskOut{}, err
	}
	out.Approvals = approvals
	out.Note = joinNotes(out.Note, notes)
	return nil, out, nil
}

// taskRounds is task_run for a client asked with input_required: the
// task goes on running on the server between rounds, and each round follows its
// events from the start.
func (b *bridge) taskRounds(ctx context.Context, req *mcpsdk.CallToolRequest, c *client.Client, in taskIn) (*mcpsdk.CallToolResult, taskOut, error) {
	st, notes, err := b.resume(ctx, req, c, "task_run", digest(in))
	if err != nil {
		return nil, taskOut{}, err
	}
	if st.Task == "" {
		t, err := c.CreateTask(ctx, taskRequest(in))
		if err != nil {
			return nil, taskOut{}, toolError(ctx, c, "", err)
		}
		st.Task = t.ID
	}
	w := watchFor(ctx, c, target{task: st.Task}, &st, &notes)
	var lines []string
	opened, err := waitOrAsk(ctx, w, func(fctx context.Context) error {
		lines = nil
		_, err := c.FollowTask(fctx, st.Task, 0, collectLines(&lines))
		return err
	})
	if len(opened) > 0 {
		res, err := b.askRound(st, w, opened)
		return res, taskOut{}, err
	}
	if ctx.Err() != nil {
		return nil, taskOut{}, cancelTask(ctx, c, st.Task)
	}
	if err != nil {
		return nil, taskOut{}, toolError(ctx, c, "", err)
	}
	out, err := taskOutcome(ctx, c, st.Task, lines)
	if err != nil {
		return nil, taskOut{}, err
	}
	approvals, more := w.ended(ctx)
	out.Approvals = approvals
	out.Note = joinNotes(out.Note, append(notes, more...))
	return nil, out, nil
}

func taskRequest(in taskIn) client.TaskRequest {
	return client.TaskRequest{Harness: in.Harness, Prompt: in.Prompt, Command: in.Command, Files: in.Files,
		Allow: in.Allow, Secrets: in.Secrets, TimeoutS: in.TimeoutS, Artifacts: in.Artifacts}
}

// collectLines keeps the last maxTaskEvents events as lines.
func collectLines(lines *[]string) func(client.TaskEvent) error {
	return func(e client.TaskEvent) error {
		if l := eventLine(e); l != "" {
			*lines = append(*lines, l)
			if len(*lines) > maxTaskEvents {
				*lines = (*lines)[1:]
			}
		}
		return nil
	}
}

// cancelTask cancels task id for a call that was cancelled: the task must
// not run on unwatched.
func cancelTask(ctx context.Context, c *client.Client, id string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	c.CancelTask(cctx, id)
	cancel()
	return fmt.Errorf("cancelled: task %s cancelled", id)
}

// taskOutcome is task_run's answer for the finished task id.
func taskOutcome(ctx context.Context, c *client.Client, id string, lines []string) (taskOut, error) {
	t, err := c.GetTask(ctx, id)
	if err != nil {
		return taskOut{}, toolError(ctx, c, "", err)
	}
	out := taskOut{TaskID: t.ID, SandboxID: t.SandboxID, State: t.State, Reason: t.Reason, ExitCode: t.ExitCode,
		Summary: t.Summary, Events: lines}
	if out.Events == nil {
		out.Events = []string{}
	}
	arts, err := c.TaskArtifacts(ctx, t.ID)
	if err != nil {
		return taskOut{}, toolError(ctx, c, "", err)
	}
	if arts.Diff != nil {
		out.Diff = arts.Diff.Text
		if len(out.Diff) > maxTaskDiff {
			out.Diff = strings.ToValidUTF8(out.Diff[:maxTaskDiff], "") + "\n[diff cut at 64 KiB]"
		}
	}
	for _, a := range arts.Artifacts {
		out.Artifacts = append(out.Artifacts, a.Path)
	}
	return out, nil
}

// eventLine is one event as a line a model reads easily ("" to leave it
// out).
func eventLine(e client.TaskEvent) string {
	switch e.Type {
	case "message":
		return e.Role + ": " + e.Text
	case "tool_call":
		return "tool call " + e.Name + " " + string(e.Input)
	case "tool_result":
		return "tool result " + e.Name + ": " + cut(e.Output, 500)
	case "command":
		code := "?"
		if e.ExitCode != nil {
			code = fmt.Sprint(*e.ExitCode)
		}
		return "command " + strings.Join(e.Argv, " ") + " (exit " + code + ")"
	case "file_change":
		return e.Kind + " " + e.Path
	case "raw":
		return e.Stream + ": " + cut(e.Line, 500)
	case "task.finished":
		return "finished " + e.Status + ": " + e.Summary
	}
	return ""
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
