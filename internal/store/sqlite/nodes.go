package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/store"
)

// Nodes, their join tokens and the node CA (nodes.Store). Errors wrap
// errdefs' kinds, which the nodes package tests for.
const nodesSchema = `CREATE TABLE node_ca (
		id         INTEGER PRIMARY KEY CHECK (id = 1),
		cert       BLOB NOT NULL,
		sealed_key BLOB NOT NULL
	);
	CREATE TABLE node_tokens (
		id         TEXT PRIMARY KEY,
		hash       BLOB NOT NULL,
		created_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL,
		used_at    INTEGER,
		used_by    TEXT NOT NULL DEFAULT ''
	) WITHOUT ROWID;
	CREATE TABLE nodes (
		name            TEXT PRIMARY KEY,
		addr            TEXT NOT NULL,
		cert_serial     TEXT NOT NULL,
		cert_expires_at INTEGER NOT NULL,
		joined_at       INTEGER NOT NULL,
		drained         INTEGER NOT NULL DEFAULT 0,
		version         TEXT NOT NULL DEFAULT '',
		capacity        TEXT NOT NULL DEFAULT '{}',
		use             TEXT NOT NULL DEFAULT '{}',
		last_heartbeat  INTEGER
	) WITHOUT ROWID;`

// NodeCA returns the node CA's certificate and sealed key.
func (s *Store) NodeCA(ctx context.Context) ([]byte, []byte, error) {
	var cert, key []byte
	err := s.queryRow(ctx, `SELECT cert, sealed_key FROM node_ca WHERE id = 1`).Scan(&cert, &key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("node CA: %w", errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("node CA: %w", err)
	}
	return cert, key, nil
}

// PutNodeCA stores the CA unless one is stored, and returns the stored one.
func (s *Store) PutNodeCA(ctx context.Context, cert, sealedKey []byte) ([]byte, []byte, error) {
	if _, err := s.exec(ctx, `INSERT OR IGNORE INTO node_ca (id, cert, sealed_key) VALUES (1, ?, ?)`, cert, sealedKey); err != nil {
		return nil, nil, fmt.Errorf("node CA: %w", err)
	}
	return s.NodeCA(ctx)
}

// CreateJoinToken stores a join token.
func (s *Store) CreateJoinToken(ctx context.Context, t nodes.JoinToken) error {
	if _, err := s.exec(ctx, `INSERT INTO node_tokens (id, hash, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		t.ID, t.Hash, store.ToNanos(t.CreatedAt), store.ToNanos(t.ExpiresAt)); err != nil {
		return fmt.Errorf("create join token: %w", err)
	}
	return nil
}

// JoinToken returns the join token with the id.
func (s *Store) JoinToken(ctx context.Context, id string) (nodes.JoinToken, error) {
	var t nodes.JoinToken
	var created, expires, used sql.NullInt64
	err := s.queryRow(ctx, `SELECT id, hash, created_at, expires_at, used_at, used_by FROM node_tokens WHERE id = ?`, id).
		Scan(&t.ID, &t.Hash, &created, &expires, &used, &t.UsedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("join token %s: %w", id, errdefs.ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("join token %s: %w", id, err)
	}
	t.CreatedAt, t.ExpiresAt = store.FromNanos(created), store.FromNanos(expires)
	if used.Valid {
		u := store.FromNanos(used)
		t.UsedAt = &u
	}
	return t, nil
}

// JoinNode spends the token and adds the node, in one transaction.
func (s *Store) JoinNode(ctx context.Context, n nodes.Node, tokenID string, now time.Time) error {
	return s.writeTx(ctx, "join node "+n.Name, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE node_tokens SET used_at = ?, used_by = ?
			WHERE id = ? AND used_at IS NULL AND expires_at > ?`, store.ToNanos(now), n.Name, tokenID, store.ToNanos(now))
		if err != nil {
			return fmt.Errorf("join node %s: %w", n.Name, err)
		}
		if k, err := res.RowsAffected(); err != nil || k != 1 {
			return fmt.Errorf("join node %s: token %w", n.Name, errdefs.ErrNotFound)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO nodes (name, addr, cert_serial, cert_expires_at, joined_at) VALUES (?, ?, ?, ?, ?)`,
			n.Name, n.Addr, n.CertSerial, store.ToNanos(n.CertExpiresAt), store.ToNanos(n.JoinedAt))
		if err = mapErr(err); errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("%w: node %s has joined already", errdefs.ErrConflict, n.Name)
		}
		if err != nil {
			return fmt.Errorf("join node %s: %w", n.Name, err)
		}
		return nil
	})
}

// ListNodes returns every node by name.
func (s *Store) ListNodes(ctx context.Context) ([]nodes.Node, error) {
	rows, err := s.query(ctx, `SELECT `+store.NodeCols+` FROM nodes ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	out, err := scanAll(rows, store.ScanNode)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return out, nil
}

// GetNode returns the node with the name.
func (s *Store) GetNode(ctx context.Context, name string) (nodes.Node, error) {
	n, err := store.ScanNode(s.queryRow(ctx, `SELECT `+store.NodeCols+` FROM nodes WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return n, fmt.Errorf("node %s: %w", name, errdefs.ErrNotFound)
	}
	if err != nil {
		return n, fmt.Errorf("node %s: %w", name, err)
	}
	return n, nil
}

// UpdateNodeStatus records a heartbeat.
func (s *Store) UpdateNodeStatus(ctx context.Context, name string, st nodes.Status, at time.Time) error {
	capacity, _ := json.Marshal(st.Capacity)
	use, _ := json.Marshal(st.Use)
	n, err := s.exec(ctx, `UPDATE nodes SET version = ?, capacity = ?, use = ?, last_heartbeat = ? WHERE name = ?`,
		st.Version, string(capacity), string(use), store.ToNanos(at), name)
	return nodeChanged(name, n, err)
}

// SetNodeDrained marks the node drained or not.
func (s *Store) SetNodeDrained(ctx context.Context, name string, drained bool) error {
	n, err := s.exec(ctx, `UPDATE nodes SET drained = ? WHERE name = ?`, drained, name)
	return nodeChanged(name, n, err)
}

// SetNodeCert records the node's renewed certificate.
func (s *Store) SetNodeCert(ctx context.Context, name, serial string, expiresAt time.Time) error {
	n, err := s.exec(ctx, `UPDATE nodes SET cert_serial = ?, cert_expires_at = ? WHERE name = ?`, serial, store.ToNanos(expiresAt), name)
	return nodeChanged(name, n, err)
}

// DeleteNode removes the node.
func (s *Store) DeleteNode(ctx context.Context, name string) error {
	n, err := s.exec(ctx, `DELETE FROM nodes WHERE name = ?`, name)
	return nodeChanged(name, n, err)
}

func nodeChanged(name string, n int64, err error) error {
	if err != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	if n == 0 {
		return fmt.Errorf("node %s: %w", name, errdefs.ErrNotFound)
	}
	return nil
}
