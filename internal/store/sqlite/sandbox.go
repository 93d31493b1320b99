package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

const sandboxCols = `id, tenant_id, state, reason, template, cpus, memory_mb, pids, disk_mb,
	env, metadata, workdir, created_at, expires_at, ended_at, network, secrets, idle_timeout_s, node, lifecycle`

// CreateSandbox inserts sb; an existing id is ErrConflict.
func (s *Store) CreateSandbox(ctx context.Context, sb sandboxrec.Sandbox) error {
	args, err := sandboxArgs(sb)
	if err == nil {
		_, err = s.execThen(ctx, func(_ int64, err error) { s.sandboxes.wrote(sb.ID, stored(sb), err == nil) },
			`INSERT INTO sandboxes (`+sandboxCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
	}
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w", sb.ID, err)
	}
	return nil
}

// GetSandbox returns the sandbox with the id.
func (s *Store) GetSandbox(ctx context.Context, id string) (sandboxrec.Sandbox, error) {
	sb, ok, gen := s.sandboxes.get(id)
	if ok {
		return sb, nil
	}
	if err := s.flushSandboxes(ctx); err != nil {
		return sandboxrec.Sandbox{}, err
	}
	sb, err := store.ScanSandbox(s.queryRow(ctx, `SELECT `+sandboxCols+` FROM sandboxes WHERE id = ?`, id))
	if err != nil {
		return sandboxrec.Sandbox{}, fmt.Errorf("get sandbox %s: %w", id, err)
	}
	s.sandboxes.fill(sb, gen)
	return sb, nil
}

// UpdateSandbox replaces every column of the sandbox with sb.ID.
func (s *Store) UpdateSandbox(ctx context.Context, sb sandboxrec.Sandbox) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// This write carries the whole record: a pending one of it is older.
	s.dropPending(sb.ID)
	err := s.updateSandboxLocked(ctx, sb)
	s.sandboxes.wrote(sb.ID, stored(sb), err == nil)
	if err != nil {
		return fmt.Errorf("update sandbox %s: %w", sb.ID, err)
	}
	return nil
}

// updateSandboxLocked writes sb's row, the write lock held. The caller
// updates the cache.
func (s *Store) updateSandboxLocked(ctx context.Context, sb sandboxrec.Sandbox) error {
	args, err := sandboxArgs(sb)
	if err != nil {
		return err
	}
	ctx = pointCtx(ctx)
	st, err := s.prepared(ctx, `UPDATE sandboxes SET
			tenant_id = ?, state = ?, reason = ?, template = ?, cpus = ?, memory_mb = ?,
			pids = ?, disk_mb = ?, env = ?, metadata = ?, workdir = ?,
			created_at = ?, expires_at = ?, ended_at = ?, network = ?, secrets = ?, idle_timeout_s = ?, node = ?, lifecycle = ?
			WHERE id = ?`)
	if err != nil {
		return err
	}
	res, err := st.ExecContext(ctx, append(args[1:], sb.ID)...)
	s.writes.Add(1)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	err = mapErr(err)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	return err
}

// ListSandboxes returns the sandboxes f selects, ordered by id.
func (s *Store) ListSandboxes(ctx context.Context, f sandboxrec.Filter) ([]sandboxrec.Sandbox, error) {
	if err := s.flushSandboxes(ctx); err != nil {
		return nil, err
	}
	var where []string
	var args []any
	if f.TenantID != "" {
		where = append(where, `tenant_id = ?`)
		args = append(args, f.TenantID)
	}
	if f.State != "" {
		where = append(where, `state = ?`)
		args = append(args, f.State)
	}
	if !f.ExpiredBy.IsZero() {
		where = append(where, `expires_at <= ?`)
		args = append(args, store.ToNanos(f.ExpiredBy))
	}
	if f.After != "" {
		where = append(where, `id > ?`)
		args = append(args, f.After)
	}
	// json_each rather than json_extract: a key may hold any character,
	// and a JSON path built from it would need quoting.
	keys := make([]string, 0, len(f.Metadata))
	for k := range f.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		where = append(where, `EXISTS (SELECT 1 FROM json_each(sandboxes.metadata) m
			WHERE m.key = ? AND m.type = 'text' AND m.value = ?)`)
		args = append(args, k, f.Metadata[k])
	}
	return listPage(ctx, s, "sandboxes", sandboxCols, "sandboxes", where, args, f.Limit, store.ScanSandbox)
}

// Usage counts the tenant's live sandboxes (creating, running, paused:
// a paused one keeps its memory) and sums their memory.
func (s *Store) Usage(ctx context.Context, tenantID string) (int, int64, error) {
	if err := s.flushSandboxes(ctx); err != nil {
		return 0, 0, err
	}
	var n int
	var mem int64
	err := s.queryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(memory_mb), 0) FROM sandboxes
		WHERE tenant_id = ? AND state IN (?, ?, ?)`, tenantID, sandboxrec.Creating, sandboxrec.Running, sandboxrec.Paused).Scan(&n, &mem)
	if err != nil {
		return 0, 0, fmt.Errorf("usage of tenant %s: %w", tenantID, err)
	}
	return n, mem, nil
}

// NextExpiry is the earliest expiry after after of a running or paused sandbox,
// zero if none.
func (s *Store) NextExpiry(ctx context.Context, after time.Time) (time.Time, error) {
	if err := s.flushSandboxes(ctx); err != nil {
		return time.Time{}, err
	}
	var next sql.NullInt64
	err := s.queryRow(ctx, `SELECT MIN(expires_at) FROM sandboxes WHERE state IN (?, ?) AND expires_at > ?`,
		sandboxrec.Running, sandboxrec.Paused, store.ToNanos(after)).Scan(&next)
	if err != nil {
		return time.Time{}, fmt.Errorf("next expiry: %w", err)
	}
	return store.FromNanos(next), nil
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
