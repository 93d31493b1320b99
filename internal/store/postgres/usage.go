package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/internal/store"
)

const usageCols = `sandbox_id, tenant_id, created_at, ended_at, updated_at,
	cpu_seconds, memory_peak_bytes, egress_bytes_out, egress_bytes_in, exec_count,
	memory_mb, model_calls, model_calls_unmetered, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, model_cost_usd`

// SaveUsage upserts rows in one transaction. The merge keeps the larger
// of each counter and the first end: the writers (a periodic flush, the
// end of a sandbox, a replica that took over) may race, and none of them
// must set a total back or reopen an ended row.
func (s *Store) SaveUsage(ctx context.Context, rows []store.SandboxUsage) error {
	if len(rows) == 0 {
		return nil
	}
	for _, u := range rows {
		if u.SandboxID == "" || u.TenantID == "" || u.CreatedAt.IsZero() {
			return fmt.Errorf("save usage of %q: sandbox, tenant and creation time are required", u.SandboxID)
		}
	}
	return s.tx(ctx, "save usage", func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, u := range rows {
			b.Queue(`INSERT INTO sandbox_usage (`+usageCols+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
				ON CONFLICT (sandbox_id) DO UPDATE SET
					ended_at = COALESCE(sandbox_usage.ended_at, excluded.ended_at),
					updated_at = GREATEST(COALESCE(sandbox_usage.updated_at, 0), COALESCE(excluded.updated_at, 0)),
					cpu_seconds = GREATEST(sandbox_usage.cpu_seconds, excluded.cpu_seconds),
					memory_peak_bytes = GREATEST(sandbox_usage.memory_peak_bytes, excluded.memory_peak_bytes),
					egress_bytes_out = GREATEST(sandbox_usage.egress_bytes_out, excluded.egress_bytes_out),
					egress_bytes_in = GREATEST(sandbox_usage.egress_bytes_in, excluded.egress_bytes_in),
					exec_count = GREATEST(sandbox_usage.exec_count, excluded.exec_count),
					memory_mb = GREATEST(sandbox_usage.memory_mb, excluded.memory_mb),
					model_calls = GREATEST(sandbox_usage.model_calls, excluded.model_calls),
					model_calls_unmetered = GREATEST(sandbox_usage.model_calls_unmetered, excluded.model_calls_unmetered),
					input_tokens = GREATEST(sandbox_usage.input_tokens, excluded.input_tokens),
					cached_input_tokens = GREATEST(sandbox_usage.cached_input_tokens, excluded.cached_input_tokens),
					output_tokens = GREATEST(sandbox_usage.output_tokens, excluded.output_tokens),
					reasoning_tokens = GREATEST(sandbox_usage.reasoning_tokens, excluded.reasoning_tokens),
					model_cost_usd = GREATEST(sandbox_usage.model_cost_usd, excluded.model_cost_usd)`,
				u.SandboxID, u.TenantID, store.ToNanos(u.CreatedAt), store.ToNanos(u.EndedAt),
				store.ToNanos(u.UpdatedAt), u.CPUSeconds, u.MemoryPeakBytes, u.EgressBytesOut, u.EgressBytesIn, u.ExecCount,
				u.MemoryMB, u.Model.Calls, u.Model.Unmetered, u.Model.InputTokens, u.Model.CachedInputTokens, u.Model.OutputTokens,
				u.Model.ReasoningTokens, u.Model.CostUSD)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("save usage: %w", mapErr(err))
		}
		return nil
	})
}

// GetUsage returns one sandbox's row.
func (s *Store) GetUsage(ctx context.Context, sandboxID string) (store.SandboxUsage, error) {
	var u store.SandboxUsage
	var created, ended, updated sql.NullInt64
	err := s.pool.QueryRow(ctx, `SELECT `+usageCols+` FROM sandbox_usage WHERE sandbox_id = $1`, sandboxID).Scan(
		&u.SandboxID, &u.TenantID, &created, &ended, &updated,
		&u.CPUSeconds, &u.MemoryPeakBytes, &u.EgressBytesOut, &u.EgressBytesIn, &u.ExecCount,
		&u.MemoryMB, &u.Model.Calls, &u.Model.Unmetered, &u.Model.InputTokens, &u.Model.CachedInputTokens, &u.Model.OutputTokens,
		&u.Model.ReasoningTokens, &u.Model.CostUSD)
	if err != nil {
		return store.SandboxUsage{}, fmt.Errorf("usage of %s: %w", sandboxID, mapErr(err))
	}
	u.CreatedAt, u.EndedAt, u.UpdatedAt = store.FromNanos(created), store.FromNanos(ended), store.FromNanos(updated)
	return u, nil
}

// UsageByTenant sums per tenant. Wall time is summed as a float, as
// SQLite's TOTAL does; GREATEST skips a NULL end (a running sandbox with
// no Now), which then adds nothing, as in SQLite.
func (s *Store) UsageByTenant(ctx context.Context, f store.UsageFilter) ([]store.TenantUsage, error) {
	where := []string{`true`}
	args := []any{store.ToNanos(f.Now)}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.TenantID != "" {
		where = append(where, `tenant_id = `+arg(f.TenantID))
	}
	if !f.From.IsZero() {
		where = append(where, `created_at >= `+arg(store.ToNanos(f.From)))
	}
	if !f.To.IsZero() {
		where = append(where, `created_at < `+arg(store.ToNanos(f.To)))
	}
	out, err := query(ctx, s.pool, `SELECT tenant_id, COUNT(*),
			COALESCE(SUM(GREATEST(0, COALESCE(ended_at, $1::bigint) - created_at)::float8), 0) / 1e9,
			COALESCE(SUM(cpu_seconds), 0)::float8, COALESCE(MAX(memory_peak_bytes), 0),
			COALESCE(SUM(egress_bytes_out), 0)::bigint, COALESCE(SUM(egress_bytes_in), 0)::bigint, COALESCE(SUM(exec_count), 0)::bigint,
			COALESCE(SUM(GREATEST(0, COALESCE(ended_at, $1::bigint) - created_at)::float8 / 1e9 * memory_mb / 1024.0), 0),
			COALESCE(SUM(model_calls), 0)::bigint, COALESCE(SUM(model_calls_unmetered), 0)::bigint,
			COALESCE(SUM(input_tokens), 0)::bigint, COALESCE(SUM(cached_input_tokens), 0)::bigint,
			COALESCE(SUM(output_tokens), 0)::bigint, COALESCE(SUM(reasoning_tokens), 0)::bigint,
			COALESCE(SUM(model_cost_usd), 0)::float8
		FROM sandbox_usage WHERE `+strings.Join(where, ` AND `)+`
		GROUP BY tenant_id ORDER BY tenant_id`, args, func(r store.Scanner) (store.TenantUsage, error) {
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
