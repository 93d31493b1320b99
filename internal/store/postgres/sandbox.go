package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// sandboxCols are store.ScanSandbox's columns; metadata is jsonb here
// (the list filter matches it with @>), read back as text.
const sandboxCols = `id, tenant_id, state, reason, template, cpus, memory_mb, pids, disk_mb,
	env, metadata::text, workdir, created_at, expires_at, ended_at, network, secrets, idle_timeout_s, node, lifecycle`

// CreateSandbox inserts sb; an existing id is ErrConflict.
func (s *Store) CreateSandbox(ctx context.Context, sb sandboxrec.Sandbox) error {
	args, err := sandboxArgs(sb)
	if err == nil {
		_, err = s.exec(ctx, `INSERT INTO sandboxes (id, tenant_id, state, reason, template, cpus, memory_mb, pids, disk_mb,
			env, metadata, workdir, created_at, expires_at, ended_at, network, secrets, idle_timeout_s, node, lifecycle)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13, $14, $15, $16, $17, $18, $19, $20)`, args...)
	}
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w", sb.ID, err)
	}
	return nil
}

// GetSandbox returns the sandbox with the id, as the database holds it:
// there is no cache to go stale when another replica writes it.
func (s *Store) GetSandbox(ctx context.Context, id string) (sandboxrec.Sandbox, error) {
	sb, err := store.ScanSandbox(s.pool.QueryRow(ctx, `SELECT `+sandboxCols+` FROM sandboxes WHERE id = $1`, id))
	if err != nil {
		return sandboxrec.Sandbox{}, fmt.Errorf("get sandbox %s: %w", id, err)
	}
	return sb, nil
}

// UpdateSandbox replaces every column of the sandbox with sb.ID but its
// idle timer. Saved as stopped or failed, it loses its tokens in the same
// statement (trigger sandboxes_end_tokens).
func (s *Store) UpdateSandbox(ctx context.Context, sb sandboxrec.Sandbox) error {
	args, err := sandboxArgs(sb)
	if err == nil {
		var n int64
		n, err = s.exec(ctx, `UPDATE sandboxes SET
			tenant_id = $2, state = $3, reason = $4, template = $5, cpus = $6, memory_mb = $7,
			pids = $8, disk_mb = $9, env = $10, metadata = $11::jsonb, workdir = $12,
			created_at = $13, expires_at = $14, ended_at = $15, network = $16, secrets = $17, idle_timeout_s = $18, node = $19, lifecycle = $20
			WHERE id = $1`, args...)
		if err == nil && n == 0 {
			err = store.ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("update sandbox %s: %w", sb.ID, err)
	}
	return nil
}

// UpdateSandboxSoon is UpdateSandbox: with several replicas reading the
// database, a write held back in one process would be invisible to the
// others, so none is deferred.
func (s *Store) UpdateSandboxSoon(ctx context.Context, sb sandboxrec.Sandbox) error {
	return s.UpdateSandbox(ctx, sb)
}

// ListSandboxes returns the sandboxes f selects, ordered by id.
func (s *Store) ListSandboxes(ctx context.Context, f sandboxrec.Filter) ([]sandboxrec.Sandbox, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.TenantID != "" {
		where = append(where, `tenant_id = `+arg(f.TenantID))
	}
	if f.State != "" {
		where = append(where, `state = `+arg(f.State))
	}
	if !f.ExpiredBy.IsZero() {
		where = append(where, `expires_at <= `+arg(store.ToNanos(f.ExpiredBy)))
	}
	if f.After != "" {
		where = append(where, `id > `+arg(f.After))
	}
	keys := make([]string, 0, len(f.Metadata))
	for k := range f.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// Containment of a one-pair object: the key may hold any
		// character, and the value must be that string.
		where = append(where, `metadata @> jsonb_build_object(`+arg(k)+`::text, `+arg(f.Metadata[k])+`::text)`)
	}
	q := `SELECT ` + sandboxCols + ` FROM sandboxes`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY id`
	if f.Limit > 0 {
		q += ` LIMIT ` + arg(f.Limit)
	}
	out, err := query(ctx, s.pool, q, args, store.ScanSandbox)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	return out, nil
}

// Usage counts the tenant's live sandboxes (creating, running, paused:
// a paused one keeps its memory) and sums their memory.
func (s *Store) Usage(ctx context.Context, tenantID string) (int, int64, error) {
	var n int
	var mem int64
	err := s.pool.QueryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(memory_mb), 0)::bigint FROM sandboxes
		WHERE tenant_id = $1 AND state IN ($2, $3, $4)`, tenantID, sandboxrec.Creating, sandboxrec.Running, sandboxrec.Paused).Scan(&n, &mem)
	if err != nil {
		return 0, 0, fmt.Errorf("usage of tenant %s: %w", tenantID, err)
	}
	return n, mem, nil
}

