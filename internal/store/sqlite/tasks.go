package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

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

func taskArgs(t taskrec.Task) []any {
	var exit sql.NullInt64
	if t.HasExit {
		exit = sql.NullInt64{Int64: int64(t.ExitCode), Valid: true}
	}
	return []any{t.ID, t.TenantID, t.KeyID, t.Harness, t.State, t.Reason, t.Spec, t.SandboxID, exit,
		t.Summary, store.ToNanos(t.CreatedAt), store.ToNanos(t.StartedAt), store.ToNanos(t.EndedAt), t.InputTokens, t.OutputTokens, t.Progress}
}

// CreateTask inserts t (its spec counts against its tenant's storage);
// an existing id is ErrConflict.
func (s *Store) CreateTask(ctx context.Context, t taskrec.Task) error {
	err := s.storageTx(ctx, "create task", func(tx *sql.Tx, d storageDelta) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tasks (`+store.TaskCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, taskArgs(t)...); err != nil {
			return mapErr(err)
		}
		d.add(t.TenantID, int64(len(t.Spec))+store.TaskRowBytes)
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
func (s *Store) GetTask(ctx context.Context, id string) (taskrec.Task, error) {
	t, err := store.ScanTask(s.queryRow(ctx, `SELECT `+store.TaskCols+` FROM tasks WHERE id = ?`, id))
	if err != nil {
		return taskrec.Task{}, fmt.Errorf("get task %s: %w", id, err)
	}
	return t, nil
}

// UpdateTask replaces every column of the task with t.ID but its tenant,
// key, harness, spec and creation time, which never change.
func (s *Store) UpdateTask(ctx context.Context, t taskrec.Task) error {
	a := taskArgs(t)
	n, err := s.exec(ctx, `UPDATE tasks SET state = ?, reason = ?, sandbox_id = ?, exit_code = ?,
		summary = ?, started_at = ?, ended_at = ?, input_tokens = ?, output_tokens = ?, progress = ? WHERE id = ?`,
		a[4], a[5], a[7], a[8], a[9], a[11], a[12], a[13], a[14], a[15], t.ID)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("update task %s: %w", t.ID, err)
	}
	return nil
}

// ListTasks returns the tasks f selects, ordered by id.
func (s *Store) ListTasks(ctx context.Context, f taskrec.Filter) ([]taskrec.Task, error) {
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
	return listPage(ctx, s, "tasks", store.TaskCols, "tasks", where, args, f.Limit, store.ScanTask)
}

// AppendTaskEvents adds events to one task's log in one transaction,
// numbering them after the task's newest (setting each one's Seq).
func (s *Store) AppendTaskEvents(ctx context.Context, taskID string, events []taskrec.Event) error {
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
				VALUES (?, ?, ?, ?, ?, ?)`, taskID, e.Seq, store.ToNanos(e.Time), e.Type, e.SandboxID, e.Data); err != nil {
				return fmt.Errorf("append task events of %s: %w", taskID, err)
			}
			if tenant != "" {
				d.add(tenant, int64(len(e.Data))+store.TaskEventRowBytes)
			}
		}
		return nil
	})
}

// TaskEvents returns up to limit (0: all) of a task's events with a Seq
// above after, oldest first.
func (s *Store) TaskEvents(ctx context.Context, taskID string, after int64, limit int) ([]taskrec.Event, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.query(ctx, `SELECT task_id, seq, time, type, sandbox_id, data FROM task_events
		WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?`, taskID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("task events of %s: %w", taskID, err)
	}
	out, err := scanAll(rows, func(r store.Scanner) (taskrec.Event, error) {
		var e taskrec.Event
		var at sql.NullInt64
		err := r.Scan(&e.TaskID, &e.Seq, &at, &e.Type, &e.SandboxID, &e.Data)
		e.Time = store.FromNanos(at)
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
func (s *Store) SaveTaskArtifacts(ctx context.Context, arts []taskrec.Artifact) error {
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
			d.add(tenant, int64(len(content))+store.ArtifactRowBytes)
			if old.Valid {
				d.add(tenant, -(old.Int64 + store.ArtifactRowBytes))
			}
		}
		return nil
	})
}

// TaskArtifacts lists a task's artifacts without their content, diff
// first, then files by name.
func (s *Store) TaskArtifacts(ctx context.Context, taskID string) ([]taskrec.Artifact, error) {
	rows, err := s.query(ctx, `SELECT task_id, name, kind, size, sha256, truncated FROM task_artifacts
		WHERE task_id = ? ORDER BY kind, name`, taskID)
	if err != nil {
		return nil, fmt.Errorf("artifacts of task %s: %w", taskID, err)
	}
	out, err := scanAll(rows, func(r store.Scanner) (taskrec.Artifact, error) {
		var a taskrec.Artifact
		err := r.Scan(&a.TaskID, &a.Name, &a.Kind, &a.Size, &a.SHA256, &a.Truncated)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("artifacts of task %s: %w", taskID, err)
	}
	return out, nil
}

// TaskArtifact returns one artifact with its content, or ErrNotFound.
func (s *Store) TaskArtifact(ctx context.Context, taskID, kind, name string) (taskrec.Artifact, error) {
	var a taskrec.Artifact
	err := s.queryRow(ctx, `SELECT task_id, name, kind, size, sha256, truncated, content FROM task_artifacts
		WHERE task_id = ? AND kind = ? AND name = ?`, taskID, kind, name).
		Scan(&a.TaskID, &a.Name, &a.Kind, &a.Size, &a.SHA256, &a.Truncated, &a.Content)
	if err != nil {
		return taskrec.Artifact{}, fmt.Errorf("artifact %s of task %s: %w", name, taskID, store.NotFound(err))
	}
	return a, nil
}
