package tasks

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// Normalized event types: the one stream every harness is turned into.
const (
	EventStarted    = "task.started"
	EventMessage    = "message"
	EventToolCall   = "tool_call"
	EventToolResult = "tool_result"
	EventCommand    = "command"
	EventFileChange = "file_change"
	EventUsage      = "usage"
	EventFinished   = "task.finished"
	EventRaw        = "raw"
	// EventApproval: the harness asked a person (status pending), and
	// the answer (allowed, denied, timed_out).
	EventApproval = "approval"
)

// harnessTypes are the types a harness may report itself; task.started
// and task.finished belong to the service, so a harness printing them
// cannot forge a task's end.
var harnessTypes = map[string]bool{
	EventMessage: true, EventToolCall: true, EventToolResult: true, EventCommand: true,
	EventFileChange: true, EventUsage: true, EventRaw: true,
}

// Event is one normalized task event. Only the fields of its type are
// set; Seq numbers a task's events from 1.
type Event struct {
	Seq       int64     `json:"seq,omitempty"`
	Type      string    `json:"type"`
	Time      time.Time `json:"time,omitzero"`
	SandboxID string    `json:"sandbox_id,omitempty"`

	Role    string          `json:"role,omitempty"`     // message: assistant, user, reasoning
	Text    string          `json:"text,omitempty"`     // message
	Name    string          `json:"name,omitempty"`     // tool_call, tool_result
	ID      string          `json:"id,omitempty"`       // tool_call, tool_result: the call's id
	Input   json.RawMessage `json:"input,omitempty"`    // tool_call
	Output  string          `json:"output,omitempty"`   // tool_result, command
	IsError bool            `json:"is_error,omitempty"` // tool_result
	Argv    []string        `json:"argv,omitempty"`     // command
	// ExitCode is the command's (command) or the harness's (task.finished).
	ExitCode     *int   `json:"exit_code,omitempty"`
	Path         string `json:"path,omitempty"` // file_change
	Kind         string `json:"kind,omitempty"` // file_change: added, modified, deleted; approval: command or harness
	InputTokens  int64  `json:"input_tokens,omitempty"`
	OutputTokens int64  `json:"output_tokens,omitempty"`
	Status       string `json:"status,omitempty"`   // task.finished: the task's final state; approval: its state
	Summary      string `json:"summary,omitempty"`  // task.finished
	Reason       string `json:"reason,omitempty"`   // task.finished: why it failed, if not the harness
	Harness      string `json:"harness,omitempty"`  // task.started
	Approval     string `json:"approval,omitempty"` // approval: its id
	// Source says who counted a usage event: "proxy" (Call: one model
	// call, as the egress proxy read it) or "harness" (the tokens it
	// reported).
	Source string             `json:"source,omitempty"`
	Call   *sandbox.ModelCall `json:"call,omitempty"`
	// Attempt numbers an attempt event (1 is the first).
	Attempt   int    `json:"attempt,omitempty"`
	Line      string `json:"line,omitempty"`   // raw
	Stream    string `json:"stream,omitempty"` // raw: stdout or stderr
	Truncated bool   `json:"truncated,omitempty"`
}

// maxField bounds each text field of an event: a harness's tool result can
// hold a whole file, and the event log is not where files are kept.
const maxField = 64 << 10

// clip shortens the event's long text fields to maxField bytes (on a rune
// boundary), marking it truncated.
func (e *Event) clip() {
	for _, f := range []*string{&e.Text, &e.Output, &e.Line, &e.Summary} {
		if len(*f) > maxField {
			*f = truncUTF8(*f, maxField)
			e.Truncated = true
		}
	}
	if len(e.Input) > maxField {
		b, _ := json.Marshal(truncUTF8(string(e.Input), maxField))
		e.Input, e.Truncated = b, true
	}
}

func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func intPtr(n int) *int { return &n }
