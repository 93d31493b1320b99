package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
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

// tasksSchema holds tasks, their events and their artifacts. Events and
// artifacts go with their task.
const tasksSchema = `CREATE TABLE tasks (
		id            TEXT PRIMARY KEY,
		tenant_id     TEXT NOT NULL,
		key_id        TEXT NOT NULL DEFAULT '',
		harness       TEXT NOT NULL,
		state         TEXT NOT NULL,
		reason        TEXT NOT NULL DEFAULT '',
		spec          TEXT NOT NULL,
		sandbox_id    TEXT NOT NULL DEFAULT '',
		exit_code     INTEGER,
		summary       TEXT NOT NULL DEFAULT '',
		created_at    INTEGER NOT NULL,
		started_at    INTEGER,
		ended_at      INTEGER,
		input_tokens  INTEGER NOT NULL DEFAULT 0,
		output_tokens INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX tasks_tenant ON tasks(tenant_id, id);
	CREATE INDEX tasks_state ON tasks(state, created_at);
	CREATE TABLE task_events (
		task_id    TEXT NOT NULL,
		seq        INTEGER NOT NULL,
		time       INTEGER NOT NULL,
		type       TEXT NOT NULL,
		sandbox_id TEXT NOT NULL DEFAULT '',
		data       BLOB NOT NULL,
		PRIMARY KEY (task_id, seq)
	) WITHOUT ROWID;
	CREATE TABLE task_artifacts (
		task_id   TEXT NOT NULL,
		name      TEXT NOT NULL,
		kind      TEXT NOT NULL,
		size      INTEGER NOT NULL,
		sha256    TEXT NOT NULL,
		truncated INTEGER NOT NULL,
		content   BLOB NOT NULL,
		PRIMARY KEY (task_id, kind, name)
	);
	CREATE TRIGGER tasks_delete_children AFTER DELETE ON tasks
	BEGIN
		DELETE FROM task_events WHERE task_id = OLD.id;
		DELETE FROM task_artifacts WHERE task_id = OLD.id;
	END;`

// TaskCols are the columns ScanTask reads.
const TaskCols = `id, tenant_id, key_id, harness, state, reason, spec, sandbox_id, exit_code,
	summary, created_at, started_at, ended_at, input_tokens, output_tokens, progress`

func taskArgs(t Task) []any {
	var exit sql.NullInt64
	if t.HasExit {
		exit = sql.NullInt64{Int64: int64(t.ExitCode), Valid: true}
	}
	return []any{t.ID, t.TenantID, t.KeyID, t.Harness, t.State, t.Reason, t.Spec, t.SandboxID, exit,
		t.Summary, ToNanos(t.CreatedAt), ToNanos(t.StartedAt), ToNanos(t.EndedAt), t.InputTokens, t.OutputTokens, t.Progress}
}

// ScanTask reads a row of the task columns.
func ScanTask(r Scanner) (Task, error) {
	var t Task
	var exit, created, started, ended sql.NullInt64
	err := r.Scan(&t.ID, &t.TenantID, &t.KeyID, &t.Harness, &t.State, &t.Reason, &t.Spec, &t.SandboxID, &exit,
		&t.Summary, &created, &started, &ended, &t.InputTokens, &t.OutputTokens, &t.Progress)
	if err != nil {
		return Task{}, notFound(err)
	}
	t.HasExit, t.ExitCode = exit.Valid, int(exit.Int64)
	t.CreatedAt, t.StartedAt, t.EndedAt = FromNanos(created), FromNanos(started), FromNanos(ended)
	return t, nil
}

