package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/airlockhq/airlock/internal/store"
)

// usageSchema keeps one row per sandbox, written while it runs (every few
// seconds and on daemon shutdown) and once more when it ends. It is not
// tied to the sandboxes table: usage is what a tenant is billed for and
// outlives the record.
const usageSchema = `CREATE TABLE sandbox_usage (
		sandbox_id        TEXT PRIMARY KEY,
		tenant_id         TEXT NOT NULL,
		created_at        INTEGER NOT NULL,
		ended_at          INTEGER,
		updated_at        INTEGER,
		cpu_seconds       REAL NOT NULL,
		memory_peak_bytes INTEGER NOT NULL,
		egress_bytes_out  INTEGER NOT NULL,
		egress_bytes_in   INTEGER NOT NULL,
		exec_count        INTEGER NOT NULL
	);
	CREATE INDEX sandbox_usage_created ON sandbox_usage(created_at);
	CREATE INDEX sandbox_usage_tenant ON sandbox_usage(tenant_id, created_at);`

const usageCols = `sandbox_id, tenant_id, created_at, ended_at, updated_at,
	cpu_seconds, memory_peak_bytes, egress_bytes_out, egress_bytes_in, exec_count,
	memory_mb, model_calls, model_calls_unmetered, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, model_cost_usd`

