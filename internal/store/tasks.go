package store

import (
	"database/sql"
	"time"
)

// Task states.
const (
	TaskQueued    = "queued"
	TaskRunning   = "running"
	TaskSucceeded = "succeeded"
	TaskFailed    = "failed"
	TaskTimedOut  = "timed_out"
	TaskCancelled = "cancelled"
)

// Task is the durable record of one task: a harness run in a sandbox of
// its own. Spec is the request as JSON, opaque to the store (package tasks
// owns it). ExitCode is meaningful only when HasExit is set.
type Task struct {
	ID           string
	TenantID     string
	KeyID        string
	Harness      string
	State        string
	Reason       string
	Spec         string
	SandboxID    string
	ExitCode     int
	HasExit      bool
	Summary      string
	CreatedAt    time.Time
	StartedAt    time.Time
	EndedAt      time.Time
	InputTokens  int64
	OutputTokens int64
	// Progress is how far a running task got, for the next daemon to go
	// on from (JSON, opaque to the store; package tasks owns it).
	Progress string
}

// TaskFilter selects tasks in ListTasks. Zero fields match everything.
type TaskFilter struct {
	TenantID string
	States   []string // any of these
	Harness  string
	After    string // pagination: ids ascending, strictly after this one
	Limit    int    // 0 = no limit
}

// TaskEvent is one normalized event of a task. Seq numbers a task's events
// from 1 (set by the store); Data is the event's JSON, opaque to the store.
type TaskEvent struct {
	TaskID    string
	Seq       int64
	Time      time.Time
	Type      string
	SandboxID string
	Data      []byte
}

// TaskArtifact is a file a task left (or its workspace diff). Content is
// nil in listings. Truncated says Content holds only the first Size bytes
// kept of a longer file.
type TaskArtifact struct {
	TaskID    string
	Name      string
	Kind      string // "file" or "diff"
	Size      int64
	SHA256    string
	Truncated bool
	Content   []byte
}

// TaskCols are the columns ScanTask reads.
const TaskCols = `id, tenant_id, key_id, harness, state, reason, spec, sandbox_id, exit_code,
	summary, created_at, started_at, ended_at, input_tokens, output_tokens, progress`

// ScanTask reads a row of the task columns.
func ScanTask(r Scanner) (Task, error) {
	var t Task
	var exit, created, started, ended sql.NullInt64
	err := r.Scan(&t.ID, &t.TenantID, &t.KeyID, &t.Harness, &t.State, &t.Reason, &t.Spec, &t.SandboxID, &exit,
		&t.Summary, &created, &started, &ended, &t.InputTokens, &t.OutputTokens, &t.Progress)
	if err != nil {
		return Task{}, NotFound(err)
	}
	t.HasExit, t.ExitCode = exit.Valid, int(exit.Int64)
	t.CreatedAt, t.StartedAt, t.EndedAt = FromNanos(created), FromNanos(started), FromNanos(ended)
	return t, nil
}