// NextExpiry is the earliest expiry after after of a running or paused sandbox,
// zero if none.
func (s *Store) NextExpiry(ctx context.Context, after time.Time) (time.Time, error) {
	var next sql.NullInt64
	err := s.pool.QueryRow(ctx, `SELECT MIN(expires_at) FROM sandboxes WHERE state IN ($1, $2) AND expires_at > $3`,
		sandboxrec.Running, sandboxrec.Paused, store.ToNanos(after)).Scan(&next)
	if err != nil {
		return time.Time{}, fmt.Errorf("next expiry: %w", err)
	}
	return store.FromNanos(next), nil
}

// CountSandboxes counts records by state.
func (s *Store) CountSandboxes(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT state, COUNT(*) FROM sandboxes GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("count sandboxes: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return nil, fmt.Errorf("count sandboxes: %w", err)
		}
		out[state] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count sandboxes: %w", err)
	}
	return out, nil
}

// SaveIdle records when each sandbox was last used, in one transaction.
// The idle timer is its own column: a whole-row write leaves it alone.
func (s *Store) SaveIdle(ctx context.Context, last map[string]time.Time) error {
	if len(last) == 0 {
		return nil
	}
	ids := make([]string, 0, len(last))
	ats := make([]sql.NullInt64, 0, len(last))
	for id, t := range last {
		ids = append(ids, id)
		ats = append(ats, store.ToNanos(t))
	}
	// One statement, rows locked in id order: two replicas saving
	// overlapping sets cannot deadlock.
	_, err := s.exec(ctx, `UPDATE sandboxes s SET idle_since = v.at
		FROM (SELECT * FROM unnest($1::text[], $2::bigint[]) AS v(id, at) ORDER BY id) v
		WHERE s.id = v.id`, ids, ats)
	if err != nil {
		return fmt.Errorf("save idle timers: %w", err)
	}
	return nil
}

// IdleSince returns the saved last use of each live sandbox that has one.
func (s *Store) IdleSince(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, idle_since FROM sandboxes
		WHERE state IN ('creating', 'running') AND idle_since IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("idle timers: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var at sql.NullInt64
		if err := rows.Scan(&id, &at); err != nil {
			return nil, fmt.Errorf("idle timers: %w", err)
		}
		out[id] = store.FromNanos(at)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("idle timers: %w", err)
	}
	return out, nil
}

// sandboxArgs returns sb's columns in sandboxCols order.
func sandboxArgs(sb sandboxrec.Sandbox) ([]any, error) {
	env, err := store.EncodeMap(sb.Env)
	if err != nil {
		return nil, fmt.Errorf("encode env: %w", err)
	}
	meta, err := store.EncodeMap(sb.Metadata)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	return []any{sb.ID, sb.TenantID, sb.State, sb.Reason, sb.Template, sb.CPUs, sb.MemoryMB,
		sb.Pids, sb.DiskMB, env, meta, sb.Workdir,
		store.ToNanos(sb.CreatedAt), store.ToNanos(sb.ExpiresAt), store.ToNanos(sb.EndedAt), sb.Network, sb.Secrets, sb.IdleTimeoutS, sb.Node, sb.Lifecycle}, nil
}
