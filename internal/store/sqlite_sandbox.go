package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

const sandboxCols = `id, tenant_id, state, reason, template, cpus, memory_mb, pids, disk_mb,
	env, metadata, workdir, created_at, expires_at, ended_at, network, secrets, idle_timeout_s, node, lifecycle`

// CreateSandbox inserts sb; an existing id is ErrConflict.
func (s *SQLite) CreateSandbox(ctx context.Context, sb Sandbox) error {
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
func (s *SQLite) GetSandbox(ctx context.Context, id string) (Sandbox, error) {
	sb, ok, gen := s.sandboxes.get(id)
	if ok {
		return sb, nil
	}
	if err := s.flushSandboxes(ctx); err != nil {
		return Sandbox{}, err
	}
	sb, err := ScanSandbox(s.queryRow(ctx, `SELECT `+sandboxCols+` FROM sandboxes WHERE id = ?`, id))
	if err != nil {
		return Sandbox{}, fmt.Errorf("get sandbox %s: %w", id, err)
	}
	s.sandboxes.fill(sb, gen)
	return sb, nil
}

// UpdateSandbox replaces every column of the sandbox with sb.ID.
func (s *SQLite) UpdateSandbox(ctx context.Context, sb Sandbox) error {
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
func (s *SQLite) updateSandboxLocked(ctx context.Context, sb Sandbox) error {
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
		err = ErrNotFound
	}
	return err
}

// ListSandboxes returns the sandboxes f selects, ordered by id.
func (s *SQLite) ListSandboxes(ctx context.Context, f SandboxFilter) ([]Sandbox, error) {
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
		args = append(args, ToNanos(f.ExpiredBy))
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
	return listPage(ctx, s, "sandboxes", sandboxCols, "sandboxes", where, args, f.Limit, ScanSandbox)
}

// Usage counts the tenant's live sandboxes (creating, running, paused:
// a paused one keeps its memory) and sums their memory.
func (s *SQLite) Usage(ctx context.Context, tenantID string) (int, int64, error) {
	if err := s.flushSandboxes(ctx); err != nil {
		return 0, 0, err
	}
	var n int
	var mem int64
	err := s.queryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(memory_mb), 0) FROM sandboxes
		WHERE tenant_id = ? AND state IN (?, ?, ?)`, tenantID, StateCreating, StateRunning, StatePaused).Scan(&n, &mem)
	if err != nil {
		return 0, 0, fmt.Errorf("usage of tenant %s: %w", tenantID, err)
	}
	return n, mem, nil
}

// NextExpiry is the earliest expiry after after of a running or paused sandbox,
// zero if none.
func (s *SQLite) NextExpiry(ctx context.Context, after time.Time) (time.Time, error) {
	if err := s.flushSandboxes(ctx); err != nil {
		return time.Time{}, err
	}
	var next sql.NullInt64
	err := s.queryRow(ctx, `SELECT MIN(expires_at) FROM sandboxes WHERE state IN (?, ?) AND expires_at > ?`,
		StateRunning, StatePaused, ToNanos(after)).Scan(&next)
	if err != nil {
		return time.Time{}, fmt.Errorf("next expiry: %w", err)
	}
	return FromNanos(next), nil
}

// sandboxArgs returns sb's columns in sandboxCols order.
func sandboxArgs(sb Sandbox) ([]any, error) {
	env, err := EncodeMap(sb.Env)
	if err != nil {
		return nil, fmt.Errorf("encode env: %w", err)
	}
	meta, err := EncodeMap(sb.Metadata)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	return []any{sb.ID, sb.TenantID, sb.State, sb.Reason, sb.Template, sb.CPUs, sb.MemoryMB,
		sb.Pids, sb.DiskMB, env, meta, sb.Workdir,
		ToNanos(sb.CreatedAt), ToNanos(sb.ExpiresAt), ToNanos(sb.EndedAt), sb.Network, sb.Secrets, sb.IdleTimeoutS, sb.Node, sb.Lifecycle}, nil
}

// ScanSandbox reads a row of sandboxCols.
func ScanSandbox(r Scanner) (Sandbox, error) {
	var sb Sandbox
	var env, meta sql.NullString
	var created, expires, ended sql.NullInt64
	err := r.Scan(&sb.ID, &sb.TenantID, &sb.State, &sb.Reason, &sb.Template, &sb.CPUs, &sb.MemoryMB,
		&sb.Pids, &sb.DiskMB, &env, &meta, &sb.Workdir, &created, &expires, &ended, &sb.Network, &sb.Secrets, &sb.IdleTimeoutS, &sb.Node, &sb.Lifecycle)
	if err != nil {
		return Sandbox{}, notFound(err)
	}
	if sb.Env, err = DecodeMap(env); err != nil {
		return Sandbox{}, fmt.Errorf("sandbox %s: decode env: %w", sb.ID, err)
	}
	if sb.Metadata, err = DecodeMap(meta); err != nil {
		return Sandbox{}, fmt.Errorf("sandbox %s: decode metadata: %w", sb.ID, err)
	}
	sb.CreatedAt, sb.ExpiresAt, sb.EndedAt = FromNanos(created), FromNanos(expires), FromNanos(ended)
	return sb, nil
}

// An empty map is stored as NULL and read back as nil, so nil and empty
// compare equal after a round trip.
func EncodeMap(m map[string]string) (sql.NullString, error) {
	if len(m) == 0 {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// DecodeMap reads a map EncodeMap stored.
func DecodeMap(s sql.NullString) (map[string]string, error) {
	if !s.Valid || s.String == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s.String), &m); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}
