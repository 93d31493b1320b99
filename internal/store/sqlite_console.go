package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
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
func (s *SQLite) CreateConsoleSession(ctx context.Context, cs ConsoleSession) error {
	if _, err := s.exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= ?`, ToNanos(cs.CreatedAt)); err != nil {
		return fmt.Errorf("prune console sessions: %w", err)
	}
	// Inserted only if the key still exists: a key deleted meanwhile
	// opens no session.
	n, err := s.exec(ctx, `INSERT INTO console_sessions (hash, key_id, created_at, expires_at)
		SELECT ?, id, ?, ? FROM keys WHERE id = ?`,
		cs.Hash, ToNanos(cs.CreatedAt), ToNanos(cs.ExpiresAt), cs.KeyID)
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("create console session: %w", err)
	}
	return nil
}

// ConsoleSessionByHash returns the session whose cookie hashes to hash,
// with the key it acts as, expired or not: the caller checks ExpiresAt.
func (s *SQLite) ConsoleSessionByHash(ctx context.Context, hash []byte) (ConsoleSession, Key, error) {
	var cs ConsoleSession
	var created, expires sql.NullInt64
	row := s.queryRow(ctx, `SELECT c.hash, c.key_id, c.created_at, c.expires_at, k.id, k.tenant_id, k.name, k.hash, k.admin, k.created_at
		FROM console_sessions c JOIN keys k ON k.id = c.key_id WHERE c.hash = ?`, hash)
	var k Key
	var kcreated sql.NullInt64
	if err := row.Scan(&cs.Hash, &cs.KeyID, &created, &expires, &k.ID, &k.TenantID, &k.Name, &k.Hash, &k.Admin, &kcreated); err != nil {
		return ConsoleSession{}, Key{}, fmt.Errorf("get console session: %w", notFound(err))
	}
	cs.CreatedAt, cs.ExpiresAt, k.CreatedAt = FromNanos(created), FromNanos(expires), FromNanos(kcreated)
	return cs, k, nil
}

// DeleteConsoleSession removes the session whose cookie hashes to hash;
// one that does not exist is not an error (signing out twice is fine).
func (s *SQLite) DeleteConsoleSession(ctx context.Context, hash []byte) error {
	if _, err := s.exec(ctx, `DELETE FROM console_sessions WHERE hash = ?`, hash); err != nil {
		return fmt.Errorf("delete console session: %w", err)
	}
	return nil
}

// ConsoleSession is a signed-in browser: it acts as the key it was opened
// with until it expires, is signed out, or the key is deleted.
type ConsoleSession struct {
	Hash      []byte
	KeyID     string
	CreatedAt time.Time
	ExpiresAt time.Time
}
