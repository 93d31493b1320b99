package store

import (
	"database/sql"

	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// TaskCols are the columns ScanTask reads.
const TaskCols = `id, tenant_id, key_id, harness, state, reason, spec, sandbox_id, exit_code,
	summary, created_at, started_at, ended_at, input_tokens, output_tokens, progress`

// ScanTask reads a row of the task columns.
func ScanTask(r Scanner) (taskrec.Task, error) {
	var t taskrec.Task
	var exit, created, started, ended sql.NullInt64
	err := r.Scan(&t.ID, &t.TenantID, &t.KeyID, &t.Harness, &t.State, &t.Reason, &t.Spec, &t.SandboxID, &exit,
		&t.Summary, &created, &started, &ended, &t.InputTokens, &t.OutputTokens, &t.Progress)
	if err != nil {
		return taskrec.Task{}, NotFound(err)
	}
	t.HasExit, t.ExitCode = exit.Valid, int(exit.Int64)
	t.CreatedAt, t.StartedAt, t.EndedAt = FromNanos(created), FromNanos(started), FromNanos(ended)
	return t, nil
}
