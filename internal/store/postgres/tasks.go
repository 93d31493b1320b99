package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

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
	err := s.storageTx(ctx, "create task", func(tx pgx.Tx, d delta) error {
		if _, err := tx.Exec(ctx, `INSERT INTO tasks (`+store.TaskCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`, taskArgs(t)...); err != nil {
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
// (its events and artifacts then count for nobody, as in SQLite).
func taskTenant(ctx context.Context, tx pgx.Tx, taskID string) (string, error) {
	var tenant string
	err := tx.QueryRow(ctx, `SELECT tenant_id FROM tasks WHERE id = $1`, taskID).Scan(&tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return tenant, err
}

// GetTask returns the task with the id, or ErrNotFound.
func (s *Store) GetTask(ctx context.Context, id string) (taskrec.Task, error) {
	t, err := store.ScanTask(s.pool.QueryRow(ctx, `SELECT `+store.TaskCols+` FROM tasks WHERE id = $1`, id))
	if err != nil {
		return taskrec.Task{}, fmt.Errorf("get task %s: %w", id, err)
	}
	return t, nil
}

// UpdateTask replaces every column of the task with t.ID but its tenant,
// key, harness, spec and creation time, which never change.
func (s *Store) UpdateTask(ctx context.Context, t taskrec.Task) error {
	a := taskArgs(t)
	n, err := s.exec(ctx, `UPDATE tasks SET state = $1, reason = $2, sandbox_id = $3, exit_code = $4,
		summary = $5, started_at = $6, ended_at = $7, input_tokens = $8, output_tokens = $9, progress = $10 WHERE id = $11`,
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
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.TenantID != "" {
		where = append(where, `tenant_id = `+arg(f.TenantID))
	}
	if len(f.States) > 0 {
		where = append(where, `state = ANY(`+arg(f.States)+`::text[])`)
	}
	if f.Harness != "" {
		where = append(where, `harness = `+arg(f.Harness))
	}
	if f.After != "" {
		where = append(where, `id > `+arg(f.After))
	}
	q := `SELECT ` + store.TaskCols + ` FROM tasks`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY id`
	if f.Limit > 0 {
		q += ` LIMIT ` + arg(f.Limit)
	}
	out, err := query(ctx, s.pool, q, args, store.ScanTask)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// AppendTaskEvents adds events to one task's log in one transaction,
// numbering them after the task's newest (setting each one's Seq). The
// task's lock serializes appenders, so two replicas never number alike.
func (s *Store) AppendTaskEvents(ctx context.Context, taskID string, events []taskrec.Event) error {
	if len(events) == 0 {
		return nil
	}
	var first int64
	err := s.storageTx(ctx, "append task events", func(tx pgx.Tx, d delta) error {
		if err := lockTask(ctx, tx, taskID); err != nil {
			return fmt.Errorf("append task events of %s: %w", taskID, err)
		}
		tenant, err := taskTenant(ctx, tx, taskID)
		if err != nil {
			return fmt.Errorf("append task events of %s: %w", taskID, err)
		}
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM task_events WHERE task_id = $1`, taskID).Scan(&first); err != nil {
			return fmt.Errorf("append task events of %s: %w", taskID, err)
		}
		b := &pgx.Batch{}
		for i, e := range events {
			b.Queue(`INSERT INTO task_events (task_id, seq, time, type, sandbox_id, data) VALUES ($1, $2, $3, $4, $5, $6)`,
				taskID, first+int64(i), store.ToNanos(e.Time), e.Type, e.SandboxID, bytesOf(e.Data))
			if tenant != "" {
				d.add(tenant, int64(len(e.Data))+store.TaskEventRowBytes)
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("append task events of %s: %w", taskID, mapErr(err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range events {
		events[i].TaskID, events[i].Seq = taskID, first+int64(i)
	}
	return nil
}

// TaskEvents returns up to limit (0: all) of a task's events with a Seq
// above after, oldest first.
func (s *Store) TaskEvents(ctx context.Context, taskID string, after int64, n int) ([]taskrec.Event, error) {
	if n <= 0 {
		n = -1
	}
	out, err := query(ctx, s.pool, `SELECT task_id, seq, time, type, sandbox_id, data FROM task_events
		WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, []any{taskID, after, limit(n)},
		func(r store.Scanner) (taskrec.Event, error) {
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

// SaveTaskArtifacts stores artifacts in one transaction, replacing any of
// the same kind and name, and counts them (less what they replace)
// against their tenants' storage. Each task's lock is held first (in id
// order), so the size replaced is the size counted.
func (s *Store) SaveTaskArtifacts(ctx context.Context, arts []taskrec.Artifact) error {
	return s.storageTx(ctx, "save task artifacts", func(tx pgx.Tx, d delta) error {
		tenants := map[string]string{}
		var ids []string
		for _, a := range arts {
			if _, ok := tenants[a.TaskID]; !ok {
				tenants[a.TaskID] = ""
				ids = append(ids, a.TaskID)
			}
		}
		sort.Strings(ids)
		for _, id := range ids {
			if err := lockTask(ctx, tx, id); err != nil {
				return fmt.Errorf("save artifacts of task %s: %w", id, err)
			}
			tenant, err := taskTenant(ctx, tx, id)
			if err != nil {
				return fmt.Errorf("save artifacts of task %s: %w", id, err)
			}
			tenants[id] = tenant
		}
		for _, a := range arts {
			content := bytesOf(a.Content)
			var old sql.NullInt64
			err := tx.QueryRow(ctx, `WITH prev AS (SELECT octet_length(content) AS n FROM task_artifacts
					WHERE task_id = $1 AND kind = $3 AND name = $2),
				up AS (INSERT INTO task_artifacts (task_id, name, kind, size, sha256, truncated, content)
					VALUES ($1, $2, $3, $4, $5, $6, $7)
					ON CONFLICT (task_id, kind, name) DO UPDATE SET size = excluded.size, sha256 = excluded.sha256,
						truncated = excluded.truncated, content = excluded.content)
				SELECT (SELECT n FROM prev)`,
				a.TaskID, a.Name, a.Kind, a.Size, a.SHA256, a.Truncated, content).Scan(&old)
			if err != nil {
				return fmt.Errorf("save artifact %s of task %s: %w", a.Name, a.TaskID, mapErr(err))
			}
			tenant := tenants[a.TaskID]
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
	out, err := query(ctx, s.pool, `SELECT task_id, name, kind, size, sha256, truncated FROM task_artifacts
		WHERE task_id = $1 ORDER BY kind, name`, []any{taskID}, func(r store.Scanner) (taskrec.Artifact, error) {
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
	err := s.pool.QueryRow(ctx, `SELECT task_id, name, kind, size, sha256, truncated, content FROM task_artifacts
		WHERE task_id = $1 AND kind = $2 AND name = $3`, taskID, kind, name).
		Scan(&a.TaskID, &a.Name, &a.Kind, &a.Size, &a.SHA256, &a.Truncated, &a.Content)
	if err != nil {
		return taskrec.Artifact{}, fmt.Errorf("artifact %s of task %s: %w", name, taskID, mapErr(err))
	}
	return a, nil
}