// CreateTask inserts t (its spec counts against its tenant's storage);
// an existing id is ErrConflict.
func (s *SQLite) CreateTask(ctx context.Context, t Task) error {
	err := s.storageTx(ctx, "create task", func(tx *sql.Tx, d storageDelta) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tasks (`+TaskCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, taskArgs(t)...); err != nil {
			return mapErr(err)
		}
		d.add(t.TenantID, int64(len(t.Spec))+taskRowBytes)
		return nil
	})
	if err != nil {
		return fmt.Errorf("create task %s: %w", t.ID, err)
	}
	return nil
}

// taskTenant returns the tenant of a task, "" if there is no such task
// (its events and artifacts then count for nobody, as in storageRecount).
func taskTenant(ctx context.Context, tx *sql.Tx, taskID string) (string, error) {
	var tenant string
	err := tx.QueryRowContext(ctx, `SELECT tenant_id FROM tasks WHERE id = ?`, taskID).Scan(&tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return tenant, err
}

// GetTask returns the task with the id, or ErrNotFound.
func (s *SQLite) GetTask(ctx context.Context, id string) (Task, error) {
	t, err := ScanTask(s.queryRow(ctx, `SELECT `+TaskCols+` FROM tasks WHERE id = ?`, id))
	if err != nil {
		return Task{}, fmt.Errorf("get task %s: %w", id, err)
	}
	return t, nil
}

// UpdateTask replaces every column of the task with t.ID but its tenant,
// key, harness, spec and creation time, which never change.
func (s *SQLite) UpdateTask(ctx context.Context, t Task) error {
	a := taskArgs(t)
	n, err := s.exec(ctx, `UPDATE tasks SET state = ?, reason = ?, sandbox_id = ?, exit_code = ?,
		summary = ?, started_at = ?, ended_at = ?, input_tokens = ?, output_tokens = ?, progress = ? WHERE id = ?`,
		a[4], a[5], a[7], a[8], a[9], a[11], a[12], a[13], a[14], a[15], t.ID)
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("update task %s: %w", t.ID, err)
	}
	return nil
}

// ListTasks returns the tasks f selects, ordered by id.
func (s *SQLite) ListTasks(ctx context.Context, f TaskFilter) ([]Task, error) {
	var where []string
	var args []any
	if f.TenantID != "" {
		where = append(where, `tenant_id = ?`)
		args = append(args, f.TenantID)
	}
	if len(f.States) > 0 {
		where = append(where, `state IN (`+strings.TrimSuffix(strings.Repeat("?, ", len(f.States)), ", ")+`)`)
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	if f.Harness != "" {
		where = append(where, `harness = ?`)
		args = append(args, f.Harness)
	}
	if f.After != "" {
		where = append(where, `id > ?`)
		args = append(args, f.After)
	}
	return listPage(ctx, s, "tasks", TaskCols, "tasks", where, args, f.Limit, ScanTask)
}

// AppendTaskEvents adds events to one task's log in one transaction,
// numbering them after the task's newest (setting each one's Seq).
func (s *SQLite) AppendTaskEvents(ctx context.Context, taskID string, events []TaskEvent) error {
	if len(events) == 0 {
		return nil
	}
	return s.storageTx(ctx, "append task events", func(tx *sql.Tx, d storageDelta) error {
		tenant, err := taskTenant(ctx, tx, taskID)
		if err != nil {
			return fmt.Errorf("append task events of %s: %w", taskID, err)
		}
		var last int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM task_events WHERE task_id = ?`, taskID).Scan(&last); err != nil {
			return fmt.Errorf("append task events of %s: %w", taskID, err)
		}
		for i := range events {
			last++
			e := &events[i]
			e.TaskID, e.Seq = taskID, last
			if _, err := tx.ExecContext(ctx, `INSERT INTO task_events (task_id, seq, time, type, sandbox_id, data)
				VALUES (?, ?, ?, ?, ?, ?)`, taskID, e.Seq, ToNanos(e.Time), e.Type, e.SandboxID, e.Data); err != nil {
				return fmt.Errorf("append task events of %s: %w", taskID, err)
			}
			if tenant != "" {
				d.add(tenant, int64(len(e.Data))+taskEventRowBytes)
			}
		}
		return nil
	})
}

