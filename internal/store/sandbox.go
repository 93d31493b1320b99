package store

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// ScanSandbox reads a row of the sandbox columns (each store's
// sandboxCols).
func ScanSandbox(r Scanner) (sandboxrec.Sandbox, error) {
	var sb sandboxrec.Sandbox
	var env, meta sql.NullString
	var created, expires, ended sql.NullInt64
	err := r.Scan(&sb.ID, &sb.TenantID, &sb.State, &sb.Reason, &sb.Template, &sb.CPUs, &sb.MemoryMB,
		&sb.Pids, &sb.DiskMB, &env, &meta, &sb.Workdir, &created, &expires, &ended, &sb.Network, &sb.Secrets, &sb.IdleTimeoutS, &sb.Node, &sb.Lifecycle)
	if err != nil {
		return sandboxrec.Sandbox{}, NotFound(err)
	}
	if sb.Env, err = DecodeMap(env); err != nil {
		return sandboxrec.Sandbox{}, fmt.Errorf("sandbox %s: decode env: %w", sb.ID, err)
	}
	if sb.Metadata, err = DecodeMap(meta); err != nil {
		return sandboxrec.Sandbox{}, fmt.Errorf("sandbox %s: decode metadata: %w", sb.ID, err)
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
