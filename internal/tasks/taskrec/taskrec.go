// Package taskrec holds package tasks' records as the stores keep them
// (a task, its events and its artifacts, and a task's states) and the
// methods that keep them (Store). Package tasks owns them and persists
// them through its narrow tasks.Store, which has this Store; store.Store
// has it too, and store/sqlite and store/postgres implement it. It is a
// leaf apart from tasks because tasks imports sandbox, which imports
// store: store importing tasks would be a cycle. It must never import
// anything of Airlock's.
package taskrec

import (
	"context"
	"time"
)

// States of a task.
const (
	Queued    = "queued"
	Running   = "running"
	Succeeded = "succeeded"
	Failed    = "failed"
	TimedOut  = "timed_out"
	Cancelled = "cancelled"
)

// Task is the durable record of one task: a harness run in a sandbox of
// its own. Spec is the request as JSON, opaque to the stores (package
// tasks owns it). ExitCode is meaningful only when HasExit is set.
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
	// on from (JSON, opaque to the stores; package tasks owns it).
	Progress string
}

// Filter selects tasks in ListTasks. Zero fields match everything.
type Filter struct {
	TenantID string
	States   []string // any of these
	Harness  string
	After    string // pagination: ids ascending, strictly after this one
	Limit    int    // 0 = no limit
}

// Event is one normalized event of a task. Seq numbers a task's events
// from 1 (set by the store); Data is the event's JSON, opaque to the
// stores (a tasks.Event).
type Event struct {
	TaskID    string
	Seq       int64
	Time      time.Time
	Type      string
	SandboxID string
	Data      []byte
}

// Artifact is a file a task left (or its workspace diff). Content is nil
// in listings. Truncated says Content holds only the first Size bytes
// kept of a longer file.
type Artifact struct {
	TaskID    string
	Name      string
	Kind      string // "file" or "diff"
	Size      int64
	SHA256    string
	Truncated bool
	Content   []byte
}

// Store keeps tasks, their events and their artifacts. Its not-found and
// conflict errors wrap errdefs' kinds.
type Store interface {
	// CreateTask inserts one (an existing id is a conflict); UpdateTask
	// saves its state, sandbox, exit, summary, times, token counts and
	// progress; ListTasks orders by id.
	CreateTask(ctx context.Context, t Task) error
	GetTask(ctx context.Context, id string) (Task, error)
	UpdateTask(ctx context.Context, t Task) error
	ListTasks(ctx context.Context, f Filter) ([]Task, error)
	// AppendTaskEvents numbers events after the task's newest and stores
	// them in one transaction; TaskEvents returns those after a Seq.
	AppendTaskEvents(ctx context.Context, taskID string, events []Event) error
	TaskEvents(ctx context.Context, taskID string, after int64, limit int) ([]Event, error)
	// SaveTaskArtifacts stores artifacts (replacing same kind and name);
	// TaskArtifacts lists them without content; TaskArtifact reads one.
	SaveTaskArtifacts(ctx context.Context, arts []Artifact) error
	TaskArtifacts(ctx context.Context, taskID string) ([]Artifact, error)
	TaskArtifact(ctx context.Context, taskID, kind, name string) (Artifact, error)
}