// TaskEvents returns up to limit (0: all) of a task's events with a Seq
// above after, oldest first.
func (s *SQLite) TaskEvents(ctx context.Context, taskID string, after int64, limit int) ([]TaskEvent, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.query(ctx, `SELECT task_id, seq, time, type, sandbox_id, data FROM task_events
		WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?`, taskID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("task events of %s: %w", taskID, err)
	}
	out, err := scanAll(rows, func(r Scanner) (TaskEvent, error) {
		var e TaskEvent
		var at sql.NullInt64
		err := r.Scan(&e.TaskID, &e.Seq, &at, &e.Type, &e.SandboxID, &e.Data)
		e.Time = FromNanos(at)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("task events of %s: %w", taskID, err)
	}
	return out, nil
}

// SaveTaskArtifacts stores a task's artifacts in one transaction,
// replacing any of the same kind and name, and counts them (less what
// they replace) against their tenants' storage.
func (s *SQLite) SaveTaskArtifacts(ctx context.Context, arts []TaskArtifact) error {
	return s.storageTx(ctx, "save task artifacts", func(tx *sql.Tx, d storageDelta) error {
		tenants := map[string]string{}
		for _, a := range arts {
			tenant, ok := tenants[a.TaskID]
			if !ok {
				var err error
				if tenant, err = taskTenant(ctx, tx, a.TaskID); err != nil {
					return fmt.Errorf("save artifact %s of task %s: %w", a.Name, a.TaskID, err)
				}
				tenants[a.TaskID] = tenant
			}
			content := a.Content
			if content == nil {
				content = []byte{}
			}
			var old sql.NullInt64
			err := tx.QueryRowContext(ctx, `SELECT octet_length(content) FROM task_artifacts WHERE task_id = ? AND kind = ? AND name = ?`,
				a.TaskID, a.Kind, a.Name).Scan(&old)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("save artifact %s of task %s: %w", a.Name, a.TaskID, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO task_artifacts
				(task_id, name, kind, size, sha256, truncated, content) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				a.TaskID, a.Name, a.Kind, a.Size, a.SHA256, a.Truncated, content); err != nil {
				return fmt.Errorf("save artifact %s of task %s: %w", a.Name, a.TaskID, err)
			}
			if tenant == "" {
				continue
			}
			d.add(tenant, int64(len(content))+artifactRowBytes)
			if old.Valid {
				d.add(tenant, -(old.Int64 + artifactRowBytes))
			}
		}
		return nil
	})
}

// TaskArtifacts lists a task's artifacts without their content, diff
// first, then files by name.
func (s *SQLite) TaskArtifacts(ctx context.Context, taskID string) ([]TaskArtifact, error) {
	rows, err := s.query(ctx, `SELECT task_id, name, kind, size, sha256, truncated FROM task_artifacts
		WHERE task_id = ? ORDER BY kind, name`, taskID)
	if err != nil {
		return nil, fmt.Errorf("artifacts of task %s: %w", taskID, err)
	}
	out, err := scanAll(rows, func(r Scanner) (TaskArtifact, error) {
		var a TaskArtifact
		err := r.Scan(&a.TaskID, &a.Name, &a.Kind, &a.Size, &a.SHA256, &a.Truncated)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("artifacts of task %s: %w", taskID, err)
	}
	return out, nil
}

// TaskArtifact returns one artifact with its content, or ErrNotFound.
func (s *SQLite) TaskArtifact(ctx context.Context, taskID, kind, name string) (TaskArtifact, error) {
	var a TaskArtifact
	err := s.queryRow(ctx, `SELECT task_id, name, kind, size, sha256, truncated, content FROM task_artifacts
		WHERE task_id = ? AND kind = ? AND name = ?`, taskID, kind, name).
		Scan(&a.TaskID, &a.Name, &a.Kind, &a.Size, &a.SHA256, &a.Truncated, &a.Content)
	if err != nil {
		return TaskArtifact{}, fmt.Errorf("artifact %s of task %s: %w", name, taskID, notFound(err))
	}
	return a, nil
}