// SaveUsage upserts rows in one transaction. The merge keeps the larger
// of each counter: the writers (a periodic flush, the end of a sandbox, a
// daemon after a restart that lost what it had in memory) may race, and
// none of them must set a total back.
func (s *Store) SaveUsage(ctx context.Context, rows []store.SandboxUsage) error {
	if len(rows) == 0 {
		return nil
	}
	return s.writeTx(ctx, "save usage", func(tx *sql.Tx) error {
		st, err := s.prepared(ctx, `INSERT INTO sandbox_usage (`+usageCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (sandbox_id) DO UPDATE SET
			ended_at = COALESCE(sandbox_usage.ended_at, excluded.ended_at),
			updated_at = max(COALESCE(sandbox_usage.updated_at, 0), COALESCE(excluded.updated_at, 0)),
			cpu_seconds = max(sandbox_usage.cpu_seconds, excluded.cpu_seconds),
			memory_peak_bytes = max(sandbox_usage.memory_peak_bytes, excluded.memory_peak_bytes),
			egress_bytes_out = max(sandbox_usage.egress_bytes_out, excluded.egress_bytes_out),
			egress_bytes_in = max(sandbox_usage.egress_bytes_in, excluded.egress_bytes_in),
			exec_count = max(sandbox_usage.exec_count, excluded.exec_count),
			memory_mb = max(sandbox_usage.memory_mb, excluded.memory_mb),
			model_calls = max(sandbox_usage.model_calls, excluded.model_calls),
			model_calls_unmetered = max(sandbox_usage.model_calls_unmetered, excluded.model_calls_unmetered),
			input_tokens = max(sandbox_usage.input_tokens, excluded.input_tokens),
			cached_input_tokens = max(sandbox_usage.cached_input_tokens, excluded.cached_input_tokens),
			output_tokens = max(sandbox_usage.output_tokens, excluded.output_tokens),
			reasoning_tokens = max(sandbox_usage.reasoning_tokens, excluded.reasoning_tokens),
			model_cost_usd = max(sandbox_usage.model_cost_usd, excluded.model_cost_usd)`)
		if err != nil {
			return fmt.Errorf("save usage: %w", err)
		}
		txst := tx.StmtContext(ctx, st)
		for _, u := range rows {
			if u.SandboxID == "" || u.TenantID == "" || u.CreatedAt.IsZero() {
				return fmt.Errorf("save usage of %q: sandbox, tenant and creation time are required", u.SandboxID)
			}
			if _, err := txst.ExecContext(ctx, u.SandboxID, u.TenantID, store.ToNanos(u.CreatedAt), store.ToNanos(u.EndedAt),
				store.ToNanos(u.UpdatedAt), u.CPUSeconds, u.MemoryPeakBytes, u.EgressBytesOut, u.EgressBytesIn, u.ExecCount,
				u.MemoryMB, u.Model.Calls, u.Model.Unmetered, u.Model.InputTokens, u.Model.CachedInputTokens, u.Model.OutputTokens,
				u.Model.ReasoningTokens, u.Model.CostUSD); err != nil {
				return fmt.Errorf("save usage of %s: %w", u.SandboxID, err)
			}
		}
		return nil
	})
}

// GetUsage returns one sandbox's row.
func (s *Store) GetUsage(ctx context.Context, sandboxID string) (store.SandboxUsage, error) {
	var u store.SandboxUsage
	var created, ended, updated sql.NullInt64
	err := s.queryRow(ctx, `SELECT `+usageCols+` FROM sandbox_usage WHERE sandbox_id = ?`, sandboxID).Scan(
		&u.SandboxID, &u.TenantID, &created, &ended, &updated,
		&u.CPUSeconds, &u.MemoryPeakBytes, &u.EgressBytesOut, &u.EgressBytesIn, &u.ExecCount,
		&u.MemoryMB, &u.Model.Calls, &u.Model.Unmetered, &u.Model.InputTokens, &u.Model.CachedInputTokens, &u.Model.OutputTokens,
		&u.Model.ReasoningTokens, &u.Model.CostUSD)
	if err != nil {
		return store.SandboxUsage{}, fmt.Errorf("usage of %s: %w", sandboxID, store.NotFound(err))
	}
	u.CreatedAt, u.EndedAt, u.UpdatedAt = store.FromNanos(created), store.FromNanos(ended), store.FromNanos(updated)
	return u, nil
}

// UsageByTenant sums per tenant. Wall time is summed as a float (TOTAL):
// nanoseconds summed as integers would overflow SQLite's SUM after some
// hundred thousand sandbox-days.
func (s *Store) UsageByTenant(ctx context.Context, f store.UsageFilter) ([]store.TenantUsage, error) {
	where := []string{`1`}
	args := []any{store.ToNanos(f.Now), store.ToNanos(f.Now)}
	if f.TenantID != "" {
		where = append(where, `tenant_id = ?`)
		args = append(args, f.TenantID)
	}
	if !f.From.IsZero() {
		where = append(where, `created_at >= ?`)
		args = append(args, store.ToNanos(f.From))
	}
	if !f.To.IsZero() {
		where = append(where, `created_at < ?`)
		args = append(args, store.ToNanos(f.To))
	}
	rows, err := s.db.QueryContext(ctx, `SELECT tenant_id, COUNT(*),
			TOTAL(max(0, COALESCE(ended_at, ?) - created_at)) / 1e9,
			TOTAL(cpu_seconds), COALESCE(MAX(memory_peak_bytes), 0),
			COALESCE(SUM(egress_bytes_out), 0), COALESCE(SUM(egress_bytes_in), 0), COALESCE(SUM(exec_count), 0),
			TOTAL(max(0, COALESCE(ended_at, ?) - created_at) / 1e9 * memory_mb / 1024.0),
			COALESCE(SUM(model_calls), 0), COALESCE(SUM(model_calls_unmetered), 0), COALESCE(SUM(input_tokens), 0),
			COALESCE(SUM(cached_input_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(reasoning_tokens), 0),
			TOTAL(model_cost_usd)
		FROM sandbox_usage WHERE `+strings.Join(where, ` AND `)+`
		GROUP BY tenant_id ORDER BY tenant_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("usage by tenant: %w", err)
	}
	out, err := scanAll(rows, func(r store.Scanner) (store.TenantUsage, error) {
		var u store.TenantUsage
		err := r.Scan(&u.TenantID, &u.Sandboxes, &u.SandboxSeconds, &u.CPUSeconds, &u.MemoryPeakBytes,
			&u.EgressBytesOut, &u.EgressBytesIn, &u.ExecCount,
			&u.MemoryGiBSeconds, &u.Model.Calls, &u.Model.Unmetered, &u.Model.InputTokens, &u.Model.CachedInputTokens, &u.Model.OutputTokens,
			&u.Model.ReasoningTokens, &u.Model.CostUSD)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("usage by tenant: %w", err)
	}
	return out, nil
}

// CountSandboxes counts records by state (the sandboxes_state_expires
// index covers it).
func (s *Store) CountSandboxes(ctx context.Context) (map[string]int, error) {
	if err := s.flushSandboxes(ctx); err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, `SELECT state, COUNT(*) FROM sandboxes GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("count sandboxes: %w", err)
	}
	type pair struct {
		state string
		n     int
	}
	l, err := scanAll(rows, func(r store.Scanner) (pair, error) {
		var p pair
		return p, r.Scan(&p.state, &p.n)
	})
	if err != nil {
		return nil, fmt.Errorf("count sandboxes: %w", err)
	}
	out := make(map[string]int, len(l))
	for _, p := range l {
		out[p.state] = p.n
	}
	return out, nil
}
