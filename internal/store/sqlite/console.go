package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// consoleSchema holds the browser console's sign-in sessions. Only the
// SHA-256 of a session's cookie is stored. A session lives no longer than
// the key it was opened with: deleting the key deletes its sessions.
const consoleSchema = `CREATE TABLE console_sessions (
		hash       BLOB PRIMARY KEY,
		key_id     TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL
	);
	CREATE INDEX console_sessions_key ON console_sessions(key_id);
	CREATE TRIGGER keys_end_console_sessions AFTER DELETE ON keys
	BEGIN
		DELETE FROM console_sessions WHERE key_id = OLD.id;
	END;`

// CreateConsoleSession inserts cs and removes the sessions that have
// expired by its creation.
func (s *Store) CreateConsoleSession(ctx context.Context, cs tenancy.ConsoleSession) error {
	if _, err := s.exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= ?`, store.ToNanos(cs.CreatedAt)); err != nil {
		return fmt.Errorf("prune console sessions: %w", err)
	}
	// Inserted only if the key still exists: a key deleted meanwhile
	// opens no session.
	n, err := s.exec(ctx, `INSERT INTO console_sessions (hash, key_id, created_at, expires_at)
		SELECT ?, id, ?, ? FROM keys WHERE id = ?`,
		cs.Hash, store.ToNanos(cs.CreatedAt), store.ToNanos(cs.ExpiresAt), cs.KeyID)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("create console session: %w", err)
	}
	return nil
}

// ConsoleSessionByHash returns the session whose cookie hashes to hash,
// with the key it acts as, expired or not: the caller checks ExpiresAt.
func (s *Store) ConsoleSessionByHash(ctx context.Context, hash []byte) (tenancy.ConsoleSession, tenancy.Key, error) {
	var cs tenancy.ConsoleSession
	var created, expires sql.NullInt64
	row := s.queryRow(ctx, `SELECT c.hash, c.key_id, c.created_at, c.expires_at, k.id, k.tenant_id, k.name, k.hash, k.admin, k.created_at
		FROM console_sessions c JOIN keys k ON k.id = c.key_id WHERE c.hash = ?`, hash)
	var k tenancy.Key
	var kcreated sql.NullInt64
	if err := row.Scan(&cs.Hash, &cs.KeyID, &created, &expires, &k.ID, &k.TenantID, &k.Name, &k.Hash, &k.Admin, &kcreated); err != nil {
		return tenancy.ConsoleSession{}, tenancy.Key{}, fmt.Errorf("get console session: %w", store.NotFound(err))
	}
	cs.CreatedAt, cs.ExpiresAt, k.CreatedAt = store.FromNanos(created), store.FromNanos(expires), store.FromNanos(kcreated)
	return cs, k, nil
}

// DeleteConsoleSession removes the session whose cookie hashes to hash;
// one that does not exist is not an error (signing out twice is fine).
func (s *Store) DeleteConsoleSession(ctx context.Context, hash []byte) error {
	if _, err := s.exec(ctx, `DELETE FROM console_sessions WHERE hash = ?`, hash); err != nil {
		return fmt.Errorf("delete console session: %w", err)
	}
	return nil
}
